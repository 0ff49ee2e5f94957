"""The spec rules: every spec-rule module's `MODULE_RULES`, in report order (docs/spec.md lists
them), and `check_rules`, which runs them and turns what they yield into `Problem` lines.

A rule module added here, or a rule added to a module's `MODULE_RULES`, is the whole
registration: nothing registers on import (tests/repo/test_rule_registration.py checks that every
`@rule` function is listed)."""

from __future__ import annotations

from accelstack import rulebook
from accelstack.catalog import Catalog
from accelstack.errors import Problem
from accelstack.spec import cost_rules, rules, rules_resilience, scale_rules, secrets
from accelstack.spec.models import Spec
from accelstack.spec.rules import Context, Rule

SPEC_RULES: rulebook.RuleSet[Rule[Context]] = rulebook.RuleSet(
    "spec",
    rules.MODULE_RULES,
    cost_rules.MODULE_RULES,
    rules_resilience.MODULE_RULES,
    scale_rules.MODULE_RULES,
    secrets.MODULE_RULES,
)


def check_rules(spec: Spec, catalog: Catalog, file: str) -> list[Problem]:
    """Every finding of every spec rule, as problems naming `file`."""
    found = rulebook.findings(SPEC_RULES, Context(spec, catalog))
    return [Problem(file, path, msg) for path, msg in found]
