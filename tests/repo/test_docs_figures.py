"""Measured figures live in one page each; the others link to it (two copies drift apart)."""

from __future__ import annotations

import re

from ..conftest import ROOT

DOCS = ROOT / "docs"

#: A row of `bench/scale.py`'s table: preset, node count, resource count.
SCALE_ROW = re.compile(r"^\| llama3-70b-(p5|trn2) \| [\d,]+ \| \d+ \|", re.MULTILINE)


def _anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_plan_time_at_scale_figures_are_held_by_scale_md_alone() -> None:
    scale = (DOCS / "scale.md").read_text(encoding="utf-8")
    assert SCALE_ROW.search(scale), "docs/scale.md lost its bench/scale.py table"
    heading = next(h for h in re.findall(r"^## (.+)$", scale, re.MULTILINE) if "scale.py" in h)
    holders = [p.name for p in sorted(DOCS.glob("*.md")) if SCALE_ROW.search(p.read_text())]
    assert holders == ["scale.md"]
    plan = (DOCS / "plan.md").read_text(encoding="utf-8")
    assert f"(scale.md#{_anchor(heading)})" in plan
