"""Text as the detectors read it: invisible characters taken out (and mapped back), and the
base64 runs a credential may hide in, decoded.

A token split by a zero-width space (U+200B), a word joiner, a soft hyphen or any other
format or control character (Unicode categories Cf and Cc) reads as one token to whoever
copies it, and so it is one here; so is the same character written as an escape (`\\u200b`,
`\\x00`, `\\n`), which is how `repr` (and therefore every echoed value) shows it. A value that
is base64 of a credential (`echo -n hf_... | base64`) is decoded and read again.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

#: An escaped character as `repr` writes one (\\xNN, \\uNNNN, \\UNNNNNNNN) or \\n \\r \\t.
_ESCAPE = re.compile(r"\\(?:x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|([nrt]))")

#: Base64 (standard or URL-safe alphabet) long enough to carry a token: 16 characters encode
#: 12 bytes; the shortest prefixed token this package detects is longer than that.
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{16,}={0,2}(?![A-Za-z0-9+/=_-])")


@dataclass(frozen=True)
class Normalized:
    """`text` without invisible characters; `origin[i]` is where its i-th character stands in
    the original line (one past the end included, for spans that end there)."""

    text: str
    origin: tuple[int, ...]

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The original line's span of this text's [start, end)."""
        return self.origin[start], self.origin[end - 1] + 1 if end > start else self.origin[start]


def _invisible(ch: str) -> bool:
    return unicodedata.category(ch) in ("Cf", "Cc") and ch != "\n"


def _escaped_invisible(match: re.Match[str]) -> bool:
    if match.group(4):
        return True
    code = int(next(g for g in match.groups()[:3] if g), 16)
    return code <= 0x10FFFF and _invisible(chr(code))


def normalized(line: str) -> Normalized:
    """`line` with every invisible character and every escape of one removed."""
    keep: list[int] = []
    escapes = {m.start(): m.end() for m in _ESCAPE.finditer(line) if _escaped_invisible(m)}
    i = 0
    while i < len(line):
        if i in escapes:
            i = escapes[i]
        elif _invisible(line[i]):
            i += 1
        else:
            keep.append(i)
            i += 1
    if len(keep) == len(line):
        return Normalized(line, (*range(len(line)), len(line)))
    return Normalized("".join(line[i] for i in keep), (*keep, len(line)))


def base64_runs(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, decoded text) of every base64 run of `text` that decodes to UTF-8 text."""
    for match in _BASE64.finditer(text):
        decoded = _decode(match.group())
        if decoded is not None:
            yield match.start(), match.end(), decoded


def _decode(run: str) -> str | None:
    raw = run.rstrip("=")
    padded = raw + "=" * (-len(raw) % 4)
    alphabet = b"-_" if ("-" in raw or "_" in raw) else None
    try:
        data = base64.b64decode(padded, altchars=alphabet, validate=True)
        text = data.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    text = text.rstrip("\n")  # `echo token | base64` encodes the newline too
    return text if text.isprintable() else None
