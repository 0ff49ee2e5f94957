"""Benchmark the offline plan as a pool grows: 16, 256 and 2,048 nodes of p5.48xlarge and
trn2.48xlarge (the presets llama3-70b-p5 / llama3-70b-trn2, budget opened).

Usage: .venv/bin/python bench/scale.py [--runs N] [--placement-groups one|per-launch]
The plan's resources grow with node groups (450 nodes each), not nodes, so the 2,048-node plan
must take at most TARGET x the 16-node plan; exit 1 if not. The ratio compares the least CPU
time of N interleaved runs (one process; `time.process_time`, all threads): on a shared machine
wall time swings with other processes' load, CPU time much less; the median wall time is
printed beside it.
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

from accelstack.cli.planning import program  # noqa: E402

build = program()  # the program as the CLI wires it (render's node scripts for standalone pools)
from accelstack.plan import run_plan  # noqa: E402
from accelstack.resolve import Stack, resolve  # noqa: E402
from accelstack.spec import parse_spec, read_yaml  # noqa: E402

SIZES = (16, 256, 2048)
PRESETS = ("llama3-70b-p5", "llama3-70b-trn2")
#: The 2,048-node plan may take at most this multiple of the 16-node plan.
TARGET = 1.3


def sized(preset: str, nodes: int, placement: str = "one") -> Stack:
    data = copy.deepcopy(read_yaml(ROOT / "stacks" / f"{preset}.yaml"))
    data["pools"][0]["nodes"] = nodes
    data["pools"][0]["placement_groups"] = placement
    data["budget"] = {"max_hourly_usd": 1e9, "max_monthly_usd": 1e12, "max_run_usd": 1e12}
    return resolve(parse_spec(data, f"{preset}.yaml"))


def measure(stacks: dict[int, Stack], runs: int) -> dict[int, tuple[float, float, int, int]]:
    """size -> (min CPU seconds, median wall seconds, resources, node groups) over `runs`
    rounds; each round plans every size once, interleaved, so other load falls on all alike."""
    cpu: dict[int, list[float]] = {n: [] for n in stacks}
    wall: dict[int, list[float]] = {n: [] for n in stacks}
    shape: dict[int, tuple[int, int]] = {}
    for _ in range(runs):
        for nodes, stack in stacks.items():
            c0, t0 = time.process_time(), time.perf_counter()
            plan = run_plan(stack, build, guard=False)
            cpu[nodes].append(time.process_time() - c0)
            wall[nodes].append(time.perf_counter() - t0)
            groups = len(plan.of_type("aws:eks/nodeGroup:NodeGroup"))
            shape[nodes] = (len(plan.resources), groups)
    return {n: (min(cpu[n]), statistics.median(wall[n]), *shape[n]) for n in stacks}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=25)
    # per-launch: a launch template and placement group per two node groups (docs/scale.md)
    ap.add_argument("--placement-groups", choices=("one", "per-launch"), default="one")
    args = ap.parse_args()
    run_plan(sized(PRESETS[0], SIZES[0]), build, guard=False)  # imports, caches: not measured
    head = f"{'preset':18} {'nodes':>6} {'resources':>9} {'node groups':>11}"
    print(f"{head} {'min CPU s':>9} {'median wall s':>13}  ratio (CPU)")
    ok = True
    for preset in PRESETS:
        stacks = {n: sized(preset, n, args.placement_groups) for n in SIZES}
        figures = measure(stacks, args.runs)
        base = figures[SIZES[0]][0]
        for nodes, (low, median, count, groups) in figures.items():
            print(
                f"{preset:18} {nodes:6d} {count:9d} {groups:11d} {low:9.3f} {median:13.3f}  "
                f"{low / base:.2f}"
            )
        ok = ok and figures[SIZES[-1]][0] / base <= TARGET
    verdict = "met" if ok else "NOT met"
    print(f"target: the {SIZES[-1]}-node plan within {TARGET}x the {SIZES[0]}-node plan: {verdict}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
