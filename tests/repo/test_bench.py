"""The benchmarks' synthetic specs pass today's validation: `make bench` is not in the suite, so
a bench whose spec the rules came to refuse would otherwise go unnoticed."""

from __future__ import annotations

import importlib.util
import subprocess
from types import ModuleType

import pytest

from accelstack.spec import parse_spec

from ..conftest import ROOT


def _bench(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_synthetic_many_pool_spec_validates() -> None:
    spec = parse_spec(_bench("plan").synthetic_spec(16), "<bench>")
    assert len(spec.pools) == 16
    assert {p.instance_type for p in spec.pools} == {"trn2.48xlarge", "p5.48xlarge"}


def test_bench_suite_reports_the_issue_targets() -> None:
    bench = _bench("suite")
    assert bench.TARGETS == {"test-fast": 30.0, "test": 300.0}
    line = bench.report("test-fast", [{"wall_s": 41.0, "cpu_s": 70.0, "load": 1.0},
                                      {"wall_s": 29.0, "cpu_s": 50.0, "load": 0.5}])  # fmt: skip
    assert line.endswith("(target < 30 s: met)") and "wall   29.0 s" in line
    assert bench.report("test", [{"wall_s": 301.0, "cpu_s": 500.0, "load": 1.0}]).endswith(
        "MISSED)"
    )


def test_bench_suite_compares_worker_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    """`--jobs 2,3` runs each target once per worker count (the Makefile's JOBS) and says how
    busy the CPUs were, so two counts can be compared on one machine."""
    bench = _bench("suite")
    ran: list[list[str]] = []

    def fake_run(argv: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        ran.append(argv)
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(bench.subprocess, "run", fake_run)
    monkeypatch.setattr(bench.sys, "argv", ["suite.py", "--targets", "test", "--jobs", "2,3"])
    assert bench.main() == 0
    assert ran == [
        ["make", "-s", "test-fast"],  # the warm-up
        ["make", "-s", "test", "JOBS=2"],
        ["make", "-s", "test", "JOBS=3"],
    ]
    cpus = bench.cpus()
    line = bench.report("test", [{"wall_s": 100.0, "cpu_s": 90.0 * cpus, "load": 0.0}], "3")
    assert "JOBS=3" in line and "busy  90%" in line


def test_the_deadline_bench_spec_validates() -> None:
    spec = parse_spec(_bench("pricing").big_405b_spec(), "<bench>")
    assert spec.workload.tokens_billion == 15_000 and spec.budget.unlimited
