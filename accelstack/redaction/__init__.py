"""What any output may show of a value: credentials masked by span, over-long values cut.

One module for every path that prints something a user wrote: the spec rule that refuses a
credential in a spec (`accelstack.spec.secrets`), the rendered-file scan, the CLI's error
boundary, `check` rows and the `diff` comment (`redact`), and every value an error message
echoes (`accelstack.errors.shown`, through `masked` and `shortened`).

- Detection (`accelstack.redaction.detectors`): detect-secrets' detectors plus the ones it
  lacks (Hugging Face user and organization tokens, Databricks, Docker Hub, Groq, Replicate,
  NVIDIA NGC, bare AWS secret keys, passwords on a command line, ...), run on each line after
  invisible characters are taken out and on every base64 run decoded
  (`accelstack.redaction.normalize`).
- Masking: the whole match of the detector that fired, widened to the whole token around it
  (the library reports `ghp` for a GitHub token and `glpat` for GitLab's: masking what it
  reports would leave the token's body in the output), every invisible character inside it
  included; a base64 run that hides a credential, whole; a private key from its BEGIN line to
  its END line. `masked` masks a whole value.
- Length: `shortened` is the one shortener of echoed values (`VALUE_LIMIT` characters), and
  `bounded` (in `redact_line` and every `Problem` line) cuts any run of more than `RUN_LIMIT`
  non-blank characters as a last guard, so a 100,000-character value never becomes a
  100,000-character line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from accelstack.redaction.normalize import base64_runs, normalized

#: How much of a value a message echoes (characters; more is cut, with "...").
VALUE_LIMIT = 80

#: The longest run of non-blank characters `redact` lets through whole.
RUN_LIMIT = 300

#: The detectors `detectors.plugins()` runs, by class name: `MAYBE_CREDENTIAL` was written for
#: these (tests/redaction/test_prefilter.py fails when the library adds or drops one).
COVERED_DETECTORS = frozenset(
    {
        "AWSKeyDetector", "AnthropicKeyDetector", "ArtifactoryDetector", "AwsSecretKeyDetector",
        "AzureStorageKeyDetector", "BareAwsSecretKeyDetector", "BasicAuthDetector",
        "CloudantDetector", "DatabricksTokenDetector", "DiscordBotTokenDetector",
        "DockerHubTokenDetector", "GcpServiceAccountDetector", "GitHubFineGrainedTokenDetector",
        "GitHubTokenDetector", "GitLabTokenDetector", "GroqKeyDetector",
        "HuggingFaceTokenDetector", "IbmCloudIamDetector", "IbmCosHmacDetector",
        "JwtTokenDetector", "MailchimpDetector", "NpmAccessTokenDetector", "NpmDetector",
        "NvidiaKeyDetector", "OpenAIDetector", "OpenAIProjectKeyDetector",
        "PasswordArgumentDetector", "PrivateKeyDetector", "PypiTokenDetector",
        "ReplicateTokenDetector", "SendGridDetector", "SlackDetector", "SoftlayerDetector",
        "SquareOAuthDetector", "StripeDetector", "TelegramBotTokenDetector", "TwilioKeyDetector",
        "WandbApiKeyDetector",
    }
)  # fmt: skip

#: What every match of every covered detector contains (a necessary condition, far looser than
#: any detector): a line that matches none of these cannot be reported, so it is not handed to
#: the library, whose import costs `validate` a quarter of its time.
#: tests/redaction/test_prefilter.py generates matches of each detector's own patterns and
#: holds every one of them flagged here.
MAYBE_CREDENTIAL = re.compile(
    "|".join(
        (
            # a keyword-assignment (Cloudant, IBM, Softlayer, IBM COS: `..key = value`; a
            # password on a command line: `--password VALUE`, `db_passwd=VALUE`)
            r"(?i:key|pwd|pw|pass|password|passwd|passphrase|token)[\"']?\]?\s*[=:\s]",
            # token prefixes and keywords
            r"(?i:sk-|k_live_|hf_|api_org_|npm_|gh[pousr]_|github_pat_|gl[a-z]+-|gr1348941"
            r"|pypi-|sq0csp-|xox|wandb|hooks\.slack|softlayer|cloudant|_authtoken|private.key"
            r"|service_account|putty-user-key-file|accountkey=|t3blbkfj|eyj|sg\.|dapi|dckr_"
            r"|gsk_|r8_|nvapi-)",
            r"A3T|ABIA|ACCA|AKIA|ASIA|AKC|AP[\dA-F]|-us[0-9]",  # AWS key ids, Artifactory, Mailchimp
            r"://[^@\s]*@",  # a URL with a password
            r"[A-Za-z0-9/+=]{40}",  # 40-character keys (AWS secret, W&B, a legacy NGC key)
            r"[A-Za-z0-9]{26}:[A-Za-z0-9]{8}-",  # a legacy NGC key, decoded
            r"[\w-]{24}\.[\w-]{6}\.",  # Discord bot token
            r"\d{8}:[\w-]{35}",  # Telegram bot token
            r"(?:AC|SK)[a-z0-9]{32}",  # Twilio account SID and API key
        )
    )
)

#: Characters a token is made of: a detector's match is widened over them to the whole token.
_TOKEN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+/.~")
_TOKEN_RIGHT = re.compile(r"[A-Za-z0-9_\-+/.~=]*")
_KEY_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----|BEGIN [A-Z0-9 ]*PRIVATE KEY")
_KEY_END = re.compile(r"-*END [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-*")
_PRIVATE_KEY = "Private Key"
_RUN = re.compile(rf"\S{{{RUN_LIMIT + 1},}}")


@dataclass(frozen=True)
class Found:
    """A credential's span [start, end) in a line, and what it looks like."""

    start: int
    end: int
    kind: str


