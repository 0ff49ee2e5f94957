"""The rule registry both validation stages register into."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from accelstack import rulebook
from accelstack.resolve import STACK_RULES
from accelstack.spec.rules import RULES


def test_findings_come_in_registration_order() -> None:
    rules: list[rulebook.Rule[int]] = []
    rule = rulebook.registrar(rules)

    @rule("second-digit", "the tens")
    def _tens(n: int) -> Iterator[rulebook.Finding]:
        yield ("n", f"tens {n // 10}")

    @rule("first-digit", "the units")
    def _units(n: int) -> Iterator[rulebook.Finding]:
        yield ("n", f"units {n % 10}")

    assert list(rulebook.findings(rules, 42)) == [("n", "tens 4"), ("n", "units 2")]
    with pytest.raises(ValueError, match="'first-digit' is registered twice"):
        rule("first-digit", "again")


def test_every_rule_name_is_unique_across_both_stages() -> None:
    names = [r.name for r in RULES] + [r.name for r in STACK_RULES]
    assert len(names) == len(set(names)) and len(STACK_RULES) >= 7
