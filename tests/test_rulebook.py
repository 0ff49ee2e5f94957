"""The registry shape every kind of rule uses (accelstack/rulebook.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from accelstack import rulebook
from accelstack.plan.rules import DEPLOY_RULES
from accelstack.resolve import SPEC_RULES, STACK_RULES


@rulebook.rule("second-digit", "the tens")
def _tens(n: int) -> Iterator[rulebook.Finding]:
    yield ("n", f"tens {n // 10}")


@rulebook.rule("first-digit", "the units")
def _units(n: int) -> Iterator[rulebook.Finding]:
    yield ("n", f"units {n % 10}")


def test_findings_come_in_the_order_the_set_lists_them() -> None:
    rules = rulebook.RuleSet("digit", (_tens,), (_units,))
    assert list(rulebook.findings(rules, 42)) == [("n", "tens 4"), ("n", "units 2")]
    assert rules.names == ["second-digit", "first-digit"] and len(rules) == 2
    assert _units in rules and list(_units(7)) == [("n", "units 7")]  # a rule stays callable
    backwards = rulebook.RuleSet("digit", (_units, _tens))
    assert list(rulebook.findings(backwards, 42)) == [("n", "units 2"), ("n", "tens 4")]


def test_a_name_listed_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="digit rule 'first-digit' is registered twice"):
        rulebook.RuleSet("digit", (_tens, _units), (_units,))
    with pytest.raises(ValueError, match="'second-digit' is registered twice"):
        rulebook.RuleSet("digit", (_tens,)).plus(_tens)


def test_every_rule_name_is_unique_across_both_validation_stages() -> None:
    """Spec and stack rules report into one list of problems; deploy rules report apart."""
    names = SPEC_RULES.names + STACK_RULES.names
    assert len(names) == len(set(names)) and len(STACK_RULES) >= 7
    assert (SPEC_RULES.kind, STACK_RULES.kind, DEPLOY_RULES.kind) == ("spec", "stack", "deploy")
