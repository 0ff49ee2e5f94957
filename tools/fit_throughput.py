"""Refit the run model in accelstack/catalog/throughput.yaml from records.yaml and print it.

    python tools/fit_throughput.py [--write]

Order matters: the scaling terms come from record pairs alone; then each family's step model
(h100 first: the other families borrow its attention, link and expert terms), every
steady-state record of the family at once; then the goodput's other-loss fraction from the
whole-run records reproduced through the step model; last the ranges: each curve's and the
expert term's residual range from a cross-validation (every record predicted by the real
estimate with the step model fitted without its fold, accelstack.cost.mfu.FOLDS folds), and
the unmodelled-MoE factor.
The held-out rows (tests/data/heldout.yaml) are never read. `--write` rewrites the fitted
numbers in place (each fitted key is replaced on its own line, so comments stay);
tests/catalog/test_records.py fails until the file holds the fit.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence

from accelstack.catalog.load import CATALOG_DIR, _load, load_catalog
from accelstack.cost.mfu import (
    FamilyFit,
    cross_validated,
    fit_family,
    fit_other_loss,
    fit_scaling,
    moe_residual_range,
    residual_range,
    unmodelled_moe,
)

PATH = CATALOG_DIR / "throughput.yaml"
#: Families whose curves are fitted, in fitting order (the first lends its step terms).
FAMILIES = ("h100", "h200", "trainium")


def _sub(text: str, key: str, value: str, after: int = 0) -> tuple[str, int]:
    """Replace the first `key: ...` line at or after `after`; return the text and its end."""
    pat = re.compile(rf"^(\s*{re.escape(key)}: ).*$", re.MULTILINE)
    m = pat.search(text, after)
    if m is None:
        raise SystemExit(f"{PATH}: no '{key}' after offset {after}")
    return text[: m.start()] + m.group(1) + value + text[m.end() :], m.start() + len(value)


def _flow(values: dict[str, float], digits: int = 4) -> str:
    return "{" + ", ".join(f"{k}: {v:.{digits}f}" for k, v in sorted(values.items())) + "}"


def _pair(values: Sequence[float], fmt: str = ".4f") -> str:
    return f"[{values[0]:{fmt}}, {values[1]:{fmt}}]"


def _curve_at(text: str, family: str, precisions: Sequence[str]) -> int:
    return text.index(f"- family: {family}\n    precisions: [{', '.join(precisions)}]")


def _write_family(text: str, fit: FamilyFit) -> str:
    for precisions, c in fit.curves.items():
        at = _curve_at(text, fit.family, precisions)
        text, at = _sub(text, "intercept", f"{c.intercept:.4f}", at)
        text, at = _sub(text, "slope", f"{c.slope:.4f}", at)
        text, at = _sub(text, "params_range", f"[{c.params_range[0]:g}, {c.params_range[1]:g}]", at)
        text, at = _sub(text, "stacks", _flow(c.stacks), at)
        seq = c.sequence_range
        text, at = _sub(text, "sequence_range", f"[{seq[0]}, {seq[1]}]" if seq else "null", at)
        text, at = _sub(text, "records", "[" + ", ".join(c.records) + "]", at)
    if fit.attention_centre is None:
        return text
    at = text.index(f"- family: {fit.family}\n    basis: fitted", text.index("\nstep:\n"))
    text, at = _sub(text, "attention_centre", f"{fit.attention_centre:.4f}", at)
    text, at = _sub(text, "attention_stacks", _flow(fit.attention_stacks), at)
    losses = fit.context_parallel_loss
    centre = sum(losses.values()) / len(losses) if losses else 0.0
    text, at = _sub(text, "context_parallel_loss_centre", f"{centre:.4f}", at)
    text, at = _sub(text, "context_parallel_loss_stacks", _flow(losses), at)
    if fit.tensor_parallel_efficiency is not None:
        text, at = _sub(
            text, "tensor_parallel_efficiency", f"{fit.tensor_parallel_efficiency:.4f}", at
        )
    if fit.half_rate_tokens is not None and fit.all_to_all_efficiency is not None:
        experts = (
            f"{{half_rate_tokens: {fit.half_rate_tokens:.1f}, all_to_all_efficiency: "
            f"{fit.all_to_all_efficiency:.4f}, residual_range: [1, 1], records: ["
            + ", ".join(fit.moe_records)
            + "]}"
        )
        text, at = _sub(text, "experts", experts, at)
    return text


def _reload(text: str) -> None:
    PATH.write_text(text, encoding="utf-8")
    _load.cache_clear()


def _ranges(text: str) -> str:
    """Each fitted curve's residual range, the expert term's, and the unmodelled-MoE factor,
    reproduced by the estimate from the coefficients just written."""
    cat = load_catalog(PATH.parent)
    ratios: dict[str, float] = {}
    for family in FAMILIES:
        ratios.update(cross_validated(cat, family))
    for curve in cat.throughput.curves:
        if curve.basis != "fitted":
            continue
        rng = residual_range(cat, curve, ratios)
        at = _curve_at(text, curve.family, curve.precisions)
        text, _ = _sub(text, "residual_range", _pair(rng) if rng else "null", at)
    for entry in cat.throughput.step:
        if entry.experts is None:
            continue
        at = text.index(f"- family: {entry.family}\n    basis: fitted", text.index("\nstep:\n"))
        lo, hi = moe_residual_range(ratios, entry.experts.records)
        line = re.search(r"^\s*experts: .*$", text[at:], re.MULTILINE)
        assert line is not None
        old = line.group(0)
        new = re.sub(r"residual_range: \[[^\]]*\]", f"residual_range: {_pair((lo, hi))}", old)
        text = text[:at] + text[at:].replace(old, new, 1)
        centre, (u_lo, u_hi) = unmodelled_moe(cat, entry.experts.records)
        value = (
            f'{{centre: {centre:.4f}, range: [{u_lo:.4f}, {u_hi:.4f}], source: "fitted: '
            f"published / dense-only step of {len(entry.experts.records)} {entry.family} MoE "
            'records"}'
        )
        text, _ = _sub(text, "unmodelled_moe", value)
    return text


def main(argv: list[str]) -> int:
    write = "--write" in argv
    original = PATH.read_text(encoding="utf-8")
    text = original
    loss, exponent = fit_scaling(load_catalog(PATH.parent))
    text, _ = _sub(text, "loss_per_node_doubling", f"{loss:.4f}")
    text, _ = _sub(text, "batch_exponent", f"{exponent:.4f}")
    try:
        _reload(text)
        for family in FAMILIES:
            fit = fit_family(load_catalog(PATH.parent), family)
            print(f"{family}: rms {fit.rms:.4f} over the log ratio")
            text = _write_family(text, fit)
            _reload(text)
        cat = load_catalog(PATH.parent)
        whole = [r for r in cat.records if r.id in cat.throughput.goodput.other_loss_records]
        text, _ = _sub(text, "other_loss_fraction", f"{fit_other_loss(cat, whole):.3f}")
        _reload(text)
        text = _ranges(text)
    finally:
        _reload(text if write else original)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
