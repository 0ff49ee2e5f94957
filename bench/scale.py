"""Benchmark the offline plan as a pool grows: 16, 256 and 2,048 nodes of p5.48xlarge and
trn2.48xlarge (the presets llama3-70b-p5 / llama3-70b-trn2, budget opened).

Usage: .venv/bin/python bench/scale.py [--runs N]
The plan's resources grow with node groups (450 nodes each), not nodes, so the 2,048-node plan
must take at most TARGET x the 16-node plan; exit 1 if not. The ratio compares the fastest of
N runs (one process): on a shared machine the minimum is the figure least disturbed by other
load; the median is printed beside it.
Figures are recorded in docs/plan.md.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from accelstack.components.program import build  # noqa: E402
from accelstack.plan import run_plan  # noqa: E402
from accelstack.resolve import Stack, resolve  # noqa: E402
from accelstack.spec import parse_spec, read_yaml  # noqa: E402

SIZES = (16, 256, 2048)
PRESETS = ("llama3-70b-p5", "llama3-70b-trn2")
#: The 2,048-node plan may take at most this multiple of the 16-node plan.
TARGET = 1.3


def sized(preset: str, nodes: int) -> Stack:
    data = copy.deepcopy(read_yaml(ROOT / "stacks" / f"{preset}.yaml"))
    data["pools"][0]["nodes"] = nodes
    data["budget"] = {"max_hourly_usd": 1e9, "max_monthly_usd": 1e12, "max_run_usd": 1e12}
    return resolve(parse_spec(data, f"{preset}.yaml"))


def measure(stack: Stack, runs: int) -> tuple[float, float, int, int]:
    """(min seconds, median seconds, resources, node groups) of `runs` plans."""
    times, count, groups = [], 0, 0
    for _ in range(runs):
        t0 = time.perf_counter()
        plan = run_plan(stack, build, guard=False)
        times.append(time.perf_counter() - t0)
        count = len(plan.resources)
        groups = len(plan.of_type("aws:eks/nodeGroup:NodeGroup"))
    return min(times), statistics.median(times), count, groups


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    run_plan(sized(PRESETS[0], SIZES[0]), build, guard=False)  # imports, caches: not measured
    head = f"{'preset':18} {'nodes':>6} {'resources':>9} {'node groups':>11}"
    print(f"{head} {'min s':>7} {'median s':>9}  ratio (min)")
    ok = True
    for preset in PRESETS:
        base = 0.0
        for nodes in SIZES:
            low, median, count, groups = measure(sized(preset, nodes), args.runs)
            base = base or low
            ratio = low / base
            print(
                f"{preset:18} {nodes:6d} {count:9d} {groups:11d} {low:7.3f} {median:9.3f}  "
                f"{ratio:.2f}"
            )
        ok = ok and ratio <= TARGET
    verdict = "met" if ok else "NOT met"
    print(f"target: the {SIZES[-1]}-node plan within {TARGET}x the {SIZES[0]}-node plan: {verdict}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
