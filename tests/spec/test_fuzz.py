"""The validation invariant, as a property: for any spec text, validation (load, then resolve
with its stack rules) either refuses it with one clean line per problem naming the file, or
accepts it, and then price, compare and render all succeed (a smaller sample also runs the
plan) and no output carries NaN/Infinity.

Specs are every preset, mutated: keys dropped and added, wrong types, extreme numbers, unicode
and control characters, CIDR/ARN/env/tag/image variants, and text-level damage (duplicate keys,
YAML 1.1 scalars, deep nesting, aliases, huge values).

Profiles (env HYPOTHESIS_PROFILE): `ci` (default) keeps this file around a minute on two cores;
`fuzz` (`make fuzz`) runs many more examples.
"""

from __future__ import annotations

import atexit
import copy
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from accelstack.catalog import load_catalog
from accelstack.catalog.yamlread import SafeLoader
from accelstack.cost import compare as compare_mod
from accelstack.cost.guard import check_budget, render_report, verdict_json
from accelstack.errors import AccelstackError, SpecError
from accelstack.plan import run_plan
from accelstack.render import render
from accelstack.resolve import resolve
from accelstack.spec import load_spec

from ..conftest import PRESETS
from ..helpers_plan import build

_COMMON: dict[str, Any] = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}
# `ci`: fixed examples (derandomized) so CI is repeatable; `fuzz`: random and many more.
settings.register_profile("ci", max_examples=1500, derandomize=True, **_COMMON)
settings.register_profile("fuzz", max_examples=50_000, **_COMMON)
PROFILE = settings.get_profile("fuzz" if os.environ.get("HYPOTHESIS_PROFILE") == "fuzz" else "ci")
#: Planning costs ~0.2 s per spec: one planned example per 50 cheap ones.
PLANNED = max(PROFILE.max_examples // 50, 10)

WORKDIR = Path(tempfile.mkdtemp(prefix="accelstack-fuzz-"))
# made at import (each xdist worker collects the module): removed when the process exits
atexit.register(shutil.rmtree, WORKDIR, ignore_errors=True)
PRESET_DATA = [yaml.safe_load(p.read_text()) for p in PRESETS]
CATALOG = load_catalog()
UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")

# ---------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------

NASTY_TEXT = [
    "", " ", "a\x00b", "\x1b[31mred", "two\nlines", "x\ud800", "\u2028", "\x85", "é", "😀",
    "'", '"', "$(id)", "`id`", "ACCELSTACK_SCRIPT_EOF", "\nACCELSTACK_SCRIPT_EOF\n", "-x",
    "\u202eevil", "a" * 300, "system", "on", "1:16", "071474", "error: forged",
]  # fmt: skip
CIDRS = [
    "10.0.0.0/8", "10.0.0.0/7", "203.0.113.0/24", "0.0.0.0/0", "0.0.0.0/1", "128.0.0.0/1",
    "::/0", "::/1", "8000::/1", "2001:db8::/32", "fd00::/16", "10.0.0.1/8", "300.1.1.1/8",
    "10.42.0.0/16", "10.42.0.0/21", "192.168.0.0/16", "8.8.8.0/24", "",
]  # fmt: skip
ARNS = [
    "arn:aws:iam::123456789012:role/Admin", "arn:aws:iam::123456789012:user/a.b@c",
    "arn:aws-cn:iam::123456789012:role/p/q", "*", "", "arn:aws:iam::1:role/x",
    "arn:aws:iam::123456789012:role/*", "arn:aws:sts::123456789012:assumed-role/x/y",
]  # fmt: skip
ENV_NAMES = [
    "MY_FLAG", "NCCL_DEBUG", "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "PET_NNODES",
    "TORCHELASTIC_RUN_ID", "ACCELSTACK_NODE_RANK", "SLURM_NODEID", "BASHPID", "BASH_ENV", "UID",
    "PATH", "nnodes", "HF_TOKEN", "lower_case", "IFS", "OMP_NUM_THREADS",
]  # fmt: skip
IMAGES = [
    "nvcr.io/nvidia/pytorch:25.01-py3", "repo@sha256:" + "a" * 64, "localhost:5000/a/b:1",
    "nvcr.io/nvidia/pytorch", "UPPER/x:1", "a b:1", "x:1;id", "",
]  # fmt: skip
NUMBERS = [
    0, -1, 1, 2, 3, 7, 16, 513, 10**30, 0.0, -0.0, 1e-12, 0.5, 1e308, float("inf"),
    float("-inf"), float("nan"), 1200, 2400, 4800, 125, 250, 1000, 29500, 65536, 0.01,
]  # fmt: skip
OTHERS = [None, True, False, [], {}, [1, 2], {"x": 1}, "text"]

text_values = st.one_of(
    st.sampled_from(NASTY_TEXT),
    st.text(max_size=20),
    st.text(st.characters(codec="utf-8"), max_size=8),
)
scalars = st.one_of(st.sampled_from(NUMBERS), st.sampled_from(OTHERS), text_values)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)

