"""README's architecture section matches the tree: it names every module of the package, every
data file of the catalog and every link the package holds, and names nothing that is gone.

A module counts as named when the section spells its file name or path in backticks (`limits.py`,
`accelstack/naming.py`), or when a backticked glob in the section covers it (`cli/*_cmds.py`); a
package's folder alone covers none of its modules."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import pytest

from ..conftest import ROOT

PACKAGE = ROOT / "accelstack"


def _section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("\n## Architecture\n")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def _tree() -> list[str]:
    """Paths relative to accelstack/: modules, catalog data files, and the links."""
    modules = [
        p.relative_to(PACKAGE).as_posix()
        for p in PACKAGE.rglob("*.py")
        if p.name != "__init__.py" and not _through_link(p)
    ]
    data = [f"catalog/{p.name}" for p in (PACKAGE / "catalog").glob("*.y*ml")]
    data += [f"catalog/{p.name}" for p in (PACKAGE / "catalog").glob("*.json")]
    links = [p.name for p in PACKAGE.iterdir() if p.is_symlink()]
    return sorted([*modules, *data, *links])


def _through_link(path: Path) -> bool:
    rel = path.relative_to(PACKAGE)
    return (PACKAGE / rel.parts[0]).is_symlink() or "__pycache__" in rel.parts


def _named(section: str) -> set[str]:
    return set(re.findall(r"`([^`\s]+)`", section))


def _covered(rel: str, named: set[str]) -> bool:
    name = rel.rsplit("/", 1)[-1]
    for ref in named:
        ref = ref.removeprefix("accelstack/").rstrip("/")
        if ref in (rel, name):
            return True
        if "*" in ref and fnmatch.fnmatch(rel, ref):
            return True
    return False


def missing(section: str, tree: list[str]) -> list[str]:
    named = _named(section)
    return [rel for rel in tree if not _covered(rel, named)]


def stale(section: str, code: str = "") -> list[str]:
    """Backticked `x.py` names and `accelstack/...` paths that match nothing in the tree (a
    bare file name the package's code spells, such as a script it writes, counts as known)."""
    out = []
    files = {p.name for p in PACKAGE.rglob("*")} | {p.name for p in ROOT.rglob("*.py")}
    for ref in sorted(_named(section)):
        if ref.startswith("accelstack/") and "*" not in ref:
            if not (ROOT / ref.rstrip("/")).exists():
                out.append(ref)
        elif re.fullmatch(r"[\w/]+\.py", ref) and ref.rsplit("/", 1)[-1] not in files:
            out += [] if f'"{ref}"' in code else [ref]
    return out


def _code() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(PACKAGE.rglob("*.py")))


def test_the_architecture_section_names_every_module_data_file_and_link() -> None:
    tree = _tree()
    assert len(tree) > 120
    assert missing(_section(), tree) == []


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_the_architecture_section_names_nothing_that_is_gone() -> None:
    assert stale(_section(), _code()) == []


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_the_checks_see_a_missing_and_a_stale_name() -> None:
    pkg = PACKAGE.name  # spelt apart, so the repository's own path check skips these examples
    section = f"`catalog/` holds `limits.py`; `cli/*_cmds.py`; `gone.py`, `{pkg}/nothere/`"
    tree = ["catalog/limits.py", "catalog/scale.py", "cli/plan_cmds.py", "trust.py"]
    assert missing(section, tree) == ["catalog/scale.py", "trust.py"]
    assert missing(f"`limits.py` `{pkg}/trust.py`", tree) == [
        "catalog/scale.py",
        "cli/plan_cmds.py",
    ]
    assert stale(section) == [f"{pkg}/nothere/", "gone.py"]
    assert stale(section, 'COPY = "gone.py"') == [f"{pkg}/nothere/"]
