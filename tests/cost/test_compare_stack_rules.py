"""compare runs the stack rules on each candidate (accelstack/cost/compare.py `_buyable`): an
option whose candidate stack a stack rule refuses is labelled with the rule's path and message
and never ranked, as `resolve` would refuse the spec `new` writes for it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import yaml

from accelstack.catalog import load_catalog
from accelstack.cost.compare import compare
from accelstack.resolve import Stack, resolve
from accelstack.resolve import rules as stack_rules
from accelstack.resolve.rules import Finding, stack_rule
from accelstack.spec import parse_spec

from ..conftest import STACKS


@stack_rule("test-no-trn2-on-demand", "refuses on-demand trn2 for the test")
def _no_trn2_on_demand(stack: Stack) -> Iterator[Finding]:
    pool = stack.workload_pool
    if pool.instance_type == "trn2.48xlarge" and pool.purchase_option == "on-demand":
        yield ("pools[0].instance_type", "on-demand trn2 is refused for the test")


def _p5() -> Stack:
    cat = load_catalog()
    data = yaml.safe_load((STACKS / "llama3-70b-p5.yaml").read_text())
    return resolve(parse_spec(data, "llama3-70b-p5.yaml"), cat)


def test_a_candidate_option_a_stack_rule_refuses_is_labelled_and_not_ranked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stack = _p5()
    before = compare(stack, ["trn2.48xlarge", "p5.48xlarge"], options=["on-demand"])
    assert before.candidates[0].available and before.candidates[0].refused == ()
    monkeypatch.setattr(
        stack_rules, "STACK_RULES", stack_rules.STACK_RULES.plus(_no_trn2_on_demand)
    )
    cmp = compare(stack, ["trn2.48xlarge", "p5.48xlarge"], options=["on-demand", "capacity-block"])
    trn2, p5 = cmp.candidates
    line = "on-demand: stack rule: pools[0].instance_type: on-demand trn2 is refused for the test"
    assert trn2.refused == (line,)
    assert [o.option for o in trn2.options] == ["capacity-block"]
    assert [o.option for o in p5.options] == ["on-demand", "capacity-block"]
    assert (cmp.cheapest is None) or (cmp.cheapest.instance_type, cmp.cheapest.option) != (
        "trn2.48xlarge",
        "on-demand",
    )


def test_a_candidate_every_option_of_which_is_refused_is_not_available(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        stack_rules, "STACK_RULES", stack_rules.STACK_RULES.plus(_no_trn2_on_demand)
    )
    (trn2,) = compare(_p5(), ["trn2.48xlarge"], options=["on-demand"]).candidates
    assert not trn2.available and trn2.reason is not None
    assert trn2.reason.endswith("on-demand trn2 is refused for the test")
