"""accelstack/naming.py is the one place for generated names, labels and tags: no other module
or template spells them, and the patterns it documents are the names the program creates."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from accelstack import naming

from .conftest import ROOT

#: Where a label key or a generated-name pattern may not be written out: the code and the
#: templates (the catalog's YAML may name node labels: they are facts read by code).
CODE = [
    *sorted((ROOT / "accelstack").rglob("*.py")),
    *sorted((ROOT / "components").rglob("*.py")),
    *sorted((ROOT / "policies").rglob("*.py")),
    ROOT / "__main__.py",
]
CODE = [p for p in CODE if p != ROOT / "accelstack" / "naming.py"]
TEMPLATES = sorted((ROOT / "templates").glob("*.j2"))

#: What a stray literal looks like: a label or tag key of the stack's namespaces, the
#: managed-by tag, the cache bucket pattern, or a name built from the stack-name prefix.
FORBIDDEN = [
    re.compile(r"accelstack\.io/"),
    re.compile(r"accelstack:stack"),
    re.compile(r"^managed-by$"),
    re.compile(r"-ncc-"),
    re.compile(r"\{(stack\.name|stack_name|self\.name|spec\.name|ctx\.spec\.name)\}-"),
]


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes (prose may describe a name; code may not build one)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def string_literals(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string literal and f-string of a module, docstrings left out."""
    tree = ast.parse(path.read_text(), str(path))
    skip = _docstrings(tree)
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            out.append((node.lineno, ast.unparse(node)[2:-1]))
        elif (
            isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
        ):
            out.append((node.lineno, node.value))
    return out


def stray(texts: list[tuple[int, str]], where: Path) -> list[str]:
    return [f"{where.name}:{n}: {t!r}" for n, t in texts if any(p.search(t) for p in FORBIDDEN)]


@pytest.mark.parametrize("path", CODE, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_label_or_generated_name_outside_naming(path: Path) -> None:
    assert stray(string_literals(path), path) == []


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.name)
def test_templates_receive_labels_from_the_render_context(path: Path) -> None:
    lines = list(enumerate(path.read_text().splitlines(), 1))
    assert [f"{path.name}:{n}: {t}" for n, t in lines if "accelstack.io/" in t] == []


def test_the_scan_catches_a_stray_literal(tmp_path: Path) -> None:
    """The scan is not vacuous: each kind of literal it forbids is found."""
    bad = tmp_path / "bad.py"
    bad.write_text(
        '"""A docstring may say accelstack.io/pool."""\n'
        'A = "accelstack.io/pool"\n'
        'B = {"managed-by": "x"}\n'
        'C = f"{stack.name}-lt"\n'
        'D = f"{x}-ncc-{y}"\n'
    )
    found = sorted({line.split(":")[1] for line in stray(string_literals(bad), bad)})
    assert found == ["2", "3", "4", "5"]


def test_stack_tags_carry_the_identity_tags_first() -> None:
    tags = naming.stack_tags("s", {"team": "a"})
    assert list(tags) == [*naming.IDENTITY_TAG_KEYS, "team"]
    assert naming.stable_tags(tags, "n") == {
        naming.STACK_TAG: "s",
        naming.MANAGED_BY_TAG: naming.MANAGED_BY,
        "Name": "n",
    }


def test_identity_tag_prefixes_cover_the_labels() -> None:
    keys = [naming.POOL_LABEL, naming.EFA_LABEL, naming.STACK_LABEL, naming.STACK_TAG]
    assert all(k.startswith(naming.IDENTITY_TAG_PREFIXES) for k in keys)
