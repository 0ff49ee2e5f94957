"""Deploy rules: FSx for Lustre (EKS and shared)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from accelstack import tokens
from accelstack.plan.document import Plan
from accelstack.plan.rules.registry import DeployRule, deploy_rule, ref
from accelstack.tokens import LUSTRE

if TYPE_CHECKING:
    from accelstack.resolve import Stack

RULE_TYPES = (
    tokens.INGRESS_RULE,
    tokens.EGRESS_RULE,
    tokens.LEGACY_SECURITY_GROUP_RULE,
)


@deploy_rule(
    "fsx-after-security-group-rules",
    "https://docs.aws.amazon.com/fsx/latest/LustreGuide/cannot-create-fs.html",
    "FSx for Lustre is created after the rules of its own security group (988, 1018-1023), "
    "or creation fails with InvalidNetworkSettings",
)
def _fsx_after_rules(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    for fs in plan.of_type(LUSTRE):
        # its own security group's rules: those its component (the same parent) creates
        rules = [r for t in RULE_TYPES for r in plan.of_type(t) if r.parent == fs.parent]
        late = sorted(r.name for r in rules if r.name not in fs.depends_on)
        if late:
            yield (
                ref(fs),
                f"does not wait for its security-group rules ({', '.join(late)}); "
                "add them to depends_on",
            )


#: This module's rules, in report order (the kind's RuleSet lists this tuple).
MODULE_RULES: tuple[DeployRule, ...] = (_fsx_after_rules,)
