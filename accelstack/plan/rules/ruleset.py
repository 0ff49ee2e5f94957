"""The deploy rules: every deploy-rule module's `MODULE_RULES`, in report order (docs/plan.md
lists them), and `evaluate`, which runs them on a plan.

A rule module added here, or a rule added to a module's `MODULE_RULES`, is the whole
registration: nothing registers on import (tests/repo/test_rule_registration.py checks that every
`@deploy_rule` function is listed)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from accelstack.plan.document import Plan
from accelstack.plan.rules import (
    access,
    amis,
    identity,
    jobs,
    names,
    network,
    nodegroups,
    plugins,
    resilience,
    scheduling,
    security,
    standalone,
    storage,
)
from accelstack.plan.rules.registry import DeployRule, Violation
from accelstack.rulebook import RuleSet

if TYPE_CHECKING:
    from accelstack.resolve import Stack

DEPLOY_RULES: RuleSet[DeployRule] = RuleSet(
    "deploy",
    access.MODULE_RULES,
    amis.MODULE_RULES,
    nodegroups.MODULE_RULES,  # before identity: the report order import side effects gave
    identity.MODULE_RULES,
    jobs.MODULE_RULES,
    names.MODULE_RULES,
    network.MODULE_RULES,
    plugins.MODULE_RULES,
    resilience.MODULE_RULES,
    scheduling.MODULE_RULES,
    security.MODULE_RULES,
    standalone.MODULE_RULES,
    storage.MODULE_RULES,
)


def evaluate(plan: Plan, stack: Stack) -> list[Violation]:
    """Every rule, in registry order; the violations in the order the rules yield them."""
    return [v for r in DEPLOY_RULES for v in r.check(plan, stack)]
