"""Errors that reach the user as one line each, with the exit code the CLI uses.

Exit codes: 2 = bad input (spec, catalog lookup, impossible combination); 1 = a verdict
(over budget, a failed preflight check, a failed plan). No traceback for either.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from accelstack.redaction import VALUE_LIMIT, bounded, masked
from accelstack.redaction import shortened as shortened  # the one shortener, for messages

EXIT_BAD_INPUT = 2
EXIT_VERDICT = 1


#: What could break a one-line message on a terminal: C0/C1 controls (newline, ESC, NUL),
#: DEL, Unicode line/paragraph separators, and lone surrogates.
_UNSAFE = re.compile("[\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029\\ud800-\\udfff]")


def shown(value: object, limit: int = VALUE_LIMIT) -> str:
    """A user value as it may appear in a message: repr-style, quoted, every control or
    invisible character escaped (so a value cannot forge an extra `error:` line or move the
    cursor), `<redacted: KIND>` in place of a value that holds a credential, shortened to
    `limit` characters by the one shortener (`accelstack.redaction.shortened`)."""
    text = value if isinstance(value, str) else str(value)
    return repr(shortened(masked(text), limit))


def one_line(text: str) -> str:
    """`text` with every character that could start a new line or drive the terminal escaped
    and every over-long run of characters shortened (a last guard for messages built from
    user values)."""
    return bounded(_UNSAFE.sub(lambda m: _escape(m.group()), text))


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def text_problem(value: str) -> str | None:
    """Why `value` cannot be a spec string (control character, lone surrogate), else None."""
    for ch in value:
        code = ord(ch)
        if 0xD800 <= code <= 0xDFFF:
            return f"contains a lone surrogate ({_escape(ch)}), which is not valid Unicode text"
        if ch == "\t":
            continue
        if unicodedata.category(ch) == "Cc" or ch in "\u2028\u2029":
            return (
                f"contains the control character {_escape(ch)}; "
                "spec strings are single lines of printable text"
            )
    return None


def edit_distance(a: str, b: str) -> int:
    """Optimal string alignment distance (insert, delete, substitute, swap neighbours)."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[-1]


def _close(text: str, option: str) -> bool:
    """A suggestion worth making: a few edits away (one per five characters, at least one),
    so `p4d.24xlarge` (another family) never suggests `p5.4xlarge`."""
    return edit_distance(text.lower(), option.lower()) <= max(1, len(text) // 5)


def did_you_mean(value: object, choices: Iterable[str]) -> str:
    """Return "; did you mean 'x'?" for a near miss, else ""."""
    text = str(value)
    options = sorted(set(choices))
    close = [
        o for o in difflib.get_close_matches(text, options, n=3, cutoff=0.6) if _close(text, o)
    ]
    if not close:
        lowered = {o.lower(): o for o in options}
        if text.lower() in lowered:
            close = [lowered[text.lower()]]
        else:
            close = [o for o in options if o.startswith(text) or text.startswith(o)][:1]
    return f"; did you mean '{shortened(close[0])}'?" if close else ""


def allowed(choices: Iterable[str], limit: int = 12) -> str:
    options = sorted(set(choices))
    shown = ", ".join(shortened(o) for o in options[:limit])
    return shown + (f", ... ({len(options)} in all)" if len(options) > limit else "")


class AccelstackError(Exception):
    """Base class: message is what the user sees; exit_code is what the CLI returns."""

    exit_code = EXIT_BAD_INPUT


class CatalogError(AccelstackError):
    """A lookup the catalog cannot answer (unknown type, unknown price, unknown region)."""


class UnknownInstanceType(CatalogError):
    pass


class MissingPrice(CatalogError):
    pass


@dataclass(frozen=True)
class Problem:
    """One validation problem: where (file and YAML path) and what."""

    file: str
    path: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}: {self.path}" if self.path else self.file
        return one_line(f"{where}: {self.message}")


class SpecError(AccelstackError):
    """One or more problems in a spec file; each renders as one line."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


class VerdictError(AccelstackError):
    """A check that ran and said no (budget exceeded, preflight failed)."""

    exit_code = EXIT_VERDICT


class BudgetMissing(AccelstackError):
    """A spec that sets no budget limit and does not say `unlimited` on purpose: bad input
    (exit 2), refused before any price is judged."""
