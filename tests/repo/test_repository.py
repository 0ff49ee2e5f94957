"""The repository keeps its own references honest: every path of this repository named in a
comment, docstring, template, catalog file or document exists, and nothing is named after the
ticket it came from (issue numbers, "part A", "defect 3")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ..conftest import ROOT

#: Where repository paths are named: code (comments and docstrings), templates, the catalog,
#: the docs. Golden files are outputs, not references.
SCANNED_DIRS = ("accelstack", "components", "policies", "templates", "tests", "docs", "tools")
SUFFIXES = (".py", ".j2", ".yaml", ".yml", ".md", ".sh", ".toml")
TOP_FILES = ("README.md", "CHANGELOG.md", "Makefile", "pyproject.toml", "__main__.py")


def scanned() -> list[Path]:
    out = [ROOT / f for f in TOP_FILES if (ROOT / f).exists()]
    for d in SCANNED_DIRS:
        for p in sorted((ROOT / d).rglob("*")):
            if p.is_symlink() or not p.is_file() or p.suffix not in SUFFIXES:
                continue
            if "golden" in p.parts or "__pycache__" in p.parts:
                continue
            if any(part.is_symlink() for part in p.relative_to(ROOT).parents if part != Path(".")):
                continue
            out.append(p)
    return out


FILES = scanned()
#: A path into one of the repository's own folders (user spec paths under stacks/ and the CI
#: examples' are examples of the user's tree, not references to ours).
PATH = re.compile(
    r"(?<![\w/.:@-])((?:accelstack|components|templates|tests|docs|policies|tools|bench)"
    r"/[\w./-]*\w)(?![\w\\<{*])"
)
#: A line that names another repository at a commit (`owner/repo@<sha> path`): its paths are
#: that repository's.
UPSTREAM = re.compile(r"[\w.-]+/[\w.-]+@[0-9a-f]{7,}")


def missing_paths(path: Path) -> list[str]:
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if UPSTREAM.search(line) or "github.com" in line:
            continue
        for m in PATH.finditer(line):
            target = m.group(1).rstrip(".")
            if not (ROOT / target).exists():
                out.append(f"{path.relative_to(ROOT)}:{n}: {target}")
    return out


@pytest.mark.slow
def test_every_named_repository_path_exists() -> None:
    problems = [p for f in FILES if f.name != "test_repository.py" for p in missing_paths(f)]
    assert problems == []


def test_the_path_check_finds_a_stale_reference() -> None:
    stale = "see accelstack/cost.py and tests/test_nothing_here.py; accelstack/naming.py is real"
    found = [m.group(1) for m in PATH.finditer(stale) if not (ROOT / m.group(1)).exists()]
    assert found == ["accelstack/cost.py", "tests/test_nothing_here.py"]


#: Ticket words: where a change came from belongs in git history, not in the code.
TICKET = re.compile(r"\bissue[ -]?#?\d+|\bdefect ?\d+|\bpart [AB]\b|\(\d+[AB]\)|_\d+[ab]\b", re.I)


def ticket_words(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8").splitlines()
    return [
        f"{path.relative_to(ROOT)}:{n}: {m.group(0)}"
        for n, line in enumerate(text, 1)
        for m in TICKET.finditer(line)
    ]


@pytest.mark.parametrize("path", [f for f in FILES if f.name != "test_repository.py"], ids=str)
def test_no_ticket_words(path: Path) -> None:
    assert ticket_words(path) == []


def test_test_files_are_named_after_code_not_tickets() -> None:
    names = [p.name for p in (ROOT / "tests").rglob("test_*.py")]
    assert [n for n in names if re.search(r"_\d+[a-z]?\.py$|issue|part_[a-z]\b", n)] == []


def test_the_ticket_check_finds_ticket_words() -> None:
    text = "issue 10 (10B), defect 3, Issue #5, part A, test_rules_10b.py; us-east-1a, 70B model"
    assert [m.group(0) for m in TICKET.finditer(text)] == [
        "issue 10",
        "(10B)",
        "defect 3",
        "Issue #5",
        "part A",
        "_10b",
    ]


def test_the_plan_marker_follows_helpers_and_fixtures() -> None:
    """`make test-fast` skips what plans: found through the module's helpers and fixtures."""
    from tests import conftest, test_naming
    from tests.plan import test_plan, test_rules, test_rules_security

    assert {"preset"} <= conftest._planning_helpers(test_rules)
    assert {"trn1"} <= conftest._planning_helpers(test_rules_security)  # a fixture
    assert "test_golden_plan" in conftest._planning_helpers(test_plan)
    assert conftest._planning_helpers(test_naming) == set()
