"""The spec rule on credentials: no value of the spec looks like one (the detectors are
accelstack/spec/secrets.py's, which also redact messages and scan rendered files). Listed last
in `SPEC_RULES`, so a credential is named after every other problem of the spec."""

from __future__ import annotations

from collections.abc import Iterator

from accelstack.resolve.spec_rules import Finding, SpecRule, spec_rule
from accelstack.resolve.stack import Stack
from accelstack.spec.secrets import secret_findings


@spec_rule("no-credentials", "no spec value looks like a credential (detect-secrets)")
def _no_credentials(stack: Stack) -> Iterator[Finding]:
    written = stack.spec.model_dump(mode="json", by_alias=True, exclude_none=True)
    yield from secret_findings(written)


#: This module's rules, in report order (the kind's RuleSet lists this tuple).
MODULE_RULES: tuple[SpecRule, ...] = (_no_credentials,)
