"""Credential-looking values, found by a maintained detector library (Yelp's detect-secrets:
AWS keys, GitHub/GitLab/Slack/Stripe/OpenAI/PyPI/npm tokens, private keys, URLs with a
password, JWTs, ...), refused wherever a spec value can reach a node: `workload.env` (names
and values), `args`, `precompile_args`, `entrypoint`, `image`, `tags`, and every other string
of the spec, with the YAML path. Rendered files are scanned the same way before they are
written (`accelstack.render`), so a credential never lands in a launch script, an SSM
document or a ConfigMap.

The entropy detectors are left out: they flag ordinary model names and paths; the keyword
detector runs on `workload.env` entries only (NAME="value", where the name is the context).
The library lacks the ML ecosystem's tokens, so `accelstack.spec.secret_plugins` adds them
(Hugging Face, Weights & Biases, Anthropic, OpenAI project keys, GitHub fine-grained tokens, npm
tokens, an AWS secret access key by its keyword, a GCP service-account key file).

`redact` replaces every credential-looking value in a message by `<redacted: KIND>`: the CLI's
error boundary, `check` rows and the `diff` comment pass their text through it, so a value a
shape error echoes never reaches a terminal log or a pull-request comment.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from typing import Any

#: detect-secrets plugins not used: noisy on ordinary values (paths, model ids, CIDRs).
SKIPPED_PLUGINS = frozenset(
    {"Base64HighEntropyString", "HexHighEntropyString", "KeywordDetector", "IPPublicDetector"}
)


#: The detectors `_plugins()` runs, by class name: `MAYBE_CREDENTIAL` was written for these
#: (tests/spec/test_secrets_prefilter.py fails when the library adds or drops one).
COVERED_DETECTORS = frozenset(
    {
        "AWSKeyDetector", "AnthropicKeyDetector", "ArtifactoryDetector", "AwsSecretKeyDetector",
        "AzureStorageKeyDetector", "BasicAuthDetector", "CloudantDetector",
        "DiscordBotTokenDetector", "GcpServiceAccountDetector", "GitHubFineGrainedTokenDetector",
        "GitHubTokenDetector", "GitLabTokenDetector", "HuggingFaceTokenDetector",
        "IbmCloudIamDetector", "IbmCosHmacDetector", "JwtTokenDetector", "MailchimpDetector",
        "NpmAccessTokenDetector", "NpmDetector", "OpenAIDetector", "OpenAIProjectKeyDetector",
        "PrivateKeyDetector", "PypiTokenDetector", "SendGridDetector", "SlackDetector",
        "SoftlayerDetector", "SquareOAuthDetector", "StripeDetector", "TelegramBotTokenDetector",
        "TwilioKeyDetector", "WandbApiKeyDetector",
    }
)  # fmt: skip

#: What every match of every covered detector contains (a necessary condition, far looser than
#: any detector): a line that matches none of these cannot be reported, so it is not handed to
#: the library, whose import (requests, urllib3, multiprocessing) costs `validate` a quarter of
#: its time. tests/spec/test_secrets_prefilter.py generates matches of each detector's own patterns
#: and holds every one of them flagged here.
MAYBE_CREDENTIAL = re.compile(
    "|".join(
        (
            # a keyword-assignment (Cloudant, IBM, Softlayer, IBM COS: `..key = value`)
            r"(?i:key|pwd|pw|pass|password|token)[\"']?\]?[ ]*[=: ]",
            # token prefixes and keywords
            r"(?i:sk-|k_live_|hf_|npm_|gh[pousr]_|github_pat_|gl[a-z]+-|gr1348941|pypi-|sq0csp-"
            r"|xox|wandb|hooks\.slack|softlayer|cloudant|_authtoken|private.key|service_account"
            r"|putty-user-key-file|accountkey=|t3blbkfj|eyj|sg\.)",
            r"A3T|ABIA|ACCA|AKIA|ASIA|AKC|AP[\dA-F]|-us[0-9]",  # AWS key ids, Artifactory, Mailchimp
            r"://[^@\s]*@",  # a URL with a password
            r"[A-Za-z0-9/+=]{40}",  # 40-character keys (AWS secret, W&B)
            r"[\w-]{24}\.[\w-]{6}\.",  # Discord bot token
            r"\d{8}:[\w-]{35}",  # Telegram bot token
            r"(?:AC|SK)[a-z0-9]{32}",  # Twilio account SID and API key
        )
    )
)


def may_hold_credential(line: str) -> bool:
    """False when no detector could report anything in `line` (see `MAYBE_CREDENTIAL`)."""
    return MAYBE_CREDENTIAL.search(line) is not None


@cache
def _plugins() -> tuple[Any, ...]:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    from accelstack.spec.secret_plugins import PLUGINS

    classes: list[Any] = list(get_mapping_from_secret_type_to_class().values())
    library = [c for c in classes if c.__name__ not in SKIPPED_PLUGINS]
    return tuple(c() for c in sorted([*library, *PLUGINS], key=lambda c: c.__name__))


@cache
def _keyword() -> Any:
    from detect_secrets.plugins.keyword import KeywordDetector

    return KeywordDetector()


def _found(line: str) -> Iterator[tuple[str, str]]:
    """(kind, value) of every credential-looking value in one line of text."""
    if not may_hold_credential(line):
        return
    for plugin in _plugins():
        for value in plugin.analyze_string(line):
            yield str(plugin.secret_type), str(value)


def redact(text: str) -> str:
    """`text` with every credential-looking value replaced by `<redacted: KIND>`."""
    if not text:
        return text
    lines = []
    for line in text.split("\n"):
        for kind, value in sorted(set(_found(line)), key=lambda kv: -len(kv[1])):
            if value:
                line = line.replace(value, f"<redacted: {kind}>")
        lines.append(line)
    return "\n".join(lines)


def env_kinds(name: str, value: str) -> list[str]:
    """The credential kinds of one `workload.env` entry: its value, and the detector library's
    keyword detector on `NAME="value"` (a password-, key- or secret-named variable)."""
    kinds = secret_kinds(value)
    if value and any(True for _ in _keyword().analyze_string(f'{name}="{value}"')):
        kinds.append("Secret Keyword")
    return sorted(set(kinds))


def secret_kinds(text: str) -> list[str]:
    """The kinds of credential `text` looks like (empty: none), e.g. ['AWS Access Key']."""
    found = []
    for line in text.splitlines() or [text]:
        if not may_hold_credential(line):
            continue
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


def secret_findings(data: Any, where: str = "") -> Iterator[tuple[str, str]]:
    """One finding per credential-looking string: (YAML path, message). The value itself is
    never echoed. Entries of `workload.env` are judged with their name as keyword context."""
    env = data.get("workload", {}).get("env", {}) if isinstance(data, dict) and not where else {}
    env = env if isinstance(env, dict) else {}
    for path, text in spec_strings(data, where):
        name = path[len("workload.env.") :] if path.startswith("workload.env.") else None
        is_value = name is not None and name in env and text == env[name]
        kinds = env_kinds(name, text) if is_value and name is not None else secret_kinds(text)
        if kinds:
            yield (
                path,
                f"looks like a credential ({', '.join(kinds)}); credentials never go into a "
                "spec or rendered files: keep them in AWS Secrets Manager or a Kubernetes "
                "Secret and read them at run time",
            )
