"""CrossGuard policies, called directly with fake args (PolicyPack is never constructed)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from accelstack.catalog import load_catalog
from accelstack.cost.pricing import price_resources, price_stack
from accelstack.inventory import billables
from accelstack.plan.rules import security
from accelstack.resolve import resolve
from accelstack.spec import load_spec
from policies import budget_policies as bp

from .. import factories
from ..conftest import STACKS


@dataclass
class FakeParent:
    name: str


@dataclass
class FakeResource:
    resource_type: str
    props: dict[str, Any]
    name: str
    parent: FakeParent | None = None
    urn: str = ""


@dataclass
class StackArgs:
    resources: list[FakeResource]
    config: Mapping[str, Any] = field(default_factory=dict)

    def get_config(self) -> Mapping[str, Any]:
        return self.config


@dataclass
class ResourceArgs:
    resource_type: str
    props: dict[str, Any]
    name: str = "r"
    urn: str = "urn:pulumi:dev::accelstack::r"

    def get_config(self) -> Mapping[str, Any]:
        return {}


def run(policy: Any, args: Any) -> list[str]:
    out: list[str] = []
    policy.validate(args, lambda msg, urn=None: out.append(msg))
    return out


def preset_resources(name: str) -> tuple[list[FakeResource], float]:
    stack = resolve(load_spec(STACKS / f"{name}.yaml"))
    res = [
        FakeResource(r.type, dict(r.inputs), r.name, FakeParent(r.parent) if r.parent else None)
        for r in billables(stack)
    ]
    return res, price_stack(stack).hourly_usd


def test_policy_objects_are_named_and_mandatory() -> None:
    names = [p.name for p in bp.POLICIES]
    assert names[0] == "accelstack-budget" and len(set(names)) == len(names)
    assert all(p.enforcement_level.value == "mandatory" for p in bp.POLICIES)  # type: ignore[union-attr]
    assert bp.budget.config_schema is not None
    assert bp.budget.config_schema.required == []  # the spec gives the budget
    assert "max_hourly_usd" in bp.budget.config_schema.properties


def test_budget_within_limits_passes() -> None:
    res, hourly = preset_resources("llama3-70b-trn2")
    cfg = {
        "region": "us-east-2",
        "max_hourly_usd": 700,
        "max_monthly_usd": 500_000,
        "max_run_usd": 300_000,
        "run_hours": 435.5,
    }
    assert run(bp.budget, StackArgs(res, cfg)) == []
    assert 500 < hourly < 700


def test_budget_over_hourly_and_run_is_reported() -> None:
    res, _ = preset_resources("llama3-70b-trn2")
    cfg = {"region": "us-east-2", "max_hourly_usd": 500, "max_run_usd": 100_000, "run_hours": 435.5}
    msgs = run(bp.budget, StackArgs(res, cfg))
    # config-only limits price without the spec: the checkpoint bucket at the catalog's
    # usage assumption instead of the training state
    stack = resolve(load_spec(STACKS / "llama3-70b-trn2.yaml"))
    hourly = price_resources(billables(stack), load_catalog(), "us-east-2").hourly_usd
    assert len(msgs) == 2
    assert msgs[0].startswith(f"hourly ${hourly:,.2f} exceeds max_hourly_usd $500.00")
    assert msgs[1].startswith("training run $") and "max_run_usd $100,000.00" in msgs[1]


def test_budget_pool_options_from_config() -> None:
    res, hourly = preset_resources("llama3-70b-trn2")
    base = {"region": "us-east-2", "max_hourly_usd": 400}
    assert run(bp.budget, StackArgs(res, base))  # on demand: ~575/h
    cheaper = {**base, "pool_options": {"trn2": "savings-plan-3y"}}
    assert run(bp.budget, StackArgs(res, cheaper)) == []  # 16 x 16.092 + the rest


def test_budget_fails_closed_on_unpriceable_resources() -> None:
    res, _ = preset_resources("trn1-multinode")
    res.append(FakeResource("aws:rds/instance:Instance", {"instanceClass": "db.r6g.large"}, "db"))
    msgs = run(bp.budget, StackArgs(res, {"region": "us-west-2", "max_hourly_usd": 1e9}))
    assert len(msgs) == 1 and "aws:rds/instance:Instance" in msgs[0] and "us-west-2" in msgs[0]
    # a region without prices for the type is refused too, never $0
    res2, _ = preset_resources("llama3-70b-trn2")
    msgs2 = run(bp.budget, StackArgs(res2, {"region": "us-east-1", "max_hourly_usd": 1e9}))
    assert len(msgs2) == 1 and "trn2.48xlarge in us-east-1" in msgs2[0]


def test_budget_run_limit_needs_run_hours() -> None:
    res, _ = preset_resources("trn1-finetune")
    msgs = run(bp.budget, StackArgs(res, {"region": "us-east-1", "max_run_usd": 10}))
    assert msgs == ["max_run_usd is set but run_hours is not: cannot check the run cost"]


@pytest.mark.parametrize(
    ("rtype", "props", "bad"),
    [
        (
            "aws:ec2/securityGroup:SecurityGroup",
            {"ingress": [{"cidrBlocks": ["0.0.0.0/0"], "fromPort": 22}]},
            True,
        ),
        (
            "aws:ec2/securityGroup:SecurityGroup",
            {
                "ingress": [{"cidrBlocks": ["10.0.0.0/8"]}],
                "egress": [{"cidrBlocks": ["0.0.0.0/0"]}],
            },
            False,
        ),
        ("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", {"cidrIpv6": "::/0"}, True),
        (
            "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
            {"referencedSecurityGroupId": "sg-1"},
            False,
        ),
        (
            "aws:ec2/securityGroupRule:SecurityGroupRule",
            {"type": "ingress", "cidrBlocks": ["0.0.0.0/0"]},
            True,
        ),
        (
            "aws:ec2/securityGroupRule:SecurityGroupRule",
            {"type": "egress", "cidrBlocks": ["0.0.0.0/0"]},
            False,
        ),
    ],
)
def test_no_open_ingress(rtype: str, props: dict[str, Any], bad: bool) -> None:
    msgs = run(bp.no_open_ingress, ResourceArgs(rtype, props, "sg"))
    assert bool(msgs) is bad
    if bad:
        assert "whole internet" in msgs[0]


@pytest.mark.parametrize(
    ("props", "bad"),
    [
        ({"metadataOptions": {"httpTokens": "required", "httpPutResponseHopLimit": 2}}, False),
        ({"metadataOptions": {"httpTokens": "optional"}}, True),
        ({}, True),
    ],
)
def test_imdsv2_required(props: dict[str, Any], bad: bool) -> None:
    for rtype in ("aws:ec2/launchTemplate:LaunchTemplate", "aws:ec2/instance:Instance"):
        assert bool(run(bp.imdsv2_required, ResourceArgs(rtype, props, "lt"))) is bad
    assert run(bp.imdsv2_required, ResourceArgs("aws:ec2/vpc:Vpc", {})) == []


def test_imdsv2_instance_defers_to_its_launch_template() -> None:
    inst = "aws:ec2/instance:Instance"
    lt = {"launchTemplate": {"name": "x-lt", "version": "1"}}
    assert run(bp.imdsv2_required, ResourceArgs(inst, lt)) == []
    override = {**lt, "metadataOptions": {"httpTokens": "optional"}}
    assert run(bp.imdsv2_required, ResourceArgs(inst, override)) != []


def test_s3_public_access_block() -> None:
    rtype = "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"
    full = dict.fromkeys(security.PAB_FIELDS, True)
    assert run(bp.s3_public_access_block, ResourceArgs(rtype, full, "pab")) == []
    msgs = run(
        bp.s3_public_access_block,
        ResourceArgs(rtype, {**full, "restrictPublicBuckets": False}, "pab"),
    )
    assert msgs == ["pab: public access block must set restrictPublicBuckets to true"]


def test_every_bucket_needs_a_block() -> None:
    bucket = FakeResource("aws:s3/bucket:Bucket", {}, "cache")
    pab = FakeResource("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock", {}, "pab")
    assert run(bp.s3_buckets_blocked, StackArgs([bucket])) != []
    assert run(bp.s3_buckets_blocked, StackArgs([bucket, pab])) == []


# --- the budget from the stack's spec at preview time (no hand-kept policy config) ---


@pytest.fixture
def preview_of(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Set what the analyzer sees at preview: PULUMI_STACK and the stack's config."""
    import pulumi

    def set_stack(stack: str, config: dict[str, str] | None = None) -> None:
        monkeypatch.setenv("PULUMI_STACK", stack)
        pulumi.runtime.set_all_config(config or {})

    yield set_stack
    pulumi.runtime.set_all_config({})


