"""Mixed Neuron stacks: UltraServer pools get devices from the Neuron DRA driver, other Neuron
pools from the device plugin, and the pinned Neuron chart refuses both in one release (its own
config check). `validate` refuses such a stack in one line; the deploy rule
`chart-config-checks` holds every device-plugin release to the chart's checks (catalog
charts.<chart>.config_checks, with the source)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from accelstack.catalog import load_catalog
from accelstack.cli import main
from accelstack.errors import SpecError
from accelstack.plan.rules import evaluate
from accelstack.resolve import resolve, resolve_unchecked
from accelstack.spec import parse_spec, read_yaml

from ..conftest import STACKS
from ..helpers_plan import plan_stack

RELEASE = "kubernetes:helm.sh/v3:Release"
OPEN_BUDGET = {"max_hourly_usd": 1e9, "max_monthly_usd": 1e12, "max_run_usd": 1e12}


TRN2U_PRICE = {
    "region": "ap-south-2",
    "type": "trn2u.48xlarge",
    "option": "capacity-block",
    "usd": 1.0,
    "as_of": "2026-11",
    "estimate": True,
    "source": "user-supplied rate (test overlay)",
}


@pytest.fixture(scope="module")
def overlay(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A catalog overlay with a user-supplied trn2u Capacity Block rate (the bundled catalog
    has none: prices fail closed) and one for the plain trn2 pool beside it, made as tests/catalog/test_overlay.py makes overlays."""
    d = tmp_path_factory.mktemp("overlay")
    trn2 = {**TRN2U_PRICE, "type": "trn2.48xlarge", "option": "on-demand"}
    (d / "prices.yaml").write_text(yaml.safe_dump({"instances": [TRN2U_PRICE, trn2]}))
    return d


@pytest.fixture(scope="module")
def ultra_catalog(overlay: Path) -> Any:
    return load_catalog(overlay=overlay)


def mixed(extra_pool: bool = True) -> dict[str, Any]:
    """8 trn2u.48xlarge (two UltraServers) on a Capacity Block, plus 2 plain trn2.48xlarge."""
    data = copy.deepcopy(read_yaml(STACKS / "llama3-70b-trn2.yaml"))
    data["region"], data["availability_zone"] = "ap-south-2", None
    data["budget"] = dict(OPEN_BUDGET)
    data["pools"][0].update(
        nodes=8,
        instance_type="trn2u.48xlarge",
        purchase={"option": "capacity-block", "reservation_id": "cr-0a1b2c3d4e5f67890"},
    )
    if extra_pool:
        data["pools"].append({"name": "trn2b", "instance_type": "trn2.48xlarge", "nodes": 2})
    return data


def test_a_mixed_neuron_stack_is_refused_in_one_line(ultra_catalog: Any) -> None:
    spec = parse_spec(mixed(), "llama3-70b-trn2.yaml")
    with pytest.raises(SpecError) as err:
        resolve(spec, ultra_catalog)
    (problem,) = err.value.problems
    assert problem.path == "pools[1].instance_type"
    assert "trn2.48xlarge gets its neuron devices from the device plugin" in problem.message
    assert "UltraServer pool 'trn2' (trn2u.48xlarge) needs the DRA driver" in problem.message
    assert "put this pool in another stack" in problem.message
    assert "\n" not in problem.message


def test_validate_refuses_it_exit_2(
    overlay: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "llama3-70b-trn2.yaml"
    f.write_text(yaml.safe_dump(mixed(), sort_keys=False))
    code = main(["--catalog", str(overlay), "validate", str(f)])
    _, err = capsys.readouterr()
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "pools[1].instance_type" in err and "needs the DRA driver" in err


def test_the_deploy_rule_catches_one_release_with_both(ultra_catalog: Any) -> None:
    """Past the stack rule (resolve_unchecked), the program's one Neuron release enables the
    DRA driver and leaves the device plugin on: the deploy rule names it and the source."""
    spec = parse_spec(mixed(), "llama3-70b-trn2.yaml")
    stack = resolve_unchecked(spec, ultra_catalog)
    plan = plan_stack(stack, guard=False)
    found = [v for v in evaluate(plan, stack) if v.rule == "chart-config-checks"]
    (v,) = found
    assert "values set draDriver.enabled with devicePlugin.enabled" in v.message
    assert "Validation Rules" in v.message
    # an UltraServer-only stack passes: the device plugin is off in its release
    alone = resolve(parse_spec(mixed(False), "llama3-70b-trn2.yaml"), ultra_catalog)
    assert [
        v
        for v in evaluate(plan_stack(alone, guard=False), alone)
        if v.rule == "chart-config-checks"
    ] == []


def test_every_check_of_the_chart_is_applied() -> None:
    """The rule reads the catalog's checks with the chart's defaults: each check fires on the
    values that break it and not on the chart's defaults."""
    from accelstack.plan.rules.plugins import _effective

    chart = load_catalog().charts["neuron"]
    assert {c.key for c in chart.config_checks} == {
        "draDriver.enabled",
        "scheduler.enabled",
        "scheduler.customScheduler.enabled",
    }
    assert _effective({}, chart, "devicePlugin.enabled") is True  # the chart's default
    assert _effective({"devicePlugin": {"enabled": False}}, chart, "devicePlugin.enabled") is False
    assert _effective({}, chart, "draDriver.enabled") is False
