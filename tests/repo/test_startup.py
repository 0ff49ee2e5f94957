"""The command line starts fast: `--help` imports no catalog, spec models or YAML parser; the
catalog's YAML is parsed by libyaml; AWS limits are read from botocore's model files without
a session. Timings themselves: bench/startup.py (`make bench`)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from accelstack.catalog import CATALOG_DIR, limits, yamlread

from ..conftest import ROOT

HEAVY = ("accelstack.catalog", "accelstack.spec", "accelstack.resolve", "botocore", "pulumi")


def _modules_after(argv: list[str]) -> set[str]:
    code = (
        "import sys, json\n"
        "from accelstack.cli import main\n"
        f"rc = main({argv!r})\n"
        "print(json.dumps([rc, sorted(sys.modules)]))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    rc, modules = json.loads(out.stdout.splitlines()[-1])
    assert rc == 0
    return set(modules)


def test_help_loads_no_catalog_spec_or_aws_sdk() -> None:
    """`accelstack --help` and a command's `--help` list commands and options only (typer
    itself imports pydantic for some option types of a command's help)."""
    for argv in (["--help"], ["new", "--help"], ["plan", "--help"]):
        modules = _modules_after(argv)
        loaded = sorted(m for m in modules if m.split(".")[0] in HEAVY or m.startswith(HEAVY))
        assert loaded == [], argv
    assert "pydantic" not in _modules_after(["--help"])


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_validate_of_a_priced_preset_imports_no_pricing() -> None:
    """`validate` checks that a budget is set, never prices the stack: the cost guard and its
    pricing modules (and the plan inventory they read) load only to refuse a spec without one."""
    modules = _modules_after(["validate", str(ROOT / "stacks" / "llama3-70b-trn2.yaml")])
    assert "accelstack.resolve" in modules  # it did validate
    pricing = ("accelstack.cost.guard", "accelstack.cost.pricing", "accelstack.inventory")
    assert sorted(m for m in pricing if m in modules) == []


@pytest.mark.slow  # parses every catalog file with the pure-Python parser too
def test_the_catalog_parser_builds_what_pyyaml_builds() -> None:
    """libyaml's loader (when PyYAML has it) gives the same documents on every catalog file."""
    if yaml.__with_libyaml__:
        assert yamlread.SafeLoader is yaml.CSafeLoader
    for path in sorted(CATALOG_DIR.glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        assert yamlread.safe_load(text) == yaml.safe_load(text), path.name


@pytest.mark.slow  # creates botocore sessions
@pytest.mark.parametrize(
    ("service", "shape"), [("iam", "roleNameType"), ("iam", "tagListType"), ("eks", "TagMap")]
)
def test_limits_read_the_model_botocore_loads(service: str, shape: str) -> None:
    """The constraints equal what a botocore session's model says (newest API version)."""
    import botocore.session

    model = botocore.session.get_session().get_service_model(service)
    expected = {
        k: v for k, v in model.shape_for(shape).metadata.items() if k in ("min", "max", "pattern")
    }
    assert limits._shape(service, shape) == expected


def test_bench_startup_reports_every_target() -> None:
    spec = importlib.util.spec_from_file_location("bench_startup", ROOT / "bench" / "startup.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    f = {"wall_s": 1.0, "cpu_s": 0.5}
    figures = {n: dict(f) for n in ("python", "help", "validate", "sdk floor")}
    figures["plan"] = {"wall_s": 1.2, "cpu_s": 0.75}
    text = "\n".join(bench.report(figures, 3))
    assert "help            1.000   0.500  <= 0.1 s wall: MISSED" in text
    assert "validate        1.000   0.500  <= 0.5 s wall: MISSED" in text
    assert "plan / sdk floor: 1.20x wall, 1.50x cpu (target <= 1.3x: MISSED)" in text
    figures["help"] = {"wall_s": 0.09, "cpu_s": 0.08}
    figures["plan"] = {"wall_s": 1.2, "cpu_s": 0.65}
    text = "\n".join(bench.report(figures, 3))
    assert "<= 0.1 s wall: met" in text and "(target <= 1.3x: met)" in text
    short = bench.report({n: dict(f) for n in ("python", "help")}, 3)
    assert "help" in short[-1] and not any("sdk floor" in line for line in short)
    assert set(bench.cases("x", "y", {"help"})) == {"python", "help"}
    assert Path(bench.__file__).parent == ROOT / "bench"


def test_bench_plans_the_largest_preset() -> None:
    """bench/startup.py's plan case is the preset with the most planned resources."""
    spec = importlib.util.spec_from_file_location("bench_startup", ROOT / "bench" / "startup.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    counts = {
        p.stem: len(json.loads(p.read_text(encoding="utf-8"))["resources"])
        for p in (ROOT / "tests" / "golden" / "plan").glob("*.json")
    }
    assert max(counts, key=lambda s: (counts[s], s)) == bench.LARGEST