def test_budget_from_the_spec_named_after_the_stack(
    preview_of: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the pack finds stacks/ beside policies/ from any directory
    preview_of("llama3-70b-trn2")
    res, _ = preset_resources("llama3-70b-trn2")
    assert run(bp.budget, StackArgs(res)) == []  # the preset is within its own budget
    over, _ = preset_resources("llama3-70b-p5")  # H100s priced against the trn2 spec's budget
    msgs = run(bp.budget, StackArgs(over))
    assert len(msgs) == 1 and msgs[0].startswith("llama3-70b-trn2 is over budget")


def test_budget_from_config_accelstack_spec_reports_the_specs_limits(
    preview_of: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import yaml

    data = factories.preset("llama3-70b-trn2")
    data["name"] = "tight"
    data["budget"]["max_hourly_usd"] = 100
    spec = tmp_path / "tight.yaml"
    spec.write_text(yaml.safe_dump(data))
    monkeypatch.chdir(tmp_path)
    preview_of("dev", {"accelstack:spec": "tight.yaml"})
    res, hourly = preset_resources("llama3-70b-trn2")
    msgs = run(bp.budget, StackArgs(res))
    assert len(msgs) == 1
    assert msgs[0].startswith("tight-dev is over budget: hourly $")
    assert "exceeds budget.max_hourly_usd $100.00" in msgs[0]


def test_budget_without_a_spec_is_refused(preview_of: Any) -> None:
    preview_of("no-such-stack")
    res, _ = preset_resources("trn1-finetune")
    msgs = run(bp.budget, StackArgs(res))
    assert len(msgs) == 1 and msgs[0].startswith("cannot check this stack's budget")
    assert "no-such-stack.yaml" in msgs[0]


def test_budget_holds_every_stack_to_the_organisation_ceiling(
    preview_of: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    preview_of("llama3-70b-trn2")
    res, _ = preset_resources("llama3-70b-trn2")
    ceiling = tmp_path / "org.yaml"
    ceiling.write_text("max_hourly_usd: 100\n")
    msgs = run(bp.budget, StackArgs(res, {"ceiling": str(ceiling)}))
    assert len(msgs) == 1 and f"exceeds ceiling max_hourly_usd ({ceiling}) $100.00" in msgs[0]
    (tmp_path / "accelstack-ceiling.yaml").write_text("max_hourly_usd: 100\n")
    found = run(bp.budget, StackArgs(res))  # the project's file, found at preview
    assert found == [msgs[0].replace(str(ceiling), str(tmp_path / "accelstack-ceiling.yaml"))]
    hand_kept = {"region": "us-east-2", "max_hourly_usd": 1e6}
    assert any("ceiling max_hourly_usd" in m for m in run(bp.budget, StackArgs(res, hand_kept)))
    msgs = run(bp.budget, StackArgs(res, {"region": "us-east-2", "ceiling": str(ceiling)}))
    assert any("sets no max_*_usd limit" in m for m in msgs)  # fails closed
