"""Round-trip YAML for `accelstack new`/`init`: the clone keeps the source's comments, key
order and flow style (ruamel.yaml), and carries the Neuron settings a retarget to a non-Neuron
type dropped, so a later retarget back to Trainium restores them.

The carried settings live in one header comment, `# accelstack:neuron-settings {json}`, which
`accelstack new` writes and reads back; nothing else in the file changes meaning.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

SCHEMA_LINE = "# yaml-language-server: $schema=../schema/spec.schema.json"
STASH_PREFIX = "# accelstack:neuron-settings "
_CLONED = "# Cloned from "
_STASH_RE = re.compile(r"^# accelstack:neuron-settings (\{.*\})\s*$")


def _yaml() -> YAML:
    y = YAML(typ="rt")
    y.preserve_quotes = True
    y.width = 4096  # never re-wrap a long line
    y.indent(mapping=2, sequence=4, offset=2)  # the presets' style: "  - name: ..."
    return y


def load_roundtrip(path: Path) -> dict[str, Any]:
    """The spec file as a comment-keeping mapping (the file already passed `load_spec`)."""
    data = _yaml().load(path.read_text(encoding="utf-8"))
    return data  # type: ignore[no-any-return]


def _leading(text: str) -> list[str]:
    """The comment lines before the first key."""
    out = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        out.append(line)
    return out


def read_stash(path: Path) -> dict[str, Any]:
    """The Neuron settings an earlier retarget carried in the header, else {}."""
    for line in _leading(path.read_text(encoding="utf-8")):
        m = _STASH_RE.match(line)
        if m:
            try:
                value = json.loads(m.group(1))
            except ValueError:
                return {}
            return value if isinstance(value, dict) else {}
    return {}


def _strip_generated(lines: list[str]) -> list[str]:
    """Drop the header an earlier `new` wrote (schema line, origin, its notes, the stash);
    keep every other comment of the source."""
    out: list[str] = []
    in_notes = False
    for i, line in enumerate(lines):
        leading = all(x.startswith("#") for x in lines[: i + 1])
        if leading and (line == SCHEMA_LINE or line.startswith((_CLONED, STASH_PREFIX))):
            in_notes = line.startswith(_CLONED)
            continue
        if leading and in_notes and line.startswith("# - "):
            continue
        in_notes = False
        out.append(line)
    return out


def dump_with_header(data: dict[str, Any], header: list[str], stash: dict[str, Any]) -> str:
    """The clone's text: our header (+ the stash line), then the YAML with its comments."""
    buf = io.StringIO()
    _yaml().dump(data, buf)
    body = _strip_generated(buf.getvalue().splitlines())
    lines = [SCHEMA_LINE, *header]
    if stash:
        # key order kept: a restore puts mappings back as they were written
        lines.append(STASH_PREFIX + json.dumps(stash, allow_nan=False))
    return "\n".join(lines + body) + "\n"
