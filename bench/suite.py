"""The test loop: `make test-fast` and `make test`, timed as a developer and CI run them.

Usage: make bench-suite, or .venv/bin/python bench/suite.py [--targets test-fast,test] [--runs N]
[--jobs 2,3]

Each target runs through `make` (so with the Makefile's settings: workers, bytecode written)
after one warm-up run of `make test-fast` that leaves the virtualenv built and the bytecode
written, as on a developer's machine between edits; a fresh clone's first run (CI) compiles
once more. Figures: wall time and CPU time (user + system of every process the run starts),
with the machine's load average before each run, since a loaded machine moves the wall time,
and how busy the CPUs were (CPU / (wall x CPUs)). `--jobs` runs each target with those worker
counts (the Makefile's JOBS) instead of its default, to compare them on one machine.

Targets (on CI's 2-core machine): `make test-fast` under 30 s, `make test` under
5 minutes.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Wall-time targets, seconds
TARGETS = {"test-fast": 30.0, "test": 300.0}


def run_once(target: str, jobs: str | None = None) -> dict[str, float]:
    """One `make <target>` (with JOBS=`jobs` when given): wall and CPU seconds, and the load
    average before it."""
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    argv = ["make", "-s", target, *([f"JOBS={jobs}"] if jobs else [])]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-4000:] + done.stderr[-4000:])
        raise SystemExit(f"make {target} failed (exit {done.returncode})")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "load": load}


def cpus() -> int:
    """The CPUs this process may run on, as pytest-xdist's `auto` and the Makefile count them."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity else os.cpu_count() or 1


def report(target: str, runs: list[dict[str, float]], jobs: str | None = None) -> str:
    best = min(runs, key=lambda r: r["wall_s"])
    met = "met" if best["wall_s"] < TARGETS[target] else "MISSED"
    busy = best["cpu_s"] / (best["wall_s"] * cpus())
    return (
        f"make {target:9} {'JOBS=' + jobs if jobs else 'default':8} wall {best['wall_s']:6.1f} s"
        f"  cpu {best['cpu_s']:6.1f} s  busy {busy:4.0%}  load {best['load']:.1f}"
        f"  (target < {TARGETS[target]:.0f} s: {met})"
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--targets", default="test-fast,test")
    ap.add_argument("--runs", type=int, default=1, help="runs of each target (the best is shown)")
    ap.add_argument("--jobs", default="", help="worker counts to compare, e.g. 2,3")
    args = ap.parse_args()
    targets = [t for t in args.targets.split(",") if t]
    unknown = sorted(set(targets) - set(TARGETS))
    if unknown:
        raise SystemExit(f"unknown target(s) {unknown}; allowed: {sorted(TARGETS)}")
    run_once("test-fast")  # warm-up: virtualenv built, bytecode written
    counts: list[str | None] = [j for j in args.jobs.split(",") if j] or [None]
    for target in targets:
        for jobs in counts:
            runs = [run_once(target, jobs) for _ in range(args.runs)]
            print(report(target, runs, jobs), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
