"""Every input class that crashed a command, or passed validation and then
failed in plan/price/render, has a fixed example here. Bad input is one line per problem that
names the file and the YAML path, with user values escaped."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from accelstack.catalog import load_catalog
from accelstack.cli import main
from accelstack.components import standalone
from accelstack.errors import SpecError, one_line, shown
from accelstack.naming import IDENTITY_TAG_KEYS, POOL_LABEL
from accelstack.render import launch_script_name, node_script, render
from accelstack.resolve import resolve
from accelstack.resolve.rules import (
    DOCUMENT_FIXED_BYTES,
    DOCUMENT_JSON_GROWTH,
    quoted_workload_bytes,
)
from accelstack.spec import load_spec, parse_spec
from accelstack.spec.yamlsafe import MAX_DEPTH, MAX_DOCUMENT_BYTES

from .. import factories
from ..conftest import STACKS
from ..helpers_plan import plan_stack

FILE = "stacks/demo.yaml"
BASE: dict[str, Any] = {
    "name": "demo",
    "region": "us-east-2",
    "pools": [{"name": "trn2", "instance_type": "trn2.48xlarge", "nodes": 2}],
    "workload": {
        "model": {"params_billion": 8},
        "tokens_billion": 10,
        "entrypoint": "train.py",
        "image": "registry.example/torchneuron:2.14.3",  # trn2's native path has no public one
    },
    # what every EKS spec needs: the deployer's CIDRs and an admin
    "cluster": {
        "public_access_cidrs": ["203.0.113.0/24"],
        "admin_principal_arns": ["arn:aws:iam::123456789012:role/deployer"],
    },
}


def refused(mutate: Any, base: dict[str, Any] = BASE) -> list[str]:
    data = copy.deepcopy(base)
    mutate(data)
    with pytest.raises(SpecError) as info:
        resolve(parse_spec(data, FILE))  # the spec rules, then the rules on the resolved stack
    lines = [str(p) for p in info.value.problems]
    for line in lines:
        assert line.startswith(FILE + ": ") and "\n" not in line and "\x1b" not in line
    return lines


def refused_text(tmp_path: Path, text: str, name: str = "demo") -> str:
    f = tmp_path / f"{name}.yaml"
    f.write_text(text, encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_spec(f)
    assert len(info.value.problems) == 1, info.value.problems
    line = str(info.value.problems[0])
    assert line.startswith(f"{f}: ") and "\n" not in line
    return line


def base_yaml(**extra: Any) -> str:
    return yaml.safe_dump({**copy.deepcopy(BASE), **extra}, sort_keys=False)


def standalone_base() -> dict[str, Any]:
    return factories.preset("trn1-standalone")


# ---------------------------------------------------------------------------------------
# YAML: nesting, size, duplicate keys, YAML 1.1 scalars, aliases
# ---------------------------------------------------------------------------------------

DEEP = "name: demo\nx: " + "[" * 500 + "]" * 500 + "\n"


def test_deep_nesting_is_one_line_not_a_recursion_error(tmp_path: Path):
    line = refused_text(tmp_path, DEEP)
    assert f"nesting is deeper than the {MAX_DEPTH} levels" in line
    block = "name: demo\n" + "".join("  " * i + f"k{i}:\n" for i in range(500)) + "  " * 500 + "v\n"
    assert "nesting is deeper" in refused_text(tmp_path, block)


@pytest.mark.parametrize(
    "argv",
    [
        ["validate"],
        ["plan"],
        ["price"],
        ["compare"],
        ["render", "-o", "OUT"],
        ["preflight"],
    ],
)
def test_every_command_that_reads_a_spec_refuses_deep_nesting_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
):
    f = tmp_path / "demo.yaml"
    f.write_text(DEEP)
    args = [a.replace("OUT", str(tmp_path / "out")) for a in argv]
    code = main([*args[:1], str(f), *args[1:]])
    out, err = capsys.readouterr()
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "nesting is deeper" in lines[0], err
    assert "Traceback" not in out + err
    assert not (tmp_path / "out").exists()


def test_check_dir_reports_the_deep_spec_and_still_checks_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    (tmp_path / "deep.yaml").write_text(DEEP.replace("name: demo", "name: deep"))
    (tmp_path / "trn1-finetune.yaml").write_text((STACKS / "trn1-finetune.yaml").read_text())
    code = main(["check", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 2
    assert "deep.yaml" in err and "nesting is deeper" in err and "Traceback" not in err
    assert "trn1-finetune" in out


def test_document_size_limit(tmp_path: Path):
    text = base_yaml() + "# " + "x" * MAX_DOCUMENT_BYTES + "\n"
    assert f"a spec may be at most {MAX_DOCUMENT_BYTES:,} bytes" in refused_text(tmp_path, text)


def test_duplicate_key_names_path_and_both_lines(tmp_path: Path):
    text = base_yaml() + "budget: {max_run_usd: 1}\nbudget: {max_run_usd: 1000000000}\n"
    line = refused_text(tmp_path, text)
    n = text.count("\n")
    assert f"budget: duplicate key 'budget' (lines {n - 1} and {n})" in line
    nested = base_yaml().replace("tokens_billion: 10", "tokens_billion: 10\n  tokens_billion: 1")
    assert "workload.tokens_billion: duplicate key 'tokens_billion'" in refused_text(
        tmp_path, nested
    )


@pytest.mark.parametrize(
    ("scalar", "words"),
    [
        ("1:16", "base-60 number"),
        ("071474", "octal number"),
        ("yes", "boolean"),
        ("Off", "boolean"),
    ],
)
def test_yaml11_surprises_are_refused(tmp_path: Path, scalar: str, words: str):
    text = base_yaml(tags={"team": "PLACEHOLDER"}).replace("PLACEHOLDER", scalar)
    line = refused_text(tmp_path, text)
    assert f"tags.team: '{scalar}' is a{'n' if words[0] == 'o' else ''} {words}" in line
    assert "quote it" in line


def test_quoted_yaml11_lookalikes_and_true_false_are_fine(tmp_path: Path):
    f = tmp_path / "demo.yaml"
    text = base_yaml(tags={"a": "1:16", "b": "071474", "c": "on"}, preview=False)
    f.write_text(text)
    assert load_spec(f).tags == {"a": "1:16", "b": "071474", "c": "on"}


def test_aliases_and_anchors_are_refused(tmp_path: Path):
    text = base_yaml().replace("entrypoint: train.py", "entrypoint: train.py\n  args: &a [x, y]")
    assert "YAML anchors (&a) are not allowed" in refused_text(tmp_path, text)
    bomb = "a: &a [x, x]\nb: &b [*a, *a]\n"
    assert "not allowed" in refused_text(tmp_path, bomb)
    merge = base_yaml() + "budget: {<<: {max_run_usd: 1}}\n"
    assert "merge keys (<<) are not allowed" in refused_text(tmp_path, merge)


# ---------------------------------------------------------------------------------------
# Numbers
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [float("inf"), float("nan"), -float("inf")])
def test_non_finite_budgets_are_refused(value: float):
    (line,) = refused(lambda d: d.update(budget={"max_run_usd": value}))
    assert "budget.max_run_usd" in line and "finite" in line
    (line,) = refused(lambda d: d["workload"].update(tokens_billion=value))
    assert "workload.tokens_billion" in line


def test_inf_from_yaml_is_refused(tmp_path: Path):
    assert "finite" in refused_text(tmp_path, base_yaml() + "budget: {max_hourly_usd: .inf}\n")


def test_mfu_lower_bound():
    (line,) = refused(lambda d: d.update(budget={"mfu": 1e-9}))
    assert "budget.mfu" in line and "at least 0.01" in line
    parse_spec({**copy.deepcopy(BASE), "budget": {"mfu": 0.01}}, FILE)


# ---------------------------------------------------------------------------------------
# Strings: control characters, surrogates, escaping
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["a\x00b", "\x1b[2J", "two\nlines", "x\ud800", "\u2028", "\x85"])
def test_control_characters_and_surrogates_are_refused_everywhere(bad: str):
    for mutate, path in [
        (lambda d: d["workload"].update(args=["ok", bad]), "workload.args[1]"),
        (lambda d: d["workload"].update(env={"MY_VAR": bad}), "workload.env.MY_VAR"),
        (lambda d: d.update(tags={"team": bad}), "tags.team"),
        (lambda d: d["workload"].update(entrypoint=bad), "workload.entrypoint"),
        (lambda d: d["workload"]["model"].update(name=bad), "workload.model.name"),
    ]:
        lines = refused(mutate)
        assert any(line.startswith(f"{FILE}: {path}: ") for line in lines), lines


def test_heredoc_marker_in_args_is_refused():
    """An argument that would end the user data's heredoc early."""
    base = standalone_base()
    (line,) = refused(
        lambda d: d["workload"].update(args=["x\nACCELSTACK_SCRIPT_EOF\nrm -rf /"]), base
    )
    assert "workload.args[0]" in line and "control character \\x0a" in line


