"""What a purchase option does comes from its row of the purchase table (accelstack/catalog/
purchase_options.yaml, loaded by purchase.py): no module compares an option to its name. The
names that remain in code are the table's identity (the schema's literal and the catalog's row
list), AWS's own enums that happen to be spelled alike (EC2 Fleet's target capacity type, quota
markets, ReservationType, marketType, an instance's lifecycle), preflight's check named
"reservation", and a generated constant. A new string equal to an option name anywhere else
fails here: read the row (`PurchaseOptionFacts`: `interruptible`, `capacity_block`,
`needs_reservation`, ...; `OptionLists.reference`) instead."""

from __future__ import annotations

import ast
from collections import Counter

import pytest

from accelstack.catalog import PURCHASE_OPTIONS

from ..conftest import ROOT
from .test_architecture_resolve import package_files

PACKAGE = ROOT / "accelstack"
#: module -> (most option-name strings it may hold, why)
ALLOWED: dict[str, tuple[int, str]] = {
    "accelstack/catalog/purchase.py": (6, "the table's AWS enums: capacity types, markets"),
    "accelstack/catalog/facts.py": (7, "the row list; the quota codes' market keys"),
    "accelstack/spec/models.py": (7, "the schema's literal and its default option"),
    "accelstack/cli/catalog_names.py": (1, "REFERENCE_OPTION, generated from the table"),
    "accelstack/inventory.py": (1, "EC2 Fleet's target capacity type 'spot' takes SpotOptions"),
    "accelstack/plan/create_before_delete.py": (1, "names a reservation target in a message"),
    "accelstack/plan/lookups.py": (1, "the mock EC2 instance's lifecycle"),
    "accelstack/plan/rules/nodegroups.py": (1, "the launch template's marketType enum"),
    "accelstack/preflight/checks.py": (
        13,
        "the check named 'reservation'; quota markets; EC2 ReservationType",
    ),
}


def option_names(source: str) -> list[tuple[int, str]]:
    """(line, name) of every string constant equal to a purchase option's name, docstrings
    left out."""
    tree = ast.parse(source)
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return sorted(
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and node.value in PURCHASE_OPTIONS
        and id(node) not in docs
    )


def _counts() -> Counter[str]:
    out: Counter[str] = Counter()
    for path in package_files(PACKAGE):
        rel = f"accelstack/{path.relative_to(PACKAGE).as_posix()}"
        out[rel] = len(option_names(path.read_text(encoding="utf-8")))
    return out


@pytest.mark.slow
def test_no_module_branches_on_a_purchase_option_name() -> None:
    counts = _counts()
    over = {rel: n for rel, n in counts.items() if n > ALLOWED.get(rel, (0, ""))[0]}
    assert over == {}, "read the purchase table's row instead of comparing the option's name"
    stale = {rel: (counts[rel], most) for rel, (most, _) in ALLOWED.items() if counts[rel] != most}
    assert stale == {}, "lower the allowance (or drop the entry) when a name goes"


def test_the_scan_sees_a_comparison() -> None:
    source = '"""spot in a docstring is fine"""\nif pool.purchase_option == "spot":\n    pass\n'
    assert option_names(source) == [(2, "spot")]
