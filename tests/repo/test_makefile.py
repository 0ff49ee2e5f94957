"""`make demo` installs only the runtime; `make test` (and CI's `make install`) adds the test
extras and the CPU torch. Checked with `make -n` (prints the recipes, runs nothing)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from ..conftest import ROOT

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def dry_run(target: str, venv: Path) -> str:
    out = subprocess.run(
        ["make", "-n", "-C", str(ROOT), target, f"VENV={venv}"],
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout


def test_demo_installs_only_the_runtime_and_says_so(tmp_path: Path) -> None:
    out = dry_run("demo", tmp_path / "venv")
    installs = [line for line in out.splitlines() if "pip install" in line]
    assert any(line.endswith("pip install -q -e .") for line in installs)
    assert not any("[test]" in line or "torch" in line for line in installs)
    assert "==> installing accelstack and its runtime dependencies" in out
    assert "==> accelstack plan stacks/llama3-70b-trn2.yaml" in out
    assert "-m accelstack.cli plan stacks/llama3-70b-trn2.yaml" in out


@pytest.mark.parametrize("target", ["test", "install"])
def test_test_and_ci_install_add_the_test_extras_and_cpu_torch(target: str, tmp_path: Path) -> None:
    out = dry_run(target, tmp_path / "venv")
    assert "pip install -q -e ." in out
    assert "pip install -q -e '.[test]'" in out and "pip install -q torch==2.13.0" in out
    assert "==> installing the test extras" in out


def test_ci_entry_point_installs_before_lint_typecheck_test() -> None:
    steps = [
        line.strip()
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line.startswith("make")
    ]
    assert steps == ["make install", "make lint typecheck", "make test"]