def test_forged_error_lines_are_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    f = tmp_path / "demo.yaml"
    f.write_text(base_yaml(region="us-east-2\nerror: all good\x1b[2J"))
    code = main(["validate", str(f)])
    _, err = capsys.readouterr()
    assert code == 2
    assert err.count("\n") == 1 and "\x1b" not in err
    assert "\\n" in err or "\\x0a" in err


def test_message_helpers_escape():
    assert shown("a\nb\x1b") == "'a\\nb\\x1b'"
    assert shown("x" * 200).endswith("...'")
    assert one_line("a\nb\x1b\u2028\ud800") == "a\\x0ab\\x1b\\u2028\\ud800"


# ---------------------------------------------------------------------------------------
# Rules: network, IAM, env, tags, pools, sizes, storage, images
# ---------------------------------------------------------------------------------------


def test_ipv6_vpc_cidr_is_refused():
    (line,) = refused(lambda d: d.update(network={"vpc_cidr": "fd00::/16"}))
    assert "network.vpc_cidr: 'fd00::/16' is IPv6" in line


def _public(cidrs: list[str]) -> Any:
    return lambda d: d["cluster"].update(endpoint_public_access=True, public_access_cidrs=cidrs)


def test_access_cidrs_union_wider_than_a_slash_8_is_refused():
    (line,) = refused(_public(["0.0.0.0/1", "128.0.0.0/1"]))
    assert "cluster.public_access_cidrs: together these ranges cover" in line
    assert "more than a /8" in line
    parse_spec({**copy.deepcopy(BASE), **_cluster(["10.0.0.0/8"])}, FILE)


