"""Fabric acceptance check, node side: read a collective benchmark's output, take the bus
bandwidth of its largest message size and fail with one line when it is below the threshold.

Standard library only: `accelstack render` ships this file in the fabric test's ConfigMap as
`accelstack_fabric.py`, and the launcher pipes the benchmark's output into it:

    all_reduce_perf ... | python3 accelstack_fabric.py --tool nccl-tests --min-busbw-gbs 450

Output formats (the tools' documented ones):

* nccl-tests (NVIDIA/nccl-tests src/util.cu writeResultHeader/writeResultFooter; bandwidths in
  GB/s = 1e9 bytes/s, doc/PERFORMANCE.md): a header of `#` lines, then one row per size:
  `size count type redop root time algbw busbw #wrong time algbw busbw #wrong` (out-of-place,
  then in-place), footer `# Avg bus bandwidth    : <value>`.
* nccom-test (aws-neuron/aws-neuron-sdk@81ce03a tools/neuron-sys-tools/nccom-test.rst, "Output
  description"):
  header `size(B) count(elems) type time(us) algbw(GB/s) busbw(GB/s) [algorithm]`, one row per
  size, footer `Avg bus bandwidth: <value>GB/s`; its GB/s are gibibytes per second (2**30).

Exit codes: 0 passed, 1 below the threshold, 2 the output has no result rows (the benchmark
failed before measuring anything).
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass

GIB = 2**30
GB = 10**9
TOOLS = ("nccl-tests", "nccom-test")

_NUM = r"[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"


@dataclass(frozen=True)
class Row:
    size_bytes: int
    busbw_gbs: float  # 1e9 bytes per second


class NoResults(ValueError):
    """The output holds no result row."""


def _nccl_row(line: str) -> Row | None:
    """One nccl-tests result row: size, count, type, redop, root, then out-of-place time,
    algbw, busbw (GB/s), #wrong, ...; `#` lines and anything else are not rows."""
    if line.lstrip().startswith("#"):
        return None
    parts = line.split()
    if len(parts) < 9 or not parts[0].isdigit() or not parts[1].isdigit():
        return None
    try:
        return Row(int(parts[0]), float(parts[7]))
    except ValueError:
        return None


def _nccom_row(line: str) -> Row | None:
    """One nccom-test result row: size(B) count(elems) type time(us) algbw busbw [algorithm],
    bandwidths in GiB/s, converted to GB/s."""
    parts = line.split()
    if len(parts) < 6 or not parts[0].isdigit() or not parts[1].isdigit():
        return None
    if not (re.fullmatch(_NUM, parts[4]) and re.fullmatch(_NUM, parts[5])):
        return None
    return Row(int(parts[0]), float(parts[5]) * GIB / GB)


def parse(text: str, tool: str) -> list[Row]:
    """Every result row of the tool's output, in order."""
    if tool not in TOOLS:
        raise ValueError(f"tool {tool!r} is not one of {', '.join(TOOLS)}")
    reader = _nccl_row if tool == "nccl-tests" else _nccom_row
    return [r for r in (reader(line) for line in text.splitlines()) if r is not None]


def largest_busbw(text: str, tool: str) -> Row:
    """The row of the largest message size (bandwidth-bound; small sizes measure latency)."""
    rows = parse(text, tool)
    if not rows:
        raise NoResults(f"no {tool} result rows in the output")
    return max(rows, key=lambda r: (r.size_bytes, r.busbw_gbs))


def verdict(text: str, tool: str, min_busbw_gbs: float) -> tuple[int, str]:
    """(exit code, one line) for the output against the threshold."""
    try:
        row = largest_busbw(text, tool)
    except NoResults as exc:
        return 2, f"accelstack: fabric test FAILED: {exc} (the benchmark did not run; see above)"
    what = f"{tool} all-reduce bus bandwidth {row.busbw_gbs:.1f} GB/s at {row.size_bytes} bytes"
    if row.busbw_gbs < min_busbw_gbs:
        return 1, (
            f"accelstack: fabric test FAILED: {what}, below the threshold {min_busbw_gbs:.1f} "
            "GB/s: check EFA (fi_info -p efa), the placement group and the security group "
            "before starting the run"
        )
    return 0, f"accelstack: fabric test passed: {what} (threshold {min_busbw_gbs:.1f} GB/s)"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tool", choices=TOOLS, required=True)
    ap.add_argument("--min-busbw-gbs", type=float, required=True, help="GB/s (1e9 bytes/s)")
    ap.add_argument("file", nargs="?", help="benchmark output (default: standard input)")
    args = ap.parse_args(argv)
    if args.file:
        with open(args.file, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    else:
        text = sys.stdin.read()
    code, line = verdict(text, args.tool, args.min_busbw_gbs)
    print(line, file=sys.stderr if code else sys.stdout)
    return code


if __name__ == "__main__":
    sys.exit(main())
