"""What a deploy rule is: `Violation`, `DeployRule` and the `@deploy_rule` decorator. The rule
modules beside this one list their rules in `MODULE_RULES`; `DEPLOY_RULES`
(accelstack/plan/rules/ruleset.py) lists those tuples and `evaluate` runs them."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from accelstack.plan.document import Plan, PlannedResource

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
RuleBody = Callable[[Plan, "Stack"], Iterable[tuple[str, str]]]


@dataclass(frozen=True)
class DeployRule:
    """A deploy rule: its body's pairs become `Violation`s naming the rule and its source."""

    name: str
    source: str
    summary: str
    body: RuleBody

    def check(self, plan: Plan, stack: Stack) -> Iterator[Violation]:
        for resource, message in self.body(plan, stack):
            yield Violation(rule=self.name, resource=resource, message=message, source=self.source)

    def __call__(self, plan: Plan, stack: Stack) -> Iterator[Violation]:
        return self.check(plan, stack)


def deploy_rule(name: str, source: str, summary: str) -> Callable[[RuleBody], DeployRule]:
    """`@deploy_rule(name, source, summary)`: the body becomes a `DeployRule` (still callable).
    It registers nothing: list the rule in its module's `MODULE_RULES`."""

    def make(body: RuleBody) -> DeployRule:
        return DeployRule(name=name, source=source, summary=summary, body=body)

    return make


def ref(r: PlannedResource) -> str:
    """How a violation names a resource: `type 'name'`."""
    return f"{r.type} '{r.name}'"