def _cluster(cidrs: list[str]) -> dict[str, Any]:
    return {
        "cluster": {**BASE["cluster"], "endpoint_public_access": True, "public_access_cidrs": cidrs}
    }


def test_access_cidrs_family_and_duplicates():
    (line,) = refused(_public(["2001:db8::/32"]))
    assert "public_access_cidrs[0]: '2001:db8::/32' is an IPv6 range" in line
    lines = refused(_public(["::/1", "8000::/1"]))  # the IPv6 "whole internet" pair
    assert len(lines) == 2 and all("IPv6" in x for x in lines)
    (line,) = refused(_public(["203.0.113.0/24", "203.0.113.0/24"]))
    assert "public_access_cidrs[1]: '203.0.113.0/24' is listed twice" in line
    base = standalone_base()
    lines = refused(
        lambda d: d.update(standalone={"ssh_key_name": "k", "ssh_cidrs": ["::/0", "0.0.0.0/1"]}),
        base,
    )
    assert any("standalone.ssh_cidrs[0]" in x and "IPv6" in x for x in lines)


@pytest.mark.parametrize(
    "arn", ["*", "", "not-an-arn", "arn:aws:iam::123456789012:role/*", "arn:aws:iam::*:root"]
)
def test_admin_principal_arns_must_be_iam_roles_or_users(arn: str):
    (line,) = refused(lambda d: d["cluster"].update(admin_principal_arns=[arn]))
    assert "cluster.admin_principal_arns[0]" in line and "is not an IAM role or user ARN" in line


