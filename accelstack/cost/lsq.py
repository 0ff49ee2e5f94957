"""Bounded nonlinear least squares (Levenberg-Marquardt, numeric Jacobian), standard library
only: the step model's fit (accelstack.cost.mfu) has tens of parameters and a few hundred
residuals, so a dense normal-equations solve is enough. Deterministic: the same residual
function and start give the same answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import mul

Residuals = Callable[[Sequence[float]], list[float]]


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """x with a x = b (Gauss-Jordan, partial pivoting); a singular column gives 0."""
    n = len(b)
    m = [[*row, b[i]] for i, row in enumerate(a)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        m[c], m[p] = m[p], m[c]
        if abs(m[c][c]) < 1e-300:
            continue
        for r in range(n):
            if r != c and m[r][c]:
                f = m[r][c] / m[c][c]
                m[r] = [x - f * y for x, y in zip(m[r], m[c], strict=True)]
    return [m[i][n] / m[i][i] if abs(m[i][i]) > 1e-300 else 0.0 for i in range(n)]


def _jacobian(f: Residuals, x: list[float], r: list[float]) -> list[list[float]]:
    """Columns d r / d x_j by forward differences."""
    cols = []
    for j in range(len(x)):
        h = 1e-6 * max(1.0, abs(x[j]))
        xp = list(x)
        xp[j] += h
        cols.append([(a - b) / h for a, b in zip(f(xp), r, strict=True)])
    return cols


def _normal(cols: list[list[float]], r: list[float]) -> tuple[list[list[float]], list[float]]:
    """J^T J and J^T r from J's columns. J^T J is symmetric, so each pair is summed once (the
    same products in the same order: the mirror is the same float)."""
    n = len(cols)
    jtj = [[0.0] * n for _ in range(n)]
    for i, ci in enumerate(cols):
        for j in range(i, n):
            jtj[i][j] = jtj[j][i] = sum(map(mul, ci, cols[j]))
    return jtj, [sum(map(mul, ci, r)) for ci in cols]


def least_squares(
    f: Residuals,
    start: Sequence[float],
    lower: Sequence[float],
    upper: Sequence[float],
    iterations: int = 300,
) -> tuple[list[float], float]:
    """(x, sum of squares) minimising sum f(x)^2 within [lower, upper]."""

    def clip(v: list[float]) -> list[float]:
        return [min(max(a, lo), hi) for a, lo, hi in zip(v, lower, upper, strict=True)]

    x = clip(list(start))
    r = f(x)
    cost = sum(e * e for e in r)
    lam = 1e-3
    for _ in range(iterations):
        cols = _jacobian(f, x, r)
        jtj, jtr = _normal(cols, r)
        step = None
        while lam < 1e10:
            damped = [
                [v + (lam * row[i] if i == j else 0.0) for j, v in enumerate(row)]
                for i, row in enumerate(jtj)
            ]
            d = _solve(damped, [-v for v in jtr])
            trial = clip([a + b for a, b in zip(x, d, strict=True)])
            rt = f(trial)
            ct = sum(e * e for e in rt)
            if ct < cost:
                step = max(abs(a - b) for a, b in zip(trial, x, strict=True))
                x, r, cost, lam = trial, rt, ct, max(lam / 3, 1e-9)
                break
            lam *= 4
        if step is None or step < 1e-10:
            break
    return x, cost
