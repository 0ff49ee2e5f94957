"""Presets for runs of the real Pulumi program: the program refuses placeholder values
(documentation CIDRs, the AWS documentation's example accounts) at deploy, so tests that run
it deploy a copy with those filled in, as a user would."""

from __future__ import annotations

from pathlib import Path

#: placeholder -> a value of the user's own (an address range and an account id of theirs)
FILLS = {"203.0.113.0/24": "52.94.76.0/22", "111122223333": "210987654321"}


def fill(text: str) -> str:
    for old, new in FILLS.items():
        text = text.replace(old, new)
    return text


def filled_copy(spec: Path, project: Path) -> Path:
    """Write `spec` with its placeholders filled to project/stacks/<name>.yaml."""
    target = project / "stacks" / spec.name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(fill(spec.read_text(encoding="utf-8")), encoding="utf-8")
    return target
