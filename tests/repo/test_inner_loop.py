"""The inner loop stays fast: collecting the suite does no per-test work that is per module,
nothing heavy is imported at collection, and `make test-fast` leaves out what plans."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests import conftest

from ..conftest import ROOT


def test_a_helper_imported_from_another_test_module_carries_the_plan_marker() -> None:
    """test_launch_fixes plans through `preset`, imported from test_deploy_rules."""
    from tests.render import test_launch_fixes

    planning = conftest._planning_helpers(test_launch_fixes)
    assert "test_efa_nodes_allocate_the_huge_pages_their_pods_request" in planning
    assert "_lt_user_data" not in planning  # reads a plan it is given; plans nothing


def test_collection_reads_each_modules_source_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The marker pass parses a module once, however many tests it holds (it parsed the file
    once per test, which made collecting the suite take 20 s)."""
    from tests.plan import test_rules

    calls: list[str] = []
    real = conftest._function_sources

    def counting(module: Any) -> dict[str, str]:
        calls.append(module.__name__)
        return real(module)

    monkeypatch.setattr(conftest, "_function_sources", counting)
    items: Any = [
        SimpleNamespace(
            module=test_rules,
            name=f"test_{i}",
            originalname=f"test_{i}",
            fixturenames=(),
            add_marker=lambda mark: None,
        )
        for i in range(50)
    ]
    conftest.pytest_collection_modifyitems(pytest.Config.__new__(pytest.Config), items)
    assert calls.count("tests.plan.test_rules") == 1


def test_no_test_module_imports_torch_at_collection() -> None:
    """torch takes seconds to import: modules that need it call conftest.require_torch (finds
    it, does not import it); the runs themselves are torchrun subprocesses."""
    top_level = re.compile(
        r"^(?:\w+ = )?pytest\.importorskip\(\s*\"torch\"|^import torch|^from torch"
    )
    tests = ROOT / "tests"
    offenders = [
        p.name
        for p in sorted(tests.rglob("*.py"))
        if "fixtures" not in p.relative_to(tests).parts  # scripts torchrun runs, not collected
        and any(top_level.match(line) for line in p.read_text(encoding="utf-8").splitlines())
    ]
    assert offenders == []


def test_no_test_module_imports_the_upstream_api_models_at_collection() -> None:
    """kubeflow-trainer-api's ~400 generated pydantic models took about a second of every
    test process's collection: helpers_upstream imports them on first use."""
    top_level = re.compile(r"^(?:from|import) kubeflow_trainer_api\b")
    offenders = [
        p.name
        for p in sorted((ROOT / "tests").rglob("*.py"))
        if any(top_level.match(line) for line in p.read_text(encoding="utf-8").splitlines())
    ]
    assert offenders == []


def _pytest_line(target: str, tmp_path: Path, *assign: str) -> str:
    """The pytest command `make -n <target>` prints (it runs nothing), with none of the
    settings of a `make` this suite may run under (`make test JOBS=0` passes JOBS down)."""
    inherited = ("JOBS", "MAKEFLAGS", "MFLAGS", "MAKELEVEL")
    env = {k: v for k, v in os.environ.items() if k not in inherited}
    out = subprocess.run(
        ["make", "-n", "-C", str(ROOT), target, f"VENV={tmp_path / 'venv'}", *assign],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    (line,) = [x for x in out.splitlines() if " -m pytest " in x]
    return line


@pytest.mark.skipif(
    shutil.which("make") is None or not hasattr(os, "sched_getaffinity"),
    reason="needs make and Linux CPU affinity",
)
def test_make_test_runs_a_worker_more_than_the_cpus_and_test_fast_one_per_cpu(
    tmp_path: Path,
) -> None:
    """`make test` spends about a tenth of its wall time in tests that wait (a rendezvous
    dropping a lost node, training steps, subprocesses): one worker more than the CPUs fills
    it. `make test-fast` waits on nothing: one per CPU. JOBS sets both."""
    cpus = len(os.sched_getaffinity(0))
    assert re.search(rf" -n {cpus + 1}(?: |$)", _pytest_line("test", tmp_path))
    fast = _pytest_line("test-fast", tmp_path)
    assert " -n auto " in fast and '-m "not plan and not slow"' in fast
    for target in ("test", "test-fast"):
        assert " -n 0" in _pytest_line(target, tmp_path, "JOBS=0")


def test_lint_runs_the_dead_code_check() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    lint = re.search(r"^lint:.*\n((?:\t.*\n)+)", makefile, flags=re.M)
    assert lint is not None and "$(VENV)/bin/vulture" in lint.group(1)


@pytest.mark.slow
def test_no_dead_code_and_a_new_dead_function_is_found(tmp_path: Path) -> None:
    """vulture with the project's configuration passes on the tree, and reports a function
    nothing calls (the check is not a no-op)."""
    vulture = Path(sys.executable).parent / "vulture"
    clean = subprocess.run([str(vulture)], cwd=ROOT, capture_output=True, text=True)
    assert clean.returncode == 0, clean.stdout
    (tmp_path / "mod.py").write_text(
        "def used() -> int:\n    return 1\n\n\ndef dead() -> int:\n    return used()\n"
    )
    found = subprocess.run(
        [str(vulture), str(tmp_path / "mod.py"), str(ROOT / "tools" / "vulture_whitelist.py")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert "unused function 'dead'" in found.stdout
