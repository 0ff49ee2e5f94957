"""Detectors the detect-secrets library lacks: the ML ecosystem's tokens (a registry of regex
detectors, each in the library's own plugin form, so `secret_kinds` and `redact` run them
with the library's).

Token shapes (prefix and alphabet), from the issuers' documentation and gitleaks' default
rules (gitleaks/gitleaks config/gitleaks.toml: huggingface-access-token, anthropic-api-key,
openai-api-key, github-fine-grained-pat, npm-access-token, aws-access-token):
- Hugging Face user access token: `hf_` + 34 letters (https://huggingface.co/docs/hub/security-tokens);
- Weights & Biases API key: 40 hex characters; recognised by the `wandb`/WANDB_API_KEY keyword
  before it (a bare 40-hex string is a git commit id as often as a key);
- Anthropic API key: `sk-ant-` (`api03-`, `admin01-`) + 80 or more URL-safe characters;
- OpenAI project, service-account and admin keys: `sk-proj-`, `sk-svcacct-`, `sk-admin-`;
- GitHub fine-grained personal access token: `github_pat_` + 22 + `_` + 59 characters;
- npm access token: `npm_` + 36 alphanumerics;
- AWS secret access key: 40 base64 characters after an aws...secret... keyword (the access
  key id alone is the library's AWSKeyDetector);
- GCP service-account key file: the JSON's `"type": "service_account"` beside a
  `private_key`/`private_key_id`.
"""

from __future__ import annotations

import re
from typing import Any

from detect_secrets.plugins.base import RegexBasedDetector


class HuggingFaceTokenDetector(RegexBasedDetector):
    secret_type = "Hugging Face Token"
    denylist = (re.compile(r"\b(hf_[A-Za-z0-9]{30,})\b"),)


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


class AwsSecretKeyDetector(RegexBasedDetector):
    secret_type = "AWS Secret Access Key"
    denylist = (
        re.compile(
            r"(?i)aws[\w.-]{0,20}?(?:secret|sk)[\w.-]*['\"]?\s*[:=]\s*['\"]?"
            r"([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
        ),
    )


class GcpServiceAccountDetector(RegexBasedDetector):
    secret_type = "GCP Service Account Key"
    denylist = (
        re.compile(r"(\"type\"\s*:\s*\"service_account\")(?=.*\"private_key)", re.S),
        re.compile(r"\"private_key_id\"\s*:\s*\"([0-9a-f]{40})\""),
    )


PLUGINS: tuple[Any, ...] = (
    HuggingFaceTokenDetector,
    WandbApiKeyDetector,
    AnthropicKeyDetector,
    OpenAIProjectKeyDetector,
    GitHubFineGrainedTokenDetector,
    NpmAccessTokenDetector,
    AwsSecretKeyDetector,
    GcpServiceAccountDetector,
)
