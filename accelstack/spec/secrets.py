"""Credential-looking values, found by a maintained detector library (Yelp's detect-secrets:
AWS keys, GitHub/GitLab/Slack/Stripe/OpenAI/PyPI/npm tokens, private keys, URLs with a
password, JWTs, ...), refused wherever a spec value can reach a node: `workload.env` (names
and values), `args`, `precompile_args`, `entrypoint`, `image`, `tags`, and every other string
of the spec, with the YAML path. Rendered files are scanned the same way before they are
written (`accelstack.render`), so a credential never lands in a launch script, an SSM
document or a ConfigMap.

The entropy and keyword detectors are left out: they flag ordinary model names and paths.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any

from accelstack.spec.rules import Context, Finding, rule

#: detect-secrets plugins not used: noisy on ordinary values (paths, model ids, CIDRs).
SKIPPED_PLUGINS = frozenset(
    {"Base64HighEntropyString", "HexHighEntropyString", "KeywordDetector", "IPPublicDetector"}
)


@cache
def _plugins() -> tuple[Any, ...]:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    classes: list[Any] = list(get_mapping_from_secret_type_to_class().values())
    return tuple(
        c() for c in sorted(classes, key=lambda c: c.__name__) if c.__name__ not in SKIPPED_PLUGINS
    )


def secret_kinds(text: str) -> list[str]:
    """The kinds of credential `text` looks like (empty: none), e.g. ['AWS Access Key']."""
    found = []
    for line in text.splitlines() or [text]:
        for plugin in _plugins():
            if any(True for _ in plugin.analyze_string(line)):
                found.append(str(plugin.secret_type))
    return sorted(set(found))


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


def secret_findings(data: Any, where: str = "") -> Iterator[Finding]:
    """One finding per credential-looking string: (YAML path, message). The value itself is
    never echoed."""
    for path, text in spec_strings(data, where):
        kinds = secret_kinds(text)
        if kinds:
            yield (
                path,
                f"looks like a credential ({', '.join(kinds)}); credentials never go into a "
                "spec or rendered files: keep them in AWS Secrets Manager or a Kubernetes "
                "Secret and read them at run time",
            )


@rule("no-credentials", "no spec value looks like a credential (detect-secrets)")
def _no_credentials(ctx: Context) -> Iterator[Finding]:
    yield from secret_findings(ctx.spec.model_dump(mode="json", by_alias=True, exclude_none=True))
