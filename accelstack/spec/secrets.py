"""Credential-looking values are refused wherever a spec value can reach a node:
`workload.env` (names and values), `args`, `precompile_args`, `entrypoint`, `image`, `tags`,
and every other string of the spec, with the YAML path (the value itself is never echoed).
Rendered files are scanned the same way before they are written (`accelstack.render`), so a
credential never lands in a launch script, an SSM document or a ConfigMap.

Detection and redaction live in `accelstack.redaction` (one module for the rule, the rendered
files and every error path): this module keeps the names the spec layer and its callers use.
The rule that refuses them is `no-credentials` (accelstack/resolve/credential_rules.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from accelstack.redaction import (
    MAYBE_CREDENTIAL,
    env_kinds,
    may_hold_credential,
    redact,
)
from accelstack.redaction import credential_kinds as secret_kinds

__all__ = [
    "MAYBE_CREDENTIAL",
    "env_kinds",
    "may_hold_credential",
    "redact",
    "secret_findings",
    "secret_kinds",
    "spec_strings",
]


def spec_strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """(YAML path, text) of every string in a dumped spec, mapping keys included."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for k, v in value.items():
            sub = f"{path}.{k}" if path else str(k)
            yield sub, str(k)
            yield from spec_strings(v, sub)
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            yield from spec_strings(v, f"{path}[{i}]")


def secret_findings(data: Any, where: str = "") -> Iterator[tuple[str, str]]:
    """One finding per credential-looking string: (YAML path, message). The value itself is
    never echoed. Entries of `workload.env` are judged with their name as keyword context."""
    env = data.get("workload", {}).get("env", {}) if isinstance(data, dict) and not where else {}
    env = env if isinstance(env, dict) else {}
    previous = ("", "")
    for path, text in spec_strings(data, where):
        name = path[len("workload.env.") :] if path.startswith("workload.env.") else None
        is_value = name is not None and name in env and text == env[name]
        if is_value and name is not None:
            kinds = env_kinds(name, text)
        else:
            kinds = secret_kinds(_with_flag(previous, path, text))
        previous = (path, text)
        if kinds:
            yield (
                path,
                f"looks like a credential ({', '.join(kinds)}); credentials never go into a "
                "spec or rendered files: keep them in AWS Secrets Manager or a Kubernetes "
                "Secret and read them at run time",
            )


def _with_flag(previous: tuple[str, str], path: str, text: str) -> str:
    """A list item with the option before it (`args: [--password, VALUE]` reads as
    `--password VALUE`), else the item itself."""
    before, flag = previous
    stem, _, index = path.rpartition("[")
    if flag.startswith("-") and index[:-1].isdigit() and before == f"{stem}[{int(index[:-1]) - 1}]":
        return f"{flag} {text}"
    return text
