"""The catalog package's face (accelstack/catalog/__init__.py): it defines nothing and only
re-exports; the fact models, the `Catalog` and its loading live in their own modules, and no
module of the package imports back from the package namespace (which would run the face, and
with it every module, while the package is still being imported)."""

from __future__ import annotations

import ast

import accelstack.catalog as face

from ..conftest import ROOT

PACKAGE = ROOT / "accelstack" / "catalog"
NAME = "accelstack.catalog"


def back_imports(source: str) -> list[str]:
    """The statements of a module that import from the package namespace itself."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == NAME:
            found.append(f"line {node.lineno}: from {NAME} import ...")
        elif isinstance(node, ast.ImportFrom) and node.level == 1 and node.module is None:
            found.append(f"line {node.lineno}: from . import ...")
        elif isinstance(node, ast.Import):
            found += [f"line {node.lineno}: import {NAME}" for a in node.names if a.name == NAME]
    return found


def definitions(source: str) -> list[str]:
    """What a face must not hold: any statement but its docstring, imports and `__all__`."""
    out = []
    for i, node in enumerate(ast.parse(source).body):
        docstring = i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        all_ = isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == [
            "__all__"
        ]
        if not (docstring or all_ or isinstance(node, ast.ImportFrom | ast.Import)):
            out.append(f"line {node.lineno}: {ast.unparse(node).splitlines()[0]}")
    return out


def test_no_catalog_module_imports_back_from_its_package() -> None:
    modules = sorted(p for p in PACKAGE.glob("*.py") if p.name != "__init__.py")
    assert len(modules) > 10
    found = {p.name: back_imports(p.read_text(encoding="utf-8")) for p in modules}
    assert {name: f for name, f in found.items() if f} == {}


def test_the_face_defines_nothing_and_exports_what_it_imports() -> None:
    source = (PACKAGE / "__init__.py").read_text(encoding="utf-8")
    assert definitions(source) == []
    imported = {
        a.asname or a.name
        for node in ast.parse(source).body
        if isinstance(node, ast.ImportFrom)
        for a in node.names
    }
    assert set(face.__all__) == imported
    assert face.Catalog.__module__ == "accelstack.catalog.model"
    assert face.load_catalog.__module__ == "accelstack.catalog.load"


def test_the_checks_see_a_planted_back_import_and_definition() -> None:
    planted = "from accelstack.catalog import Catalog\nimport accelstack.catalog\nfrom . import x\n"
    assert len(back_imports(planted)) == 3
    assert back_imports("from accelstack.catalog.model import Catalog\n") == []
    assert definitions('"""doc"""\nfrom a import b\n__all__ = ["b"]\nX = 1\n') == ["line 4: X = 1"]
