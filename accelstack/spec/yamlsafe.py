"""A hardened YAML reader for specs: what PyYAML would accept silently, refused with one line.

PyYAML reads YAML 1.1 and keeps the last of two equal keys, so a second `budget:` wins without a
word, `1:16` becomes 76 (base 60), `071474` an octal number and `on`/`yes`/`no` booleans.
Aliases can multiply a few lines into megabytes, and deep nesting recurses until Python gives
up. `load_yaml_text` refuses all of these before the document reaches the models:

- documents larger than MAX_DOCUMENT_BYTES, nesting deeper than MAX_DEPTH (counted while
  composing, so no RecursionError however deep the input is);
- anchors, aliases and merge keys (`<<`): a spec has no use for them;
- duplicate keys at any depth (the message names both lines);
- plain scalars that YAML 1.1 reads as something else than they look: sexagesimal numbers,
  leading-zero octal, and yes/no/on/off booleans.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from accelstack.errors import shown

#: Largest spec file accepted, in bytes (presets are about 2 KiB).
MAX_DOCUMENT_BYTES = 256 * 1024
#: Deepest nesting of mappings and lists accepted (presets use 4).
MAX_DEPTH = 32

_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_MERGE = "tag:yaml.org,2002:merge"
_SEXAGESIMAL = re.compile(r"^[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?$")
_OCTAL = re.compile(r"^[-+]?0[0-9_]+$")


class YamlRefused(Exception):
    """Raised with (YAML path, message); the loader turns it into one Problem."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


def _line(node: Node | Any) -> int:
    return int(node.start_mark.line) + 1


class _SpecLoader(yaml.SafeLoader):
    """SafeLoader that counts nesting while composing and refuses anchors and aliases."""

    depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        if self.check_event(AliasEvent):
            raise YamlRefused(
                "", f"line {_line(event)}: YAML aliases (*{event.anchor}) are not allowed in a spec"
            )
        if getattr(event, "anchor", None):
            raise YamlRefused(
                "", f"line {_line(event)}: YAML anchors (&{event.anchor}) are not allowed in a spec"
            )
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise YamlRefused(
                "",
                f"line {_line(event)}: nesting is deeper than the {MAX_DEPTH} levels a spec may use",
            )
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


#: Exponent floats PyYAML (YAML 1.1) reads as text but YAML 1.2 and ruamel (the `new`/`init`
#: editor) read as numbers: `1e3`, `1E3`, `2.5e9`, `.5e-3`. Read as floats here too, so every
#: parser of a spec reads one scalar the same way.
_EXP_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$")
_SpecLoader.add_implicit_resolver(_FLOAT, _EXP_FLOAT, list("-+0123456789."))


def _child(path: str, key: object) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def _scalar_problem(node: ScalarNode) -> str | None:
    """Why a plain scalar must be quoted or rewritten, or None when it reads as it looks."""
    if node.style is not None:  # quoted or block scalars are strings
        return None
    value = node.value
    if node.tag == _MERGE:
        return f"{shown(value)} is a YAML merge key; quote it if it is text"
    if node.tag in (_INT, _FLOAT) and _SEXAGESIMAL.match(value):
        return (
            f"{shown(value)} is a base-60 number in YAML 1.1; quote it if it is text "
            "or write the number in decimal"
        )
    if node.tag == _INT and _OCTAL.match(value):
        return (
            f"{shown(value)} is an octal number in YAML 1.1; quote it if it is text "
            "or write the number without leading zeros"
        )
    if node.tag == _BOOL and value.lower() not in ("true", "false"):
        return (
            f"{shown(value)} is a boolean in YAML 1.1; quote it if it is text or write true/false"
        )
    return None


def _key_text(node: Node) -> str:
    return node.value if isinstance(node, ScalarNode) else f"<{type(node).__name__}>"


def _check_mapping(node: MappingNode, path: str, todo: list[tuple[Node, str]]) -> None:
    seen: dict[str, int] = {}
    for key, value in node.value:
        if key.tag == _MERGE:
            raise YamlRefused(path, f"line {_line(key)}: merge keys (<<) are not allowed in a spec")
        text = _key_text(key)
        if text in seen:
            raise YamlRefused(
                _child(path, text),
                f"duplicate key {shown(text)} (lines {seen[text]} and {_line(key)}); "
                "YAML keeps only the last one: remove or merge one of them",
            )
        seen[text] = _line(key)
        todo.append((key, path))
        todo.append((value, _child(path, text)))


def check_nodes(root: Node) -> None:
    """Walk the composed document (iteratively) for duplicate keys and ambiguous scalars."""
    todo: list[tuple[Node, str]] = [(root, "")]
    while todo:
        node, path = todo.pop()
        if isinstance(node, MappingNode):
            _check_mapping(node, path, todo)
        elif isinstance(node, SequenceNode):
            todo.extend((item, _child(path, i)) for i, item in enumerate(node.value))
        elif isinstance(node, ScalarNode):
            problem = _scalar_problem(node)
            if problem:
                raise YamlRefused(path, problem)


def load_yaml_text(text: str) -> Any:
    """Parse one spec document; raises YamlRefused or yaml.YAMLError."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_DOCUMENT_BYTES:
        raise YamlRefused(
            "", f"is {size:,} bytes; a spec may be at most {MAX_DOCUMENT_BYTES:,} bytes"
        )
    loader = _SpecLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        check_nodes(root)
        return loader.construct_document(root)
    finally:
        loader.dispose()
