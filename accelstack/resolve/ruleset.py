"""The spec rules: every spec-rule module's `MODULE_RULES`, in report order (docs/spec.md lists
them), and `check_spec`, which runs them on a resolved stack and turns what they yield into
`Problem` lines naming the spec's file.

A rule module added here, or a rule added to a module's `MODULE_RULES`, is the whole
registration: nothing registers on import (tests/repo/test_rule_registration.py checks that every
`@spec_rule` function is listed)."""

from __future__ import annotations

from accelstack import rulebook
from accelstack.errors import Problem
from accelstack.resolve import (
    cost_rules,
    credential_rules,
    resilience_rules,
    scale_rules,
    spec_rules,
)
from accelstack.resolve.spec_rules import SpecRule
from accelstack.resolve.stack import Stack

SPEC_RULES: rulebook.RuleSet[SpecRule] = rulebook.RuleSet(
    "spec",
    spec_rules.MODULE_RULES,
    cost_rules.MODULE_RULES,
    resilience_rules.MODULE_RULES,
    scale_rules.MODULE_RULES,
    credential_rules.MODULE_RULES,
)


def check_spec(stack: Stack) -> list[Problem]:
    """Every finding of every spec rule on `stack`, as problems naming the spec's file."""
    found = rulebook.findings(SPEC_RULES, stack)
    return [Problem(stack.spec.file, path, msg) for path, msg in found]