# Field-aware edits: (path, strategy) pairs that keep a spec plausible, so many variants pass
# validation and reach price, compare, render and plan.
TARGETED: list[tuple[tuple[Any, ...], st.SearchStrategy[Any]]] = [
    (("budget",), st.fixed_dictionaries({}, optional={
        "max_hourly_usd": st.sampled_from(NUMBERS), "max_run_usd": st.sampled_from(NUMBERS),
        "max_monthly_usd": st.sampled_from(NUMBERS), "mfu": st.sampled_from(NUMBERS)})),
    (("cluster",), st.fixed_dictionaries({"endpoint_public_access": st.booleans()}, optional={
        "public_access_cidrs": st.lists(st.sampled_from(CIDRS), max_size=3),
        "admin_principal_arns": st.lists(st.sampled_from(ARNS), max_size=3)})),
    (("standalone",), st.fixed_dictionaries({}, optional={
        "ssh_key_name": st.sampled_from(["k", "a" * 300, "x\ny"]),
        "ssh_cidrs": st.lists(st.sampled_from(CIDRS), max_size=3),
        "install_slurm": st.booleans()})),
    (("orchestration",), st.sampled_from(["eks", "ec2", "k8s"])),
    (("network",), st.fixed_dictionaries({}, optional={"vpc_cidr": st.sampled_from(CIDRS)})),
    (("storage",), st.fixed_dictionaries({}, optional={
        "fsx_lustre_gib": st.sampled_from([1200, 2400, 3600, 0, 10**7]),
        "fsx_throughput_per_tib": st.sampled_from([125, 250, 500, 1000, 7])})),
    (("tags",), st.dictionaries(
        st.sampled_from(["team", "accelstack:stack", "managed-by", "Name", "aws:x", "a" * 130]),
        text_values, max_size=3)),
    (("workload", "env"), st.dictionaries(st.sampled_from(ENV_NAMES), text_values, max_size=3)),
    (("workload", "args"), st.lists(text_values, max_size=5)),
    (("workload", "args"), st.integers(0, 80_000).map(lambda n: ["--x", "y" * n])),
    (("workload", "image"), st.sampled_from(IMAGES)),
    (("workload", "entrypoint"), text_values),
    (("workload", "tokens_billion"), st.sampled_from(NUMBERS)),
    (("workload", "model", "params_billion"), st.sampled_from(NUMBERS)),
    (("workload", "rdzv_port"), st.sampled_from(NUMBERS)),
    (("workload", "precompile_steps"), st.sampled_from(NUMBERS)),
    (("pools", 0, "name"), st.sampled_from(["system", "a", "gpu", "x" * 30, "Bad"])),
    (("pools", 0, "nodes"), st.sampled_from(NUMBERS)),
    (("pools", 0, "instance_type"), st.sampled_from([*CATALOG.accelerated_types(), "m6i.xlarge"])),
    (("pools", 0, "purchase"), st.fixed_dictionaries({"option": st.sampled_from(
        ["on-demand", "spot", "savings-plan-1y", "capacity-block", "reservation"])})),
    (("availability_zone",), st.sampled_from(["use2-az1", "us-east-2b", "nowhere"])),
    (("region",), st.sampled_from(["us-east-1", "us-west-2", "eu-west-1", "mars-1"])),
]  # fmt: skip


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


def _set(data: Any, path: tuple[Any, ...], value: Any, delete: bool = False) -> None:
    node = data
    for part in path[:-1]:
        if isinstance(node, dict) and not isinstance(node.get(part), dict | list):
            node[part] = {}
        if isinstance(node, list) and (not isinstance(part, int) or part >= len(node)):
            return
        node = node[part]
    last = path[-1]
    if isinstance(node, dict):
        if delete:
            node.pop(last, None)
        else:
            node[last] = value
    elif isinstance(node, list) and isinstance(last, int) and last < len(node):
        if delete:
            node.pop(last)
        else:
            node[last] = value


