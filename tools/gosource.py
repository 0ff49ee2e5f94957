"""A small reader of Go source for tools/provider_replacements.py: tokens with their line numbers,
nested into bracket groups, and the composite literals (`T{key: value, ...}`) of Terraform
provider schemas split into their elements. Not a Go parser: enough to walk the schema maps of the
terraform-provider-aws resources (SDKv2 `map[string]*schema.Schema{...}` and Plugin Framework
`schema.Schema{Attributes: ..., Blocks: ...}`) and find the calls that force a replacement."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path

_TOKEN = re.compile(
    r"""(?P<ws>\s+)|(?P<lc>//[^\n]*)|(?P<bc>/\*.*?\*/)
    |(?P<str>"(?:\\.|[^"\\\n])*")|(?P<raw>`[^`]*`)|(?P<rune>'(?:\\.|[^'\\])+')
    |(?P<num>\d[\w.]*)|(?P<id>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)
    |(?P<op>\.\.\.|:=|[{}()\[\],:;&*=!<>+\-/|%^.~])""",
    re.S | re.X,
)
_CLOSE = {"{": "}", "(": ")", "[": "]"}


@dataclass(frozen=True)
class Tok:
    kind: str  # str | raw | rune | num | id | op
    text: str
    line: int


@dataclass
class Group:
    open: str
    line: int
    items: list[Tok | Group] = field(default_factory=list)


Item = Tok | Group


def tokens(text: str) -> list[Tok]:
    out, line, pos = [], 1, 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ValueError(f"line {line}: cannot read {text[pos : pos + 20]!r}")
        kind = m.lastgroup or "op"
        if kind not in ("ws", "lc", "bc"):
            out.append(Tok(kind, m.group(), line))
        line += m.group().count("\n")
        pos = m.end()
    return out


def nest(toks: list[Tok]) -> list[Item]:
    """Tokens with every bracket pair folded into a Group."""
    root = Group("", 0)
    stack = [root]
    for t in toks:
        if t.kind == "op" and t.text in _CLOSE:
            g = Group(t.text, t.line)
            stack[-1].items.append(g)
            stack.append(g)
        elif t.kind == "op" and t.text in _CLOSE.values():
            if len(stack) == 1:  # the index prints one spec of a `var (...)` block and its `)`
                continue
            if _CLOSE[stack[-1].open] != t.text:
                raise ValueError(f"line {t.line}: unbalanced {t.text!r}")
            stack.pop()
        else:
            stack[-1].items.append(t)
    if len(stack) != 1:
        raise ValueError("unbalanced brackets at end of file")
    return root.items


def is_op(item: Item | None, text: str) -> bool:
    return isinstance(item, Tok) and item.kind == "op" and item.text == text


def is_id(item: Item | None, text: str | None = None) -> bool:
    return isinstance(item, Tok) and item.kind == "id" and (text is None or item.text == text)


def split(items: list[Item], sep: str = ",") -> list[list[Item]]:
    """Items split at the top-level separators (groups hold the nested ones); empty parts dropped."""
    parts: list[list[Item]] = [[]]
    for it in items:
        if is_op(it, sep):
            parts.append([])
        else:
            parts[-1].append(it)
    return [p for p in parts if p]


def key_value(element: list[Item]) -> tuple[list[Item], list[Item]]:
    """`key: value` -> (key items, value items); an element without a key: ([], value)."""
    for i, it in enumerate(element):
        if is_op(it, ":"):
            return element[:i], element[i + 1 :]
    return [], element


def fields(group: Group) -> dict[str, list[Item]]:
    """The keyed elements of a struct literal `{Key: value, ...}` by key."""
    out = {}
    for element in split(group.items):
        key, value = key_value(element)
        if len(key) == 1 and isinstance(key[0], Tok):
            out[key[0].text] = value
    return out


def string_value(item: Item) -> str | None:
    if isinstance(item, Tok) and item.kind in ("str", "raw"):
        return item.text[1:-1]
    return None


def first_line(items: list[Item]) -> int:
    for it in items:
        return it.line
    return 0


def walk(items: list[Item]) -> list[Item]:
    """Every item, depth first (groups before their content)."""
    out: list[Item] = []
    for it in items:
        out.append(it)
        if isinstance(it, Group):
            out += walk(it.items)
    return out


def calls(items: list[Item]) -> list[tuple[Tok, Group]]:
    """Every `name(args)` call at any depth: (name token, argument group)."""
    out = []
    for seq in _sequences(items):
        for a, b in itertools.pairwise(seq):
            if is_id(a) and isinstance(b, Group) and b.open == "(":
                assert isinstance(a, Tok)
                out.append((a, b))
    return out


def _sequences(items: list[Item]) -> list[list[Item]]:
    out = [items]
    for it in items:
        if isinstance(it, Group):
            out += _sequences(it.items)
    return out


@dataclass(frozen=True)
class GoFile:
    """One index file: a function (or method) with its package's import aliases."""

    path: Path
    package: str  # github.com/hashicorp/terraform-provider-aws/internal/service/eks
    imports: dict[str, str]  # alias -> import path
    items: list[Item]

    def body(self) -> Group:
        """The function body: the last top-level `{...}` group."""
        groups = [g for g in self.items if isinstance(g, Group) and g.open == "{"]
        if not groups:
            raise ValueError(f"{self.path}: no function body")
        return groups[-1]


def read(path: Path) -> GoFile:
    text = path.read_text(encoding="utf-8")
    head, _, rest = text.partition("\n")
    package = head.removeprefix("package ").strip()
    items = nest(tokens("\n" + rest))  # the package line keeps its number, not its path
    imports = {}
    for i, it in enumerate(items[:-1]):
        nxt = items[i + 1]
        if is_id(it, "import") and isinstance(nxt, Group):
            imports = _imports(nxt)
    return GoFile(path, package, imports, items)


def _imports(group: Group) -> dict[str, str]:
    out, alias = {}, None
    for it in group.items:
        if isinstance(it, Tok) and it.kind == "id":
            alias = it.text
        elif isinstance(it, Tok) and it.kind == "str":
            path = it.text[1:-1]
            out[alias or path.rsplit("/", 1)[-1]] = path
            alias = None
    return out
