"""An ordered registry of validation rules: small functions that look at one subject (the raw
spec's `Context`, the resolved `Stack`) and yield `(yaml_path, message)` findings.

The spec rules (accelstack/spec/rules.py) and the rules on the resolved stack
(accelstack/resolve/rules.py) each keep one list and register into it with `registrar`;
registration order is report order, and docs/spec.md lists both lists. Imports nothing of
accelstack.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

S = TypeVar("S")
Finding = tuple[str, str]  # (YAML path, message)


@dataclass(frozen=True)
class Rule(Generic[S]):
    name: str
    summary: str  # what the rule refuses, as its message says it
    check: Callable[[S], Iterator[Finding]]


def registrar(
    rules: list[Rule[S]],
) -> Callable[
    [str, str], Callable[[Callable[[S], Iterator[Finding]]], Callable[[S], Iterator[Finding]]]
]:
    """The decorator factory `@rule(name, summary)` that appends to `rules`; a name registered
    twice is a programming error (docs and reports name rules by it)."""

    def rule(
        name: str, summary: str
    ) -> Callable[[Callable[[S], Iterator[Finding]]], Callable[[S], Iterator[Finding]]]:
        if any(r.name == name for r in rules):
            raise ValueError(f"rule {name!r} is registered twice")

        def register(fn: Callable[[S], Iterator[Finding]]) -> Callable[[S], Iterator[Finding]]:
            rules.append(Rule(name, summary, fn))
            return fn

        return register

    return rule


def findings(rules: list[Rule[S]], subject: S) -> Iterator[Finding]:
    """Every finding of every rule on `subject`, in registration order."""
    for r in rules:
        yield from r.check(subject)
