"""Benchmark the offline plan: the largest preset and a synthetic 16-pool spec.

Usage: .venv/bin/python bench/plan.py [--runs N]
Prints the median (and min/max) wall time of `run_plan` over N runs, in one process (as
`accelstack check` runs), and the resource counts. Figures are recorded in docs/plan.md.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from accelstack.cli.planning import program  # noqa: E402

build = program()  # the program as the CLI wires it (render's node scripts for standalone pools)
from accelstack.plan import run_plan  # noqa: E402
from accelstack.resolve import Stack, resolve  # noqa: E402
from accelstack.spec import load_spec, parse_spec, read_yaml  # noqa: E402


def synthetic_spec(pools: int = 16) -> dict[str, Any]:
    """`pools` pools alternating trn2.48xlarge and p5.48xlarge in us-east-2, on the mixed
    preset's cluster, workload and budget (so it passes the same validation a preset does)."""
    types = ["trn2.48xlarge", "p5.48xlarge"]
    data: dict[str, Any] = copy.deepcopy(read_yaml(ROOT / "stacks" / "mixed-trn2-p5.yaml"))
    data["name"] = "bench-many-pools"
    data["pools"] = [
        {"name": f"pool{i:02d}", "instance_type": types[i % 2], "nodes": 1 + i % 3}
        for i in range(pools)
    ]
    data["workload"]["pool"] = "pool00"
    data["storage"] = {"fsx_lustre_gib": 2400}
    data["budget"] = {"unlimited": True, "reason": "benchmark of the offline plan"}
    return data


def largest_preset() -> Path:
    sizes = {p: len(load_spec(p).pools) for p in sorted((ROOT / "stacks").glob("*.yaml"))}
    counts = {p: len(run_plan(resolve(load_spec(p)), build).resources) for p in sizes}
    return max(counts, key=lambda p: (counts[p], p.name))


def measure(stack: Stack, runs: int) -> tuple[list[float], int]:
    times, count = [], 0
    for _ in range(runs):
        t0 = time.perf_counter()
        plan = run_plan(stack, build, guard=False)
        times.append(time.perf_counter() - t0)
        count = len(plan.resources)
    return times, count


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    t0 = time.perf_counter()
    run_plan(resolve(load_spec(ROOT / "stacks" / "trn1-finetune.yaml")), build, guard=False)
    print(
        f"first plan in a fresh process (imports pulumi, pulumi_aws): "
        f"{time.perf_counter() - t0:.2f} s"
    )
    largest = largest_preset()
    cases = {
        f"largest preset ({largest.stem})": resolve(load_spec(largest)),
        "synthetic 16 pools": resolve(parse_spec(synthetic_spec(16), "<bench>")),
    }
    print(f"{'case':40} {'resources':>9} {'median s':>9} {'min s':>7} {'max s':>7}  runs")
    for label, stack in cases.items():
        times, count = measure(stack, args.runs)
        print(
            f"{label:40} {count:9d} {statistics.median(times):9.3f} {min(times):7.3f} "
            f"{max(times):7.3f}  {args.runs}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
