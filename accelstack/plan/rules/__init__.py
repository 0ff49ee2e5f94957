"""Deploy rules: checks over the offline plan that catch what Pulumi's mocks accept but AWS
refuses (or accepts into a broken or unsafe cluster). One implementation, two entry points:
`accelstack plan` / `accelstack check` evaluate them offline, and the CrossGuard pack in
policies/ evaluates them at `pulumi preview`.

A rule is one small function registered with `@deploy_rule(name, source, summary)`: it gets
the `Plan` and the resolved `Stack` and yields `(resource, message)` pairs, `resource` being
`f"{type} '{name}'"` of the offending resource (or the stack name). The framework turns them
into `Violation`s carrying the rule's name and the primary document it encodes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from accelstack.plan.document import Plan

if TYPE_CHECKING:
    from accelstack.resolve import Stack


@dataclass(frozen=True)
class Violation:
    rule: str  # the rule's name, e.g. "eks-endpoint-reachable"
    resource: str  # f"{type} '{name}'" of the offending resource (or the stack name)
    message: str  # what is wrong and what to do, one line
    source: str  # the primary document the rule encodes (URL or repo@commit path)

    def line(self) -> str:
        return f"{self.resource}: {self.message} [{self.rule}; {self.source}]"


#: A rule body: yields (resource, message) pairs.
RuleBody = Callable[[Plan, "Stack"], Iterator[tuple[str, str]]]
DeployRule = Callable[[Plan, "Stack"], Iterator[Violation]]


@dataclass(frozen=True)
class RuleInfo:
    name: str
    source: str
    summary: str
    check: DeployRule


RULES: list[RuleInfo] = []


def deploy_rule(name: str, source: str, summary: str) -> Callable[[RuleBody], DeployRule]:
    """Register a rule; registration order is report order."""

    def register(body: RuleBody) -> DeployRule:
        def check(plan: Plan, stack: Stack) -> Iterator[Violation]:
            for resource, message in body(plan, stack):
                yield Violation(name, resource, message, source)

        check.__name__ = body.__name__
        check.__doc__ = body.__doc__
        RULES.append(RuleInfo(name, source, summary, check))
        return check

    return register


def evaluate(plan: Plan, stack: Stack) -> list[Violation]:
    """Every rule over the plan, in registration order."""
    return [v for info in RULES for v in info.check(plan, stack)]


# 10B's rule modules (10A's access, nodegroups, plugins, storage, identity join this line).
from accelstack.plan.rules import amis, names, network, standalone  # noqa: E402,F401
