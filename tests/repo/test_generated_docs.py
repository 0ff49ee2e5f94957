"""Every list the code owns is generated into the docs (accelstack/docs.py, `make docs`): the
spec reference, the deploy rules of docs/plan.md, the instance types of README.md and of the
CLI's help. A rule or a type added without regenerating fails here."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from accelstack import docs
from accelstack.catalog import Catalog
from accelstack.cli import main
from accelstack.cli.catalog_names import ACCELERATED_TYPES, CHEAPEST_OPTIONS, COMPARE_FAMILIES
from accelstack.plan.rules import registry, ruleset
from accelstack.resolve import rules as stack_rules
from accelstack.resolve import ruleset as spec_ruleset
from accelstack.rulebook import RuleSet

from ..conftest import ROOT


def test_every_generated_file_is_current() -> None:
    assert [p.relative_to(ROOT).as_posix() for p in docs.stale()] == [], "run `make docs`"


def test_plan_md_lists_every_deploy_rule() -> None:
    text = (ROOT / "docs" / "plan.md").read_text(encoding="utf-8")
    missing = [r.name for r in ruleset.DEPLOY_RULES if f"| `{r.name}` |" not in text]
    assert missing == []
    assert len(ruleset.DEPLOY_RULES) >= 33


def _stale_names() -> set[str]:
    return {p.relative_to(ROOT).as_posix() for p in docs.stale()}


def _fake_body(plan: object, stack: object) -> Iterator[tuple[str, str]]:
    yield from ()


FAKE = registry.DeployRule("brand-new-rule", "https://example.invalid/doc", "new", _fake_body)


def test_a_deploy_rule_added_without_regenerating_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ruleset, "DEPLOY_RULES", ruleset.DEPLOY_RULES.plus(FAKE))
    assert _stale_names() == {"docs/plan.md"}


def test_a_spec_or_stack_rule_added_without_regenerating_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first, *rest = spec_ruleset.SPEC_RULES
    changed = RuleSet("spec", [dataclasses.replace(first, summary="new"), *rest])
    monkeypatch.setattr(spec_ruleset, "SPEC_RULES", changed)
    assert _stale_names() == {"docs/spec.md"}
    monkeypatch.undo()
    first, *rest = stack_rules.STACK_RULES
    moved = RuleSet("stack", [*rest, dataclasses.replace(first, name="n")])
    monkeypatch.setattr(stack_rules, "STACK_RULES", moved)
    assert _stale_names() == {"docs/spec.md"}


def test_an_instance_type_added_without_regenerating_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A catalog row changes the README's table and the CLI's help constants."""
    bundled = docs._bundled()
    row = bundled.instances["trn2.48xlarge"].model_copy(update={"name": "trn2.96xlarge"})
    grown: Catalog = bundled.model_copy(
        update={"instances": {**bundled.instances, "trn2.96xlarge": row}}
    )
    monkeypatch.setattr(docs, "_bundled", lambda: grown)
    assert _stale_names() == {"README.md", "accelstack/cli/catalog_names.py"}
    assert "`trn2.96xlarge`" in docs.instance_types_table()


def test_the_help_names_every_accelerated_type(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["new", "--help"]) == 0
    out = "".join(capsys.readouterr().out.split())  # rich wraps the help text
    assert all(t in out for t in ACCELERATED_TYPES)
    cpu = [n for n, i in docs._bundled().instances.items() if i.chips == 0]
    assert cpu and not set(cpu) & set(ACCELERATED_TYPES)


def test_check_mode_names_the_stale_file_and_exits_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert docs.main(["docs", "--check"]) == 0
    monkeypatch.setattr(ruleset, "DEPLOY_RULES", ruleset.DEPLOY_RULES.plus(FAKE))
    assert docs.main(["docs", "--check"]) == 1
    assert "docs/plan.md is stale: run `make docs`" in capsys.readouterr().err


def test_a_new_compare_candidate_family_is_in_the_generated_help_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`compare`'s help names the families of its default candidates from the catalog (no list
    typed by hand in the CLI, README or docs/cost.md)."""
    bundled = docs._bundled()
    row = bundled.instances["trn2.48xlarge"].model_copy(update={"name": "trn4.48xlarge"})
    grown: Catalog = bundled.model_copy(
        update={"instances": {**bundled.instances, "trn4.48xlarge": row}}
    )
    assert docs.compare_families(grown) == COMPARE_FAMILIES + "/trn4"
    monkeypatch.setattr(docs, "_bundled", lambda: grown)
    assert "accelstack/cli/catalog_names.py" in _stale_names()
    for path in ("accelstack/cli/cost_cmds.py", "accelstack/cli/lazy.py", "docs/cost.md"):
        assert COMPARE_FAMILIES not in (ROOT / path).read_text(encoding="utf-8"), path


def test_compares_help_names_the_generated_families(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "--help"]) == 0
    out = "".join(capsys.readouterr().out.split())
    assert f"Pricethesameworkon{COMPARE_FAMILIES};" in out
    assert main(["--help"]) == 0
    assert f"Pricethesameworkon{COMPARE_FAMILIES};" in "".join(capsys.readouterr().out.split())


def test_new_cheapest_options_are_generated_from_the_purchase_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`new --options` names the comparable options that need no reservation id, from the
    catalog's purchase table (a new comparable option is a new name in the help)."""
    lists = SimpleNamespace(comparable=("a", "r", "c"), needs_reservation=("r",))
    assert docs.cheapest_options(SimpleNamespace(option_lists=lists)) == ("a", "c")  # type: ignore[arg-type]
    assert ", ".join(docs.cheapest_options(docs._bundled())) == CHEAPEST_OPTIONS
    assert "reservation" not in CHEAPEST_OPTIONS.split(", ")
    assert main(["new", "--help"]) == 0
    out = "".join(c for c in capsys.readouterr().out if not c.isspace() and c != "│")
    assert "from" + CHEAPEST_OPTIONS.replace(" ", "") + ")" in out
    spec_cmds = (ROOT / "accelstack" / "cli" / "spec_cmds.py").read_text(encoding="utf-8")
    assert CHEAPEST_OPTIONS not in spec_cmds
