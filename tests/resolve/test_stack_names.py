"""Resource names from the Pulumi stack, `aws:region` in stack config.

The program (`accelstack.components.entry.main`, which __main__.py and `accelstack init`
projects call) runs under the plan engine's mocks with the Pulumi stack set per test."""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import pytest

from accelstack.errors import AccelstackError
from accelstack.plan import Plan, run_plan
from accelstack.resolve import Stack, check_region, deployment_name, resolve
from accelstack.spec import load_spec
from tests.conftest import ROOT
from tests.helpers_program import filled_copy

SPEC = ROOT / "stacks" / "trn1-multinode.yaml"
PHYSICAL = ("name", "clusterName", "nodeGroupName", "roleName", "bucket", "namePrefix")


@pytest.fixture(autouse=True)
def _project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The program runs in a project holding the preset with its placeholders filled."""
    filled_copy(SPEC, tmp_path)
    monkeypatch.chdir(tmp_path)


def run_program(pulumi_stack: str, config: dict[str, str]) -> Plan:
    """__main__.py under mocks, with Pulumi stack `pulumi_stack` and the given config."""
    import pulumi

    def program(_: Stack) -> dict[str, Any]:
        pulumi.runtime.set_all_config(
            {
                "accelstack:spec": f"stacks/{SPEC.name}",
                "accelstack:allowUnpinnedAmis": "true",
                **config,
            }
        )
        try:
            runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__")
        finally:
            pulumi.runtime.set_all_config({})
        return {}

    mocked = resolve(load_spec(SPEC), name=pulumi_stack)  # run_plan mocks stack = its name
    return run_plan(mocked, build=program, guard=False)


def physical_names(plan: Plan) -> set[str]:
    return {
        str(r.inputs[k])
        for r in plan.resources
        if r.type.startswith("aws:")  # (Helm releases and Kubernetes objects are per cluster)
        for k in PHYSICAL
        if isinstance(r.inputs.get(k), str)
    }


def test_the_specs_own_stack_keeps_the_specs_names() -> None:
    assert deployment_name("trn1-multinode", "trn1-multinode") == "trn1-multinode"
    plan = run_program("trn1-multinode", {})
    assert any(r.name == "trn1-multinode-cluster" for r in plan.resources)


def test_two_stacks_of_one_spec_have_disjoint_names() -> None:
    dev, prod = run_program("dev", {}), run_program("prod", {})
    dev_logical = {(r.type, r.name) for r in dev.resources}
    prod_logical = {(r.type, r.name) for r in prod.resources}
    assert dev_logical and not dev_logical & prod_logical
    assert any(r.name == "trn1-multinode-dev-cluster" for r in dev.resources)
    dev_physical, prod_physical = physical_names(dev), physical_names(prod)
    assert dev_physical and not dev_physical & prod_physical
    assert len(dev.resources) == len(prod.resources)
    tags = [r.inputs.get("tags") or {} for r in prod.resources]
    assert {t["accelstack:stack"] for t in tags if "accelstack:stack" in t} == {
        "trn1-multinode-prod"
    }


def test_matching_region_is_honoured() -> None:
    plan = run_program("dev", {"aws:region": load_spec(SPEC).region})
    assert plan.resources


def test_conflicting_region_is_refused_before_anything_is_registered() -> None:
    with pytest.raises(AccelstackError) as err:
        run_program("dev", {"aws:region": "eu-west-1"})
    message = str(err.value)
    assert "eu-west-1" in message and load_spec(SPEC).region in message
    assert "\n" not in message


def test_check_region_names_both() -> None:
    spec = load_spec(SPEC)
    check_region(spec, None)
    check_region(spec, spec.region)
    with pytest.raises(AccelstackError, match=r"'eu-west-1'.*'" + spec.region):
        check_region(spec, "eu-west-1")


@pytest.mark.parametrize("bad", ["Prod", "x" * 40, "a_b"])
def test_a_stack_name_that_makes_an_invalid_prefix_is_refused(bad: str) -> None:
    with pytest.raises(AccelstackError, match="choose a shorter stack name"):
        deployment_name("trn1-multinode", bad)
