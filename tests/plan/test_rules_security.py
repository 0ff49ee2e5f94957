"""The security defaults as deploy rules: `check` enforces them offline, and the CrossGuard pack
calls the same functions (check runs the whole pack: budget, security, deploy rules)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from accelstack.plan import Plan, PlannedResource
from accelstack.plan.rules import evaluate
from accelstack.resolve import Stack

from ..conftest import planned_preset

SG = "aws:ec2/securityGroup:SecurityGroup"
RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
LT = "aws:ec2/launchTemplate:LaunchTemplate"
BUCKET = "aws:s3/bucket:Bucket"
PAB = "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"


@pytest.fixture(scope="module")
def trn1() -> tuple[Plan, Stack]:
    stack, plan = planned_preset("trn1-multinode")
    return plan, stack


def with_resources(plan: Plan, *extra: PlannedResource) -> Plan:
    return dataclasses.replace(plan, resources=[*plan.resources, *extra])


def lines(plan: Plan, stack: Stack, rule: str) -> list[str]:
    return [v.line() for v in evaluate(plan, stack) if v.rule == rule]


def test_presets_have_no_security_violations(trn1: tuple[Plan, Stack]) -> None:
    plan, stack = trn1
    assert {v.rule for v in evaluate(plan, stack)} == set()


@pytest.mark.parametrize(
    ("type_", "inputs"),
    [
        (RULE, {"cidrIpv4": "0.0.0.0/0", "ipProtocol": "tcp"}),
        (SG, {"ingress": [{"cidrBlocks": ["10.0.0.0/8"], "ipv6CidrBlocks": ["::/0"]}]}),
    ],
)
def test_open_ingress_is_a_violation(
    trn1: tuple[Plan, Stack], type_: str, inputs: dict[str, Any]
) -> None:
    plan, stack = trn1
    bad = with_resources(plan, PlannedResource(type_, "wide-open", None, inputs))
    (line,) = lines(bad, stack, "no-open-ingress")
    assert line.startswith(f"{type_} 'wide-open': ingress from ")
    assert "opens it to the whole internet" in line and "security-group-rules.html" in line


def test_imdsv1_launch_template_is_a_violation(trn1: tuple[Plan, Stack]) -> None:
    plan, stack = trn1
    lt = PlannedResource(LT, "legacy-lt", None, {"metadataOptions": {"httpTokens": "optional"}})
    (line,) = lines(with_resources(plan, lt), stack, "imdsv2-required")
    assert f"{LT} 'legacy-lt': metadataOptions.httpTokens is 'optional'" in line
    # an instance that takes its options from a launch template is checked through that template
    inst = PlannedResource("aws:ec2/instance:Instance", "i", None, {"launchTemplate": {"id": "x"}})
    assert lines(with_resources(plan, inst), stack, "imdsv2-required") == []


def test_a_bucket_without_a_full_public_access_block_is_a_violation(
    trn1: tuple[Plan, Stack],
) -> None:
    plan, stack = trn1
    bucket = PlannedResource(BUCKET, "extra-bucket", None, {})
    found = lines(with_resources(plan, bucket), stack, "s3-public-access-blocked")
    assert len(found) == 1 and "public access block(s): every bucket needs one" in found[0]
    weak = PlannedResource(PAB, "weak-pab", None, {"blockPublicAcls": True})
    found = lines(with_resources(plan, bucket, weak), stack, "s3-public-access-blocked")
    assert found == [
        f"{PAB} 'weak-pab': public access block must set blockPublicPolicy, ignorePublicAcls, "
        "restrictPublicBuckets to true [s3-public-access-blocked; "
        "https://docs.aws.amazon.com/AmazonS3/latest/userguide/access-control-block-public-access.html]"
    ]
