"""A readable PR comment: tags key by key, user data line by line, the
absolute hourly cost beside its delta, and each stack's check verdict."""

from __future__ import annotations

import base64
from typing import Any

from accelstack.plan.diff import diff_sides
from accelstack.plan.diff_report import render_markdown
from accelstack.plan.diffside import SideRow

LT = "aws:ec2/launchTemplate:LaunchTemplate"


def _side(user_data: str, tags: dict[str, str], hourly: float, **cost: Any) -> SideRow:
    encoded = base64.b64encode(user_data.encode()).decode()
    lt = {"type": LT, "name": "lt", "inputs": {"userData": encoded, "tags": tags}}
    priced = {"hourly_usd": hourly, "monthly_usd": hourly * 730, "run_usd": 10.0}
    priced |= {"estimate": False, "ok": True, "verdict": "ok", "violations": [], "items": {}}
    return SideRow.from_dict({"file": "f", "plan": {"resources": [lt]}, "cost": {**priced, **cost}})


def test_the_comment_reads_key_by_key_and_line_by_line() -> None:
    script = "#!/bin/bash\nset -euo pipefail\necho one\necho two\n"
    base = _side(script, {"team": "a", "cost-center": "1"}, 10.0)
    head = _side(
        script.replace("echo two", "echo 2"),
        {"team": "b", "cost-center": "1", "owner": "x"},
        12.5,
        ok=False,
        violations=["imdsv2: hop limit"],
    )
    md = render_markdown(diff_sides({"s": base}, {"s": head}, ("base", "head")))
    assert "`tags.team: a -> b`" in md and "`tags.owner: (none) -> x`" in md
    assert "cost-center" not in md  # unchanged tags are not listed
    assert "`userData: - echo two`" in md and "`userData: + echo 2`" in md
    assert "| $12.50 (+$2.50) |" in md  # absolute hourly beside the delta
    assert md.splitlines()[4].endswith("| check |")
    assert "| FAIL (over budget, 1 rule(s)) |" in md
    ok = render_markdown(diff_sides({"s": base}, {"s": _side(script, {}, 10.0)}, ("b", "h")))
    assert "| pass |" in ok
