"""The credential detectors: Yelp's detect-secrets library (AWS keys, GitHub/GitLab/Slack/
Stripe/OpenAI/PyPI/npm tokens, private keys, URLs with a password, JWTs, ...) plus the ones it
lacks, each in the library's own plugin form, and where each detector's match lies in a line
(its span: what `accelstack.redaction` masks, whole).

Imported only when a line passes the pre-filter (`accelstack.redaction.MAYBE_CREDENTIAL`): the
library's import (requests, urllib3, multiprocessing) costs `validate` a quarter of its time.

The entropy detectors of the library are left out (they flag ordinary model names and paths);
its keyword detector runs on `workload.env` entries only (NAME="value", the name as context).

Token shapes added here (prefix and alphabet), each from the issuer's documentation or a
maintained scanner's rule:
- Hugging Face user access token `hf_` + 34 letters and digits, organization API token
  `api_org_` + 34 (https://huggingface.co/docs/hub/security-tokens; gitleaks/gitleaks@b58d3f10
  config/gitleaks.toml:2364-2375 huggingface-access-token and -organization-api-token;
  trufflesecurity/trufflehog@3ab759fe pkg/detectors/huggingface/huggingface.go:27);
- Weights & Biases API key: 40 hex characters, recognised by the `wandb`/WANDB_API_KEY keyword
  before it (a bare 40-hex string is a git commit id as often as a key);
- Anthropic API key `sk-ant-` (`api03-`, `admin01-`) + 80 or more URL-safe characters; OpenAI
  project, service-account and admin keys `sk-proj-`, `sk-svcacct-`, `sk-admin-`;
- GitHub fine-grained personal access token `github_pat_` + 82 word characters
  (gitleaks config/gitleaks.toml:2145-2147); npm access token `npm_` + 36 alphanumerics;
- Databricks personal access token `dapi` + 32 hex (+ `-N`) (gitleaks
  config/gitleaks.toml:382-384; trufflehog pkg/detectors/databrickstoken/databrickstoken.go:29);
- Docker Hub personal and organization access tokens `dckr_pat_` + 27, `dckr_oat_` + 32
  URL-safe characters (trufflehog pkg/detectors/dockerhub/v2/dockerhub.go:36);
- Groq API key `gsk_` + 52 alphanumerics (trufflehog pkg/detectors/groq/groq.go:25);
- Replicate API token `r8_` + 37 URL-safe characters (trufflehog
  pkg/detectors/replicate/replicate.go:25);
- NVIDIA API and NGC personal keys `nvapi-` + 64 URL-safe characters (trufflehog
  pkg/detectors/nvapi/nvapi.go:28; "keys typically start with nvapi-":
  https://nvidia.github.io/NeMo-Retriever/extraction/api-keys/); a legacy NGC API key is 84
  alphanumerics that base64-decode to 26 alphanumerics, ':' and a UUID (trufflehog
  pkg/detectors/ngc/ngc.go:28-29 and FromData): the decoded form is detected here, the encoded
  one through `accelstack.redaction.normalize.base64_runs`;
- AWS secret access key: 40 characters of the base64 alphabet, after an aws...secret keyword,
  or bare (trufflehog pkg/detectors/aws/common.go:16 `SecretPat`); bare, only a string that
  looks random (upper and lower case, a digit or '/' or '+', at least 4.2 bits of entropy per
  character: the documented example key has 4.66, 40 random base64 characters 4.4 to 5.0, a
  path such as `site/content/en/docs/tasks/run/trainjobs` 3.6);
- GCP service-account key file: the JSON's `"type": "service_account"` beside a
  `private_key`/`private_key_id`;
- a password on a command line: `password=VALUE` (also `passwd`, `passphrase`, `db_password`)
  or `--password VALUE`, unless VALUE refers to one (`$VAR`, `${...}`, `<...>`, `{{...}}`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Generator, Iterator
from functools import cache
from typing import Any

from detect_secrets.plugins.base import RegexBasedDetector

#: detect-secrets plugins not used: noisy on ordinary values (paths, model ids, CIDRs).
SKIPPED_PLUGINS = frozenset(
    {"Base64HighEntropyString", "HexHighEntropyString", "KeywordDetector", "IPPublicDetector"}
)


class HuggingFaceTokenDetector(RegexBasedDetector):
    secret_type = "Hugging Face Token"
    denylist = (re.compile(r"\b((?:hf_|api_org_)[A-Za-z0-9]{30,})\b"),)


class WandbApiKeyDetector(RegexBasedDetector):
    secret_type = "Weights & Biases API Key"
    denylist = (
        re.compile(r"(?i)wandb[\w.-]*['\"]?\s*[:=]\s*['\"]?([0-9a-f]{40})\b"),
        re.compile(r"(?i)\bapi\.wandb\.ai\b.*?\b([0-9a-f]{40})\b"),
    )


class AnthropicKeyDetector(RegexBasedDetector):
    secret_type = "Anthropic API Key"
    denylist = (re.compile(r"\b(sk-ant-[A-Za-z0-9_-]{20,})"),)


class OpenAIProjectKeyDetector(RegexBasedDetector):
    secret_type = "OpenAI API Key"
    denylist = (re.compile(r"\b(sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,})"),)


class GitHubFineGrainedTokenDetector(RegexBasedDetector):
    secret_type = "GitHub Fine-grained Token"
    denylist = (re.compile(r"\b(github_pat_[A-Za-z0-9_]{22,})"),)


class NpmAccessTokenDetector(RegexBasedDetector):
    secret_type = "npm Access Token"
    denylist = (re.compile(r"\b(npm_[A-Za-z0-9]{36})\b"),)


class DatabricksTokenDetector(RegexBasedDetector):
    secret_type = "Databricks Token"
    denylist = (re.compile(r"\b(dapi[0-9a-f]{32}(?:-\d)?)\b"),)


class DockerHubTokenDetector(RegexBasedDetector):
    secret_type = "Docker Hub Access Token"
    denylist = (re.compile(r"\b(dckr_pat_[\w-]{27}|dckr_oat_[\w-]{32})(?![\w-])"),)


class GroqKeyDetector(RegexBasedDetector):
    secret_type = "Groq API Key"
    denylist = (re.compile(r"\b(gsk_[A-Za-z0-9]{52})\b"),)


class ReplicateTokenDetector(RegexBasedDetector):
    secret_type = "Replicate API Token"
    denylist = (re.compile(r"\b(r8_[\w-]{37})(?![\w-])"),)


class NvidiaKeyDetector(RegexBasedDetector):
    secret_type = "NVIDIA NGC API Key"
    denylist = (
        re.compile(r"\b(nvapi-[\w-]{64})(?![\w-])"),
        re.compile(r"\b([A-Za-z0-9]{26}:[A-Za-z0-9]{8}-(?:[A-Za-z0-9]{4}-){3}[A-Za-z0-9]{12})\b"),
    )


class AwsSecretKeyDetector(RegexBasedDetector):
    secret_type = "AWS Secret Access Key"
    denylist = (
        re.compile(
            r"(?i)aws[\w.-]{0,20}?(?:secret|sk)[\w.-]*['\"]?\s*[:=]\s*['\"]?"
            r"([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
        ),
    )


class BareAwsSecretKeyDetector(RegexBasedDetector):
    secret_type = "AWS Secret Access Key"
    denylist = (re.compile(r"(?<![A-Za-z0-9+/])([A-Za-z0-9+/]{40})(?![A-Za-z0-9+/=])"),)

    def analyze_string(self, string: str) -> Generator[str, None, None]:
        yield from filter(looks_random, super().analyze_string(string))


def looks_random(value: str) -> bool:
    """Mixed case, a digit or symbol, and >= 4.2 bits of entropy per character."""
    if not (re.search("[A-Z]", value) and re.search("[a-z]", value)):
        return False
    if not re.search("[0-9+/]", value):
        return False
    counts = Counter(value).values()
    entropy = -sum(n / len(value) * math.log2(n / len(value)) for n in counts)
    return entropy >= 4.2


class GcpServiceAccountDetector(RegexBasedDetector):
    secret_type = "GCP Service Account Key"
    denylist = (
        re.compile(r"(\"type\"\s*:\s*\"service_account\")(?=.*\"private_key)", re.S),
        re.compile(r"\"private_key_id\"\s*:\s*\"([0-9a-f]{40})\""),
    )


#: A value that names where a password comes from rather than being one.
_REFERENCE = r"(?![$<{*%]|\.\.\.)"


class PasswordArgumentDetector(RegexBasedDetector):
    secret_type = "Password"
    denylist = (
        re.compile(
            rf"(?i)(?<![\w$])[\w.-]*?(?:password|passwd|passphrase)\s*=\s*['\"]?{_REFERENCE}"
            r"([^\s'\"&;,)]+)"
        ),
        re.compile(
            rf"(?i)(?<![\w-])--?[\w-]*(?:password|passwd|passphrase)\s+['\"]?{_REFERENCE}"
            r"(?!-)([^\s'\"]+)"
        ),
    )


ADDED: tuple[Any, ...] = (
    HuggingFaceTokenDetector,
    WandbApiKeyDetector,
    AnthropicKeyDetector,
    OpenAIProjectKeyDetector,
    GitHubFineGrainedTokenDetector,
    NpmAccessTokenDetector,
    DatabricksTokenDetector,
    DockerHubTokenDetector,
    GroqKeyDetector,
    ReplicateTokenDetector,
    NvidiaKeyDetector,
    AwsSecretKeyDetector,
    BareAwsSecretKeyDetector,
    GcpServiceAccountDetector,
    PasswordArgumentDetector,
)


@cache
def plugins() -> tuple[Any, ...]:
    """One instance of every detector that runs, the library's and ours, by class name."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    classes: list[Any] = list(get_mapping_from_secret_type_to_class().values())
    library = [c for c in classes if c.__name__ not in SKIPPED_PLUGINS]
    return tuple(c() for c in sorted([*library, *ADDED], key=lambda c: c.__name__))


@cache
def keyword() -> Any:
    from detect_secrets.plugins.keyword import KeywordDetector

    return KeywordDetector()


def spans(plugin: Any, text: str) -> Iterator[tuple[int, int]]:
    """Where in `text` the plugin's findings lie: each match of its patterns that yields a
    finding, whole (a finding is often only a capture group: the library's GitHub pattern
    captures just `ghp`); a finding no pattern locates, wherever it occurs."""
    found = {str(v) for v in plugin.analyze_string(text) if v}
    located: set[str] = set()
    for regex in getattr(plugin, "denylist", ()):
        for match in regex.finditer(text):
            parts = {match.group(0), *(g for g in match.groups() if g)}
            if found & parts:
                located |= found & parts
                yield match.start(), match.end()
    for value in found - located:
        start = text.find(value)
        while start >= 0:
            yield start, start + len(value)
            start = text.find(value, start + 1)