def may_hold_credential(line: str) -> bool:
    """False when no detector could report anything in `line` (see `MAYBE_CREDENTIAL`)."""
    return MAYBE_CREDENTIAL.search(line) is not None


def shortened(text: str, limit: int = VALUE_LIMIT) -> str:
    """The one shortener of echoed values: `text` cut to `limit` characters and "..."."""
    return text if len(text) <= limit else text[:limit] + "..."


def found_in(line: str) -> list[Found]:
    """Every credential in one line of text, as spans of that line (invisible characters and
    base64 runs read through)."""
    norm = normalized(line)
    found = list(_detect(norm.text))
    for start, end, decoded in base64_runs(norm.text):
        kinds = {f.kind for f in _detect(decoded)}
        found += [Found(start, end, kind) for kind in sorted(kinds)]
    return [Found(*norm.span(f.start, f.end), f.kind) for f in found]


def _detect(text: str) -> Iterator[Found]:
    if not may_hold_credential(text):
        return
    from accelstack.redaction.detectors import plugins, spans

    for plugin in plugins():
        kind = str(plugin.secret_type)
        for start, end in spans(plugin, text):
            yield Found(*_whole(text, start, end, kind), kind)


def _whole(text: str, start: int, end: int, kind: str) -> tuple[int, int]:
    """The match widened to the whole token around it; a private key from its BEGIN marker
    to its END marker (or the end of the line)."""
    if kind == _PRIVATE_KEY:
        begin = text.rfind("-----", 0, start)
        start = begin if begin >= 0 and begin >= start - 32 else start
        close = _KEY_END.search(text, end)
        return start, close.end() if close else len(text)
    while start > 0 and text[start - 1] in _TOKEN:
        start -= 1
    right = _TOKEN_RIGHT.match(text, end)
    return start, (right.end() if right else end)


def credential_kinds(text: str) -> list[str]:
    """The kinds of credential `text` holds (empty: none), e.g. ['AWS Access Key']."""
    kinds = {f.kind for line in text.splitlines() or [text] for f in found_in(line)}
    return sorted(kinds)


def env_kinds(name: str, value: str) -> list[str]:
    """The credential kinds of one `workload.env` entry: its value, and the detector library's
    keyword detector on `NAME="value"` (a password-, key- or secret-named variable)."""
    kinds = credential_kinds(value)
    if value:
        from accelstack.redaction.detectors import keyword

        if any(True for _ in keyword().analyze_string(f'{name}="{value}"')):
            kinds.append("Secret Keyword")
    return sorted(set(kinds))


def masked(value: str) -> str:
    """`value` itself, or `<redacted: KIND>` in its place when it holds a credential."""
    kinds = credential_kinds(value) if value else []
    return f"<redacted: {', '.join(kinds)}>" if kinds else value


def redact(text: str) -> str:
    """`text` as it may be printed: every credential replaced by `<redacted: KIND>` (the whole
    token; a private key's every line). The text keeps its shape otherwise (a JSON document
    stays one), so a document may go through it whole."""
    if not text:
        return text
    out: list[str] = []
    in_key = False
    for line in text.split("\n"):
        if in_key:
            close = _KEY_END.search(line)
            in_key = close is None
            line = f"<redacted: {_PRIVATE_KEY}>" + (line[close.end() :] if close else "")
        else:
            begin = _KEY_BEGIN.search(line)
            in_key = begin is not None and not _KEY_END.search(line, begin.end())
        out.append(_masked_line(line))
    return "\n".join(out)


def bounded(line: str) -> str:
    """`line` with every run of more than RUN_LIMIT non-blank characters shortened: the last
    guard of a one-line message (an error line), never for a document whose shape matters."""
    return _RUN.sub(lambda m: shortened(m.group()), line)


def redact_line(line: str) -> str:
    """An error line as it may be printed: credentials masked, over-long runs shortened."""
    return bounded(redact(line))


def _masked_line(line: str) -> str:
    spans = _merged(found_in(line))
    for start, end, kinds in reversed(spans):
        line = f"{line[:start]}<redacted: {', '.join(sorted(kinds))}>{line[end:]}"
    return line


def _merged(found: list[Found]) -> list[tuple[int, int, set[str]]]:
    merged: list[tuple[int, int, set[str]]] = []
    for f in sorted(found, key=lambda f: (f.start, -f.end)):
        if merged and f.start <= merged[-1][1]:
            start, end, kinds = merged[-1]
            merged[-1] = (start, max(end, f.end), kinds | {f.kind})
        else:
            merged.append((f.start, f.end, {f.kind}))
    return merged