def test_admin_principal_arns_valid_and_duplicate():
    ok = "arn:aws-us-gov:iam::123456789012:role/team/Admin"
    parse_spec(
        {**copy.deepcopy(BASE), "cluster": {**BASE["cluster"], "admin_principal_arns": [ok]}}, FILE
    )
    (line,) = refused(lambda d: d["cluster"].update(admin_principal_arns=[ok, ok]))
    assert "admin_principal_arns[1]" in line and "listed twice" in line


@pytest.mark.parametrize(
    "name",
    ["RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "PET_NNODES", "TORCHELASTIC_RUN_ID",
     "ACCELSTACK_NODE_RANK", "SLURM_NODEID", "BASHPID", "BASH_ENV", "EUID", "UID", "SHELLOPTS"],
)  # fmt: skip
def test_env_may_not_set_rank_rendezvous_or_bash_names(name: str):
    (line,) = refused(lambda d: d["workload"].update(env={name: "0"}))
    assert f"workload.env.{name}: the launch script uses this variable itself" in line


def test_env_names_the_templates_rely_on_are_reserved():
    """Every variable the node script reads from the orchestrator is reserved."""
    text = (STACKS.parent / "templates" / "node-base.sh.j2").read_text()
    import re

    from accelstack.resolve.spec_rules import _env_name_reserved

    read = set(re.findall(r"\$\{([A-Z][A-Z0-9_]*)", text))
    assert read, "the template reads orchestrator variables"
    assert all(_env_name_reserved(n) for n in read), sorted(
        n for n in read if not _env_name_reserved(n)
    )


def test_user_tags_may_not_replace_identity_tags():
    for key in [*IDENTITY_TAG_KEYS, POOL_LABEL]:
        (line,) = refused(lambda d, key=key: d.update(tags={key: "other"}))
        assert f"tags.{key}: '{key}' is a tag the stack sets itself" in line
    (line,) = refused(lambda d: d.update(tags={"team": "a\x1bb"}))
    assert "tags.team" in line


def test_pool_named_system_is_refused():
    lines = refused(lambda d: d["pools"][0].update(name="system"))
    assert any(
        "pools[0].name: 'system' is the name of the stack's own system node" in x for x in lines
    )


def test_fsx_throughput_without_a_price_is_refused():
    """A catalog without the 250 MB/s/TiB row (every tier has one today): fails closed."""
    cat = load_catalog()
    unpriced = cat.model_copy(
        update={
            "service_rates": tuple(
                r for r in cat.service_rates if r.item != "fsx-lustre-persistent2-250"
            )
        }
    )
    data = copy.deepcopy(BASE)
    data["storage"] = {"fsx_lustre_gib": 1200, "fsx_throughput_per_tib": 250}
    data["checkpoint"] = {"write_minutes": 240}  # the write target is not what is tested
    with pytest.raises(SpecError) as info:
        resolve(parse_spec(data, FILE), unpriced)
    (line,) = [str(p) for p in info.value.problems]
    assert "storage.fsx_throughput_per_tib: 250 MB/s per TiB has no price" in line
    assert "priced: 1000, 125, 500" in line


def test_huge_args_are_refused_before_they_reach_a_configmap():
    (line,) = refused(lambda d: d["workload"].update(args=["x" * 70_000]))
    assert "workload: entrypoint, args and env add up to 70,008 bytes" in line


LIMIT = 65536  # catalog defaults.ssm_document_limit_bytes


def test_standalone_launch_document_over_the_ssm_limit_is_refused():
    base = standalone_base()
    (line,) = refused(lambda d: d["workload"].update(args=["y" * 20_000]), base)
    assert "the launch script through an SSM document (65,536 bytes)" in line


def _worst_case_standalone(args: list[str]) -> dict[str, Any]:
    """The longest names the spec allows everywhere the launch document repeats them."""
    return {
        "name": "a" + "b" * 38 + "c",
        "region": "us-east-2",
        "orchestration": "ec2",
        "pools": [{"name": "p" * 24, "instance_type": "trn1.32xlarge", "nodes": 2}],
        "compile_cache": {"prefix": "x" * 199 + "/", "bucket": "b" * 63},
        "storage": {"fsx_lustre_gib": 1200},
        "standalone": {"ssh_key_name": "k" * 200, "install_slurm": True},
        "workload": {
            "model": {"params_billion": 1},
            "tokens_billion": 1,
            "entrypoint": "x",
            "precompile_steps": 1000,
            "args": args,
        },
    }


