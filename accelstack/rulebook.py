"""Rules and the one registry shape every kind of rule uses.

A rule is a small function that looks at one subject (the resolved `Stack`, the offline plan) and yields what it refuses. A decorator (`@rule(name, summary)` here,
`@deploy_rule(name, source, summary)` in accelstack/plan/rules/registry.py) turns the function
into a rule object and registers nothing: each rule module lists its rules in `MODULE_RULES`,
and each kind has one explicit `RuleSet` that lists those tuples in report order:

- spec rules: `SPEC_RULES` (accelstack/resolve/ruleset.py)
- rules on the resolved stack: `STACK_RULES` (accelstack/resolve/rules.py)
- deploy rules: `DEPLOY_RULES` (accelstack/plan/rules/ruleset.py)
- warnings on the resolved stack: `STACK_WARNINGS` (accelstack/resolve/advice.py, decorated
  with `@stack_warning`)

tests/repo/test_rule_registration.py parses every module and fails when a decorated function is in
no `RuleSet`. Imports nothing of accelstack.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

S = TypeVar("S")
Finding = tuple[str, str]  # (YAML path, message)


class Named(Protocol):
    """What a `RuleSet` needs of a rule: the name docs and reports call it by."""

    @property
    def name(self) -> str: ...


R = TypeVar("R", bound=Named)


@dataclass(frozen=True)
class Rule(Generic[S]):
    """A rule on a subject `S` that yields `(yaml_path, message)` findings."""

    name: str
    summary: str  # what the rule refuses, as its message says it
    check: Callable[[S], Iterator[Finding]]

    def __call__(self, subject: S) -> Iterator[Finding]:
        return self.check(subject)


def rule(name: str, summary: str) -> Callable[[Callable[[S], Iterator[Finding]]], Rule[S]]:
    """The decorator `@rule(name, summary)`: the function becomes a `Rule` (still callable).
    It registers nothing: list the rule in its module's `MODULE_RULES`."""

    def make(check: Callable[[S], Iterator[Finding]]) -> Rule[S]:
        return Rule(name, summary, check)

    return make


class RuleSet(Generic[R]):
    """An ordered, explicit registry of one kind of rule: the groups (each module's
    `MODULE_RULES`) in the order given, which is report order. A name listed twice is a
    programming error (docs and reports name rules by it)."""

    def __init__(self, kind: str, *groups: Iterable[R]) -> None:
        self.kind = kind
        self._rules = tuple(r for group in groups for r in group)
        seen: set[str] = set()
        for r in self._rules:
            if r.name in seen:
                raise ValueError(f"{kind} rule {r.name!r} is registered twice")
            seen.add(r.name)

    def __iter__(self) -> Iterator[R]:
        return iter(self._rules)

    def __len__(self) -> int:
        return len(self._rules)

    def __contains__(self, item: object) -> bool:
        return any(r is item for r in self._rules)

    @property
    def names(self) -> list[str]:
        return [r.name for r in self._rules]

    def plus(self, *extra: R) -> RuleSet[R]:
        """This set with `extra` appended (tests add a rule this way)."""
        return RuleSet(self.kind, self._rules, extra)


def findings(rules: Iterable[Rule[S]], subject: S) -> Iterator[Finding]:
    """Every finding of every rule on `subject`, in registry order."""
    for r in rules:
        yield from r.check(subject)
