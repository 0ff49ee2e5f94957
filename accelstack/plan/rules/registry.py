"""The deploy-rule registry: `Violation`, `@deploy_rule` and `evaluate`. The rule modules
beside this one register into it; the package's `__init__` imports them all."""

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


#: A rule as registered: the plan and the stack in, the violations out.
DeployRule = Callable[[Plan, "Stack"], Iterator[Violation]]
#: A rule body: yields (resource, message) pairs.
RuleBody = Callable[[Plan, "Stack"], Iterable[tuple[str, str]]]


@dataclass(frozen=True)
class RuleInfo:
    name: str
    source: str
    summary: str
    check: DeployRule


RULES: list[RuleInfo] = []


def deploy_rule(name: str, source: str, summary: str) -> Callable[[RuleBody], DeployRule]:
    """Register a rule body; the registered check turns its pairs into `Violation`s."""

    def register(body: RuleBody) -> DeployRule:
        if any(r.name == name for r in RULES):
            raise ValueError(f"deploy rule {name!r} is registered twice")

        def check(plan: Plan, stack: Stack) -> Iterator[Violation]:
            for resource, message in body(plan, stack):
                yield Violation(rule=name, resource=resource, message=message, source=source)

        check.__name__ = body.__name__
        check.__doc__ = body.__doc__
        RULES.append(RuleInfo(name=name, source=source, summary=summary, check=check))
        return check

    return register


def evaluate(plan: Plan, stack: Stack) -> list[Violation]:
    """Every rule, in registration order; the violations in the order the rules yield them."""
    return [v for info in RULES for v in info.check(plan, stack)]


def ref(r: PlannedResource) -> str:
    """How a violation names a resource: `type 'name'`."""
    return f"{r.type} '{r.name}'"
