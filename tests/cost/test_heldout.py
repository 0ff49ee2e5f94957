"""The held-out set (tests/data/heldout.yaml): published rows the fit never reads, each
predicted by the estimate at its own shape, layout and scale and held inside the range the
estimate prints. The test prints the coverage; one row outside fails it.

How the rows were chosen is in the file's header; tools/fit_throughput.py and
accelstack.cost.mfu read records.yaml only (the catalog does not load this file)."""

from __future__ import annotations

import pytest

from accelstack.catalog import load_catalog
from accelstack.catalog.records import TrainingRecord, load_records
from accelstack.cost.mfu import published_tokens, record_estimate

from ..conftest import TESTS_DIR

CAT = load_catalog()
HELDOUT = TESTS_DIR / "data" / "heldout.yaml"
HELD = load_records(HELDOUT, CAT.record_shapes)


def _seen_by_the_fit() -> set[str]:
    tp = CAT.throughput
    ids = {r for c in tp.curves for r in c.records}
    ids |= {r for s in tp.step if s.experts for r in s.experts.records}
    pairs = (*tp.scaling.node_pairs, *tp.scaling.batch_pairs, *tp.calibration.release_pairs)
    ids |= {r for pair in (*pairs, *tp.calibration.fp8_speedup_pairs) for r in pair}
    return ids | set(tp.goodput.other_loss_records) | {r.id for r in CAT.records}


def test_the_fit_never_sees_a_held_out_row() -> None:
    assert len(HELD) >= 30
    assert not {r.id for r in HELD} & _seen_by_the_fit()
    # the catalog (what every fit reads) does not load the file
    assert not {r.id for r in HELD} & {r.id for r in CAT.records}


def _ratios(rec: TrainingRecord) -> tuple[float, float, float]:
    est = record_estimate(CAT, rec)
    lo, hi = est.steady_state_tokens_range
    pub = published_tokens(CAT, rec)
    return lo / pub, est.steady_state_tokens_per_second_per_chip / pub, hi / pub


@pytest.mark.slow
def test_every_held_out_row_lies_inside_the_printed_range(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rows = {r.id: _ratios(r) for r in HELD}
    inside = {rid for rid, (lo, _, hi) in rows.items() if lo <= 1 + 1e-9 and hi >= 1 - 1e-9}
    with capsys.disabled():
        print(f"\nheld out: {len(inside)} of {len(rows)} inside the printed range")
        print("  estimate / published (range / published), row")
        for rid, (lo, mid, hi) in sorted(rows.items(), key=lambda kv: kv[1][1]):
            mark = "  " if rid in inside else "!!"
            print(f"  {mark} {mid:5.2f} ({lo:4.2f}-{hi:4.2f})  {rid}")
    assert inside == set(rows), sorted(set(rows) - inside)


@pytest.mark.slow
def test_held_out_moe_rows_are_modelled_and_inside() -> None:
    """The mixture-of-experts rows held out (DeepSeek-V3, Grok-1, Llama 4, Qwen3) are stepped
    with the fitted expert term, not the dense-only step."""
    moe = [r for r in HELD if r.experts]
    assert len(moe) >= 4
    for rec in moe:
        est = record_estimate(CAT, rec)
        assert est.mfu_basis == "fitted" and "expert term fitted" in est.mfu_source
        lo, _, hi = _ratios(rec)
        assert lo <= 1 <= hi, rec.id