@st.composite
def mutated(draw: st.DrawFn) -> dict[str, Any]:
    data = copy.deepcopy(draw(st.sampled_from(PRESET_DATA)))
    # every drawn value is deep-copied: sampled constants ({}, [1, 2]) are shared objects
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["targeted", "targeted", "targeted", "set", "drop", "add"]))
        if kind == "targeted":
            path, strategy = draw(st.sampled_from(TARGETED))
            _set(data, path, copy.deepcopy(draw(strategy)))
        elif kind == "set":
            _set(data, draw(st.sampled_from(_paths(data))), copy.deepcopy(draw(values)))
        elif kind == "drop":
            _set(data, draw(st.sampled_from(_paths(data))), None, delete=True)
        else:
            parent = draw(st.sampled_from([(), *[p for p in _paths(data) if p]]))
            _set(
                data, (*parent, draw(st.text(min_size=1, max_size=8))), copy.deepcopy(draw(values))
            )
    return data


def _dump(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=10**6)


@st.composite
def spec_texts(draw: st.DrawFn) -> str:
    """YAML text of a mutated preset, sometimes damaged at the text level."""
    text = _dump(draw(mutated()))
    damage = draw(st.sampled_from(["none"] * 6 + ["dup", "yaml11", "deep", "alias", "huge"]))
    if damage == "dup":
        key = draw(st.sampled_from(["budget", "name", "workload", "tags"]))
        text += f"{key}: {{}}\n"
    elif damage == "yaml11":
        scalar = draw(st.sampled_from(["1:16", "071474", "yes", "Off", "0o17", "0b101", "~"]))
        text += f"tags: {{team: {scalar}}}\n" if "tags:" not in text else ""
        text = text.replace("nodes: 2", f"nodes: {scalar}", 1)
    elif damage == "deep":
        depth = draw(st.sampled_from([20, 31, 33, 500]))
        text += "x: " + "[" * depth + "]" * depth + "\n"
    elif damage == "alias":
        text = text.replace("workload:", "w0: &w [a, a, a]\nw1: [*w, *w]\nworkload:", 1)
    elif damage == "huge":
        text += "# " + "x" * draw(st.sampled_from([1000, 300_000])) + "\n"
    return text


# ---------------------------------------------------------------------------------------
# The property
# ---------------------------------------------------------------------------------------


def _file_for(text: str) -> Path:
    """The spec file: named after its `name` when that makes a plain file name."""
    match = re.search(r"^name: ([a-z0-9-]{1,60})$", text, re.M)
    path = WORKDIR / f"{match.group(1) if match else 'spec'}.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return path


def _no_non_finite(doc: str) -> None:
    def refuse(token: str) -> None:
        raise AssertionError(f"JSON carries {token}")

    json.loads(doc, parse_constant=refuse)


def _validate(text: str) -> Any:
    """What `accelstack validate` does: load (shape, spec rules), then resolve (the rules on
    the resolved stack). Returns the resolved stack, or None when refused."""
    path = _file_for(text)
    try:
        stack = resolve(load_spec(path), CATALOG)
    except SpecError as exc:
        event("refused")
        assert exc.problems
        for problem in exc.problems:
            line = str(problem)
            assert line.startswith(f"{path}: "), line
            assert not UNSAFE.search(line), repr(line)
        return None
    event("accepted")
    return stack


def _downstream(stack: Any) -> Any:
    """Everything validation promises: price, compare, render."""
    verdict = check_budget(stack)
    _no_non_finite(verdict_json(verdict))
    report = render_report(verdict)
    assert not re.search(r"\b(nan|inf)\b", report, re.I), report
    cmp = compare_mod.compare(stack)
    assert not re.search(r"\b(nan|inf)\b", compare_mod.render(cmp), re.I)
    for artifact in render(stack):
        artifact.content.encode("utf-8")  # no lone surrogates reach a file
        if artifact.path.endswith(".yaml"):
            # libyaml's parser where PyYAML has it (the same YAML 1.1 grammar, a tenth of the
            # time: this check was a third of the test's time with the pure-Python one)
            assert list(yaml.load_all(artifact.content, Loader=SafeLoader))
    return stack


@pytest.mark.slow  # a property test over many generated specs: not a unit test
@settings(PROFILE)
@given(spec_texts())
def test_refused_cleanly_or_priced_compared_and_rendered(text: str) -> None:
    stack = _validate(text)
    if stack is not None:
        _downstream(stack)


@settings(PROFILE, max_examples=PLANNED)
@given(mutated())
def test_accepted_specs_also_plan(data: dict[str, Any]) -> None:
    stack = _validate(_dump(data))
    if stack is None:
        return
    _downstream(stack)
    try:
        plan = run_plan(stack, build, guard=False)
    except AccelstackError as exc:  # a PlanError here is an accepted-then-failing spec
        raise AssertionError(f"accepted spec failed to plan: {exc}") from None
    _no_non_finite(plan.to_json())
