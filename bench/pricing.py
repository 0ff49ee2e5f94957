"""Benchmark pricing against planning: pricing must be negligible next to the offline plan.

Usage: .venv/bin/python bench/pricing.py [--runs N]
For every preset, in one process: the median over N runs of
  plan      `run_plan(stack, build, guard=False)` (the Pulumi program under mocks),
  spec      `check_budget(stack)`: price from the spec + training estimate + limits
            (what the Pulumi program runs before it registers anything),
  plan-px   `price_plan(stack, plan.resources)` (what `accelstack plan` prints),
  compare   `compare(stack)`: 7 types x up to 5 options, each a full check_budget,
and the ratio (spec + plan-px) / plan. Then deadline sizing with layouts
(accelstack/cost/layout.py) on the 405B preset at 15T tokens and 90 days:
  search    one layout search (`search` at 2,048 p5.48xlarge),
  p5        `compare(stack, ["p5.48xlarge"], deadline_hours=2160)`: the deadline walk,
  all       `compare(stack, deadline_hours=2160)` over every default candidate.
Figures are recorded in docs/cost.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from accelstack.cli.planning import program  # noqa: E402

build = program()  # the program as the CLI wires it (render's node scripts for standalone pools)
from accelstack.cost.compare import compare  # noqa: E402
from accelstack.cost.guard import check_budget  # noqa: E402
from accelstack.cost.pricing import price_plan  # noqa: E402
from accelstack.plan import run_plan  # noqa: E402
from accelstack.resolve import resolve  # noqa: E402
from accelstack.spec import load_spec  # noqa: E402


def median_ms(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=11)
    args = ap.parse_args()
    presets = sorted((ROOT / "stacks").glob("*.yaml"))
    print(f"median of {args.runs} runs each, milliseconds")
    print(f"{'preset':<22} {'plan':>9} {'spec':>8} {'plan-px':>8} {'compare':>8} {'ratio':>8}")
    ratios = []
    for path in presets:
        stack = resolve(load_spec(path))
        plan = run_plan(stack, build, guard=False)  # warm imports once
        t_plan = median_ms(lambda s=stack: run_plan(s, build, guard=False), args.runs)
        t_spec = median_ms(lambda s=stack: check_budget(s), args.runs)
        t_ppx = median_ms(lambda s=stack, p=plan: price_plan(s, p.resources), args.runs)
        t_cmp = median_ms(lambda s=stack: compare(s), args.runs)
        ratio = (t_spec + t_ppx) / t_plan
        ratios.append(ratio)
        print(
            f"{path.stem:<22} {t_plan:>9.1f} {t_spec:>8.2f} {t_ppx:>8.2f} {t_cmp:>8.1f} "
            f"{ratio:>7.2%}"
        )
    print(f"worst ratio (spec + plan pricing) / plan: {max(ratios):.2%}")
    deadline_bench(args.runs)
    return 0


def big_405b_spec() -> dict[str, object]:
    """The 405B preset at 15T tokens, no budget limit (the issue's deadline case)."""
    import yaml

    data = yaml.safe_load((ROOT / "stacks" / "llama3-405b-p5.yaml").read_text())
    data["workload"]["tokens_billion"] = 15_000
    data["budget"] = {"unlimited": True, "reason": "a benchmark: costs are not under test"}
    return dict(data)


def deadline_bench(runs: int) -> None:
    from accelstack.catalog.sizing import memory_fit
    from accelstack.cost.layout import search
    from accelstack.spec import parse_spec

    stack = resolve(parse_spec(big_405b_spec(), "<bench>"))
    wl = stack.workload
    fit = memory_fit(stack.catalog, "p5.48xlarge", wl.model.params_billion, wl.precision)
    t_search = median_ms(lambda: search(stack.catalog, "p5.48xlarge", 2048, wl, fit), runs)
    t_p5 = median_ms(lambda: compare(stack, ["p5.48xlarge"], deadline_hours=2160), runs)
    t_all = median_ms(lambda: compare(stack, deadline_hours=2160), max(1, runs // 4))
    print("405B, 15T tokens, 90-day deadline (milliseconds):")
    print(
        f"  one layout search {t_search:.2f}, p5 deadline compare {t_p5:.0f}, all types {t_all:.0f}"
    )


if __name__ == "__main__":
    sys.exit(main())
