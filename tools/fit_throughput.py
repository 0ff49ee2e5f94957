"""Refit the run model in accelstack/catalog/throughput.yaml from records.yaml and print it.

    python tools/fit_throughput.py [--write]

Order matters: the scaling terms come from record pairs alone, the curves from steady-state
records normalised by the scaling, the goodput's other-loss fraction from whole-run records
reproduced through the curves. `--write` rewrites the fitted numbers in place (each fitted key
is replaced on its own line, so comments stay); tests/catalog/test_records.py fails until the file
holds the fit.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable

from accelstack.catalog import CATALOG_DIR, Catalog, _load, load_catalog
from accelstack.catalog.throughput import MfuCurve
from accelstack.cost.mfu import (
    fit_family_curve,
    fit_other_loss,
    fit_scaling,
    fit_sequence,
    held_out_scatter,
)

PATH = CATALOG_DIR / "throughput.yaml"


def _sub(text: str, key: str, value: str, after: int = 0) -> tuple[str, int]:
    """Replace the first `key: ...` line at or after `after`; return the text and its end."""
    pat = re.compile(rf"^(\s*{re.escape(key)}: ).*$", re.MULTILINE)
    m = pat.search(text, after)
    if m is None:
        raise SystemExit(f"{PATH}: no '{key}' after offset {after}")
    return text[: m.start()] + m.group(1) + value + text[m.end() :], m.start() + len(value)


#: Writes one fitted curve's keys into the text at `at`; returns the text and the new position.
CurveWriter = Callable[[str, Catalog, MfuCurve, int], tuple[str, int]]


def _each_fitted_curve(text: str, write: CurveWriter) -> str:
    """`write` applied to every fitted curve's block of throughput.yaml, in file order."""
    cat = load_catalog(PATH.parent)
    at = 0
    for curve in cat.throughput.curves:
        at = text.index(
            f"- family: {curve.family}\n    precisions: [{', '.join(curve.precisions)}]", at
        )
        if curve.basis != "fitted":
            at += 1
            continue
        text, at = write(text, cat, curve, at)
    return text


def _fit(text: str, cat: Catalog, curve: MfuCurve, at: int) -> tuple[str, int]:
    fit = fit_family_curve(cat, curve)
    stacks = "{" + ", ".join(f"{k}: {v:.4f}" for k, v in sorted(fit.stacks.items())) + "}"
    lo, hi = fit.params_range
    text, at = _sub(text, "intercept", f"{fit.intercept:.4f}", at)
    text, at = _sub(text, "slope", f"{fit.slope:.4f}", at)
    text, at = _sub(text, "params_range", f"[{lo:g}, {hi:g}]", at)
    text, at = _sub(text, "stacks", stacks, at)
    return _sub(text, "residual", f"{fit.residual:.4f}", at)


def _held_out(text: str, cat: Catalog, curve: MfuCurve, at: int) -> tuple[str, int]:
    """A fitted curve's held-out scatter, on the curve just written."""
    sc = held_out_scatter(cat, curve)
    value = "null" if sc is None else f"[{sc[0]:.4f}, {sc[1]:.4f}]"
    return _sub(text, "held_out_scatter", value, at)


def _curves(text: str) -> str:
    return _each_fitted_curve(text, _fit)


def _scatter(text: str) -> str:
    return _each_fitted_curve(text, _held_out)


def main(argv: list[str]) -> int:
    write = "--write" in argv
    text = PATH.read_text(encoding="utf-8")
    loss, exponent = fit_scaling(load_catalog(PATH.parent))
    text, _ = _sub(text, "loss_per_node_doubling", f"{loss:.4f}")
    text, _ = _sub(text, "batch_exponent", f"{exponent:.4f}")
    seq, seq_lo, seq_hi = fit_sequence(load_catalog(PATH.parent))
    text, _ = _sub(text, "sequence_exponent", f"{seq:.4f}")
    text, _ = _sub(text, "sequence_exponent_range", f"[{seq_lo:.4f}, {seq_hi:.4f}]")
    if write:
        PATH.write_text(text, encoding="utf-8")
        _load.cache_clear()
        text = _curves(text)
        PATH.write_text(text, encoding="utf-8")
        _load.cache_clear()
        cat = load_catalog(PATH.parent)
        whole = [
            cat_r for cat_r in cat.records if cat_r.id in cat.throughput.goodput.other_loss_records
        ]
        other = fit_other_loss(cat, whole)
        text, _ = _sub(text, "other_loss_fraction", f"{other:.3f}")
        PATH.write_text(text, encoding="utf-8")
        _load.cache_clear()
        text = _scatter(text)
        PATH.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