def _document_size(stack: Any) -> int:
    pool = stack.pools[0]
    name, script = node_script(stack, pool, "b" * 63)
    url = "s3://" + "b" * 63 + "/" + stack.compile_cache_prefix_for(pool.name)
    fsx = ("fs-0123456789abcdef0.fsx.ap-southeast-2.amazonaws.com", "abcdefgh")
    assert name == launch_script_name(pool)
    text = standalone.install_script(stack, pool, name, script, url, fsx)
    return len(standalone.ssm_document(text, LIMIT).encode())


def test_document_fixed_bytes_bound_holds_for_the_worst_case():
    spec = parse_spec(_worst_case_standalone([]), "x.yaml")
    fixed = _document_size(resolve(spec)) - quoted_workload_bytes(spec.workload)
    assert fixed <= DOCUMENT_FIXED_BYTES, fixed


def test_largest_accepted_standalone_args_still_fit_and_plan():
    room = (LIMIT - DOCUMENT_FIXED_BYTES) // DOCUMENT_JSON_GROWTH
    base = _worst_case_standalone([])
    # fill the room exactly: "  'ARG'\n" costs 5 bytes beyond the argument itself
    used = quoted_workload_bytes(parse_spec(base, "x.yaml").workload)
    arg = "a b" * ((room - used - 5) // 3)
    base["workload"]["args"] = [arg.ljust(room - used - 5, "z")]
    spec = parse_spec(base, "x.yaml")
    assert quoted_workload_bytes(spec.workload) == room
    stack = resolve(spec)
    assert _document_size(stack) <= LIMIT
    assert render(stack)
    assert plan_stack(stack, guard=False).resources  # the components' own document check


@pytest.mark.parametrize(
    "image",
    [
        "public.ecr.aws/neuron/pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.33.0-ubuntu24.04",
        "nvcr.io/nvidia/pytorch:25.01-py3",
        "localhost:5000/team/train:v1",
        "repo@sha256:" + "a" * 64,
        "123456789012.dkr.ecr.us-east-2.amazonaws.com/x/y:1@sha256:" + "b" * 64,
    ],
)
def test_valid_image_references(image: str):
    spec = parse_spec(
        {**copy.deepcopy(BASE), "workload": {**BASE["workload"], "image": image}}, FILE
    )
    assert spec.workload.image == image


@pytest.mark.parametrize(
    ("image", "words"),
    [
        ("nvcr.io/nvidia/pytorch", "has no tag or digest"),
        ("Repo/Upper:1", "is not a container image reference"),
        ("a b:1", "is not a container image reference"),
        ("x:1;rm -rf /", "is not a container image reference"),
        ("repo@sha256:abc", "is not a container image reference"),
        ("-x:1", "is not a container image reference"),
        ("a/" * 200 + "b:1", "is not a container image reference"),
    ],
)
def test_invalid_image_references(image: str, words: str):
    (line,) = refused(lambda d: d["workload"].update(image=image))
    assert "workload.image" in line and words in line


@pytest.mark.parametrize("tput", [125, 250, 500, 1000])
def test_fsx_throughput_is_refused_or_priced(tput: int):
    """The rule and the cost guard name the FSx price row the same way."""
    from accelstack.cost.guard import check_budget

    data = {
        **copy.deepcopy(BASE),
        "storage": {"fsx_lustre_gib": 2400, "fsx_throughput_per_tib": tput},
        "checkpoint": {"write_minutes": 240},  # any tier meets it: pricing is what is tested
    }
    try:
        spec = parse_spec(data, FILE)
    except SpecError as exc:
        assert "has no price in the catalog" in str(exc)
        return
    assert check_budget(resolve(spec)).cost.hourly_usd > 0
