"""Preflight checks, one by one: moto where it implements the API (offerings, S3), botocore's
Stubber where it does not (service quotas, capacity reservations and blocks, the public SSM
parameters under /aws/, EKS cluster versions). Every failing check asserts its message and fix.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws

from accelstack.preflight import (
    FAIL,
    PASS,
    WARN,
    AwsClients,
    CheckResult,
    PreflightError,
    ami_parameters,
    check_amis,
    check_bucket,
    check_kubernetes,
    check_offerings,
    check_quotas,
    check_reservations,
    format_json,
    format_text,
    generated_bucket_name,
    quota_increase_command,
    quota_needs,
    run_preflight,
)

from .. import factories
from ..helpers_preflight import (
    FAKE_ENV,
    SESSION,
    fake_aws_env,
    make_clients,
    only,
    quota,
    stack_from,
    stubbed,
    with_zone,
)

EKS_NEURON_133 = (
    "/aws/service/eks/optimized-ami/1.35/amazon-linux-2023/x86_64/neuron/recommended/image_id"
)
EKS_NVIDIA_133 = (
    "/aws/service/eks/optimized-ami/1.35/amazon-linux-2023/x86_64/nvidia/recommended/image_id"
)
NEURON_DLAMI = "/aws/service/neuron/dlami/multi-framework/ubuntu-24.04/latest/image_id"
GPU_DLAMI = "/aws/service/deeplearning/ami/x86_64/oss-nvidia-driver-gpu-pytorch-2.11-amazon-linux-2023/latest/ami-id"


@pytest.fixture(autouse=True)
def _no_real_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test here runs with fake credentials and no shared AWS config."""
    fake_aws_env(monkeypatch)


@pytest.fixture
def moto_aws() -> Iterator[None]:
    with mock_aws():
        yield


# ---------------------------------------------------------------------------------------
# offering (moto: DescribeInstanceTypeOfferings by zone id)
# ---------------------------------------------------------------------------------------


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_offering_passes_where_moto_offers_the_type(moto_aws: None) -> None:
    stack = stack_from("trn1-multinode")
    r = only(check_offerings(stack, make_clients("us-west-2", "ec2")))
    assert (r.status, r.check, r.subject) == (PASS, "offering", "pool trn1")
    assert r.message == f"trn1.32xlarge in {stack.pools[0].zone_id} (us-west-2) is offered"


def test_offering_fails_in_wrong_zone_and_lists_zones_that_work(moto_aws: None) -> None:
    stack = with_zone(stack_from("trn1-multinode"), "usw2-az2")
    r = only(check_offerings(stack, make_clients("us-west-2", "ec2")))
    assert r.status == FAIL
    assert r.message == (
        "trn1.32xlarge in usw2-az2 (us-west-2) is not offered; zones that offer it: "
        "usw2-az1, usw2-az4"
    )
    assert r.fix == "set pools[0].availability_zone: usw2-az1 (or another zone listed)"


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_offering_fails_when_no_zone_of_the_region_offers_it(moto_aws: None) -> None:
    stack = stack_from("trn3-preview")  # trn3 zones are catalog estimates; moto has no trn3
    r = only(check_offerings(stack, make_clients("us-east-2", "ec2")))
    assert r.status == FAIL
    assert r.message == "trn3.48xlarge is not offered in any zone of us-east-2"
    assert r.fix == "choose another instance type; no region in the catalog offers it"


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_offering_missing_for_a_reservation_pool_is_only_a_warning(moto_aws: None) -> None:
    stack = with_zone(stack_from("p5e-capacity-block"), "use2-az9")
    r = only(check_offerings(stack, make_clients("us-east-2", "ec2")))
    assert r.status == WARN
    assert "cr-0a1b2c3d4e5f67890 decides" in r.message
    assert r.fix is not None and r.fix.startswith("set pools[0].availability_zone: use2-az")


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_offering_access_denied_is_a_warning_with_the_permission() -> None:
    ec2, stub = stubbed("ec2", "us-west-2")
    stub.add_client_error(
        "describe_instance_type_offerings", "UnauthorizedOperation", "not allowed"
    )
    with stub:
        r = only(check_offerings(stack_from("trn1-multinode"), make_clients("us-west-2", ec2=ec2)))
    assert r.status == WARN
    assert r.message == "could not check: UnauthorizedOperation: not allowed"
    assert r.fix == ("grant ec2:DescribeInstanceTypeOfferings to the caller, then re-run preflight")


# ---------------------------------------------------------------------------------------
# quota (Stubber: moto's Service Quotas knows only 'vpc')
# ---------------------------------------------------------------------------------------


def test_spare_nodes_need_quota_too() -> None:
    def spares(d: dict[str, Any]) -> None:
        d["pools"][0]["spare_nodes"] = 2

    needs, _ = quota_needs(stack_from("trn1-multinode", spares))
    by_code = {n.quota_code: n for n in needs}
    assert by_code["L-2C3B7624"].vcpus == (4 + 2) * 128
    assert by_code["L-2C3B7624"].users == ("pool trn1: 6 x trn1.32xlarge (768 vCPUs)",)


def test_quota_needs_sum_pools_per_code_and_count_eks_system_nodes() -> None:
    def two_trn_pools(d: dict[str, Any]) -> None:
        d["pools"].append({"name": "spare", "instance_type": "trn1.32xlarge", "nodes": 2})
        d["pools"].append(
            {
                "name": "cheap",
                "instance_type": "trn1.32xlarge",
                "nodes": 1,
                "purchase": {"option": "spot"},
            }
        )
        d["workload"]["pool"] = "trn1"

    needs, skipped = quota_needs(stack_from("trn1-multinode", two_trn_pools))
    by_code = {n.quota_code: n for n in needs}
    assert skipped == []
    assert by_code["L-2C3B7624"].vcpus == (4 + 2) * 128  # on-demand Trn
    assert by_code["L-2C3B7624"].users == (
        "pool trn1: 4 x trn1.32xlarge (512 vCPUs)",
        "pool spare: 2 x trn1.32xlarge (256 vCPUs)",
    )
    assert by_code["L-6B0D517C"].vcpus == 128  # spot Trn
    assert by_code["L-1216C47A"].vcpus == 2 * 4  # two m6i.xlarge system nodes (standard)


def test_quota_needs_of_a_standalone_stack_have_no_system_nodes() -> None:
    needs, _ = quota_needs(stack_from("trn1-multinode", ec2_mode))
    assert [(n.quota_code, n.vcpus) for n in needs] == [("L-2C3B7624", 512)]


def test_quota_needs_leave_out_capacity_blocks() -> None:
    stack = stack_from("p5e-capacity-block")
    needs, skipped = quota_needs(stack)
    assert [p.name for p in skipped] == ["h200"]
    assert [n.quota_code for n in needs] == ["L-1216C47A"]  # only the EKS system nodes


def test_quota_passes_when_covered() -> None:
    sq, stub = stubbed("service-quotas", "us-west-2")
    stub.add_response(
        "get_service_quota",
        quota("L-1216C47A", 640.0),
        {"ServiceCode": "ec2", "QuotaCode": "L-1216C47A"},
    )
    stub.add_response(
        "get_service_quota",
        quota("L-2C3B7624", 512.0),
        {"ServiceCode": "ec2", "QuotaCode": "L-2C3B7624"},
    )
    with stub:
        results = check_quotas(
            stack_from("trn1-multinode"), make_clients("us-west-2", service_quotas=sq)
        )
    stub.assert_no_pending_responses()
    assert [r.status for r in results] == [PASS, PASS]
    assert results[1].message.startswith("trn on-demand vCPUs: quota 512 covers the 512 needed")


def test_quota_fails_with_the_exact_increase_to_request() -> None:
    sq, stub = stubbed("service-quotas", "us-west-2")
    stub.add_response("get_service_quota", quota("L-1216C47A", 640.0))
    stub.add_response("get_service_quota", quota("L-2C3B7624", 256.0))
    with stub:
        results = check_quotas(
            stack_from("trn1-multinode"), make_clients("us-west-2", service_quotas=sq)
        )
    r = results[1]
    assert (r.status, r.subject) == (FAIL, "quota L-2C3B7624")
    assert r.message == (
        "trn on-demand vCPUs: quota 256 is below the 512 needed "
        "(pool trn1: 4 x trn1.32xlarge (512 vCPUs))"
    )
    assert r.fix == (
        "aws service-quotas request-service-quota-increase --service-code ec2 "
        "--quota-code L-2C3B7624 --desired-value 512 --region us-west-2"
    )
    assert r.fix == quota_increase_command("us-west-2", "L-2C3B7624", 512)


def test_quota_spot_pool_uses_the_spot_code() -> None:
    def spot(d: dict[str, Any]) -> None:
        d["pools"][0]["purchase"] = {"option": "spot"}

    sq, stub = stubbed("service-quotas", "us-east-2")
    stub.add_response("get_service_quota", quota("L-1216C47A", 640.0))
    stub.add_response(
        "get_service_quota",
        quota("L-7212CCBC", 0.0),
        {"ServiceCode": "ec2", "QuotaCode": "L-7212CCBC"},
    )
    with stub:
        results = check_quotas(
            stack_from("llama3-70b-p5", spot), make_clients("us-east-2", service_quotas=sq)
        )
    r = results[1]
    assert r.status == FAIL
    assert r.message.startswith("p spot vCPUs: quota 0 is below the 3072 needed")
    assert "--quota-code L-7212CCBC --desired-value 3072 --region us-east-2" in (r.fix or "")


def test_quota_falls_back_to_the_aws_default() -> None:
    sq, stub = stubbed("service-quotas", "us-west-2")
    stub.add_response("get_service_quota", quota("L-1216C47A", 640.0))
    stub.add_client_error("get_service_quota", "NoSuchResourceException", "no applied value")
    stub.add_response(
        "get_aws_default_service_quota",
        quota("L-2C3B7624", 0.0),
        {"ServiceCode": "ec2", "QuotaCode": "L-2C3B7624"},
    )
    with stub:
        results = check_quotas(
            stack_from("trn1-multinode"), make_clients("us-west-2", service_quotas=sq)
        )
    assert results[1].status == FAIL
    assert results[1].message.startswith("trn on-demand vCPUs: quota 0 (AWS default) is below")


def test_quota_access_denied_is_a_warning() -> None:
    sq, stub = stubbed("service-quotas", "us-west-2")
    stub.add_client_error("get_service_quota", "AccessDeniedException", "nope")
    stub.add_client_error("get_service_quota", "AccessDeniedException", "nope")
    with stub:
        results = check_quotas(
            stack_from("trn1-multinode"), make_clients("us-west-2", service_quotas=sq)
        )
    assert [r.status for r in results] == [WARN, WARN]
    assert results[0].fix == (
        "grant servicequotas:GetServiceQuota, servicequotas:GetAWSDefaultServiceQuota to the "
        "caller, then re-run preflight"
    )


def test_quota_reservation_pool_is_not_counted() -> None:
    sq, stub = stubbed("service-quotas", "us-east-2")
    stub.add_response("get_service_quota", quota("L-1216C47A", 640.0))
    with stub:
        results = check_quotas(
            stack_from("p5e-capacity-block"), make_clients("us-east-2", service_quotas=sq)
        )
    assert [r.subject for r in results] == ["quota L-1216C47A", "pool h200"]
    assert results[1].status == PASS
    assert results[1].message == (
        "launches into capacity-block cr-0a1b2c3d4e5f67890: reserved capacity does not consume "
        "On-Demand vCPU quota"
    )


# ---------------------------------------------------------------------------------------
# ami (Stubber: moto refuses parameter names under /aws/)
# ---------------------------------------------------------------------------------------


def ec2_mode(d: dict[str, Any]) -> None:
    factories.to_standalone(d)
    d.pop("cluster", None)


def test_ami_parameters_follow_orchestration() -> None:
    assert ami_parameters(stack_from("mixed-trn2-p5")) == {
        EKS_NEURON_133: ["trn2"],
        EKS_NVIDIA_133: ["h100"],
    }
    assert ami_parameters(stack_from("mixed-trn2-p5", ec2_mode)) == {
        NEURON_DLAMI: ["trn2"],
        GPU_DLAMI: ["h100"],
    }


def test_ami_passes_when_parameters_resolve() -> None:
    ssm, stub = stubbed("ssm", "us-east-2")
    stub.add_response(
        "get_parameters",
        {
            "Parameters": [
                {"Name": GPU_DLAMI, "Value": "ami-0123456789abcdef0", "Type": "String"},
                {"Name": NEURON_DLAMI, "Value": "ami-0fedcba9876543210", "Type": "String"},
            ]
        },
        {"Names": sorted([NEURON_DLAMI, GPU_DLAMI])},
    )
    with stub:
        results = check_amis(
            stack_from("mixed-trn2-p5", ec2_mode), make_clients("us-east-2", ssm=ssm)
        )
    assert [r.status for r in results] == [PASS, PASS]
    assert results[1].message == f"{NEURON_DLAMI} resolves to ami-0fedcba9876543210 in us-east-2"


def test_ami_fails_for_a_missing_eks_parameter() -> None:
    ssm, stub = stubbed("ssm", "us-west-2")
    stub.add_response("get_parameters", {"Parameters": [], "InvalidParameters": [EKS_NEURON_133]})
    with stub:
        r = only(check_amis(stack_from("trn1-multinode"), make_clients("us-west-2", ssm=ssm)))
    assert r.status == FAIL
    assert r.message == f"{EKS_NEURON_133} does not resolve in us-west-2"
    assert r.fix == (
        "use a cluster.kubernetes_version whose AL2023 AMI exists in us-west-2 (list them: aws "
        "ssm get-parameters-by-path --path /aws/service/eks/optimized-ami/ --recursive --region "
        "us-west-2) or another region"
    )


def test_ami_fails_for_a_missing_dlami_parameter() -> None:
    ssm, stub = stubbed("ssm", "us-west-2")
    stub.add_response("get_parameters", {"Parameters": [], "InvalidParameters": [NEURON_DLAMI]})
    with stub:
        r = only(
            check_amis(stack_from("trn1-multinode", ec2_mode), make_clients("us-west-2", ssm=ssm))
        )
    assert r.status == FAIL
    assert r.message == f"{NEURON_DLAMI} does not resolve in us-west-2"
    assert r.fix == (
        "choose a region where it is published (aws ssm get-parameters-by-path --path "
        "/aws/service/neuron/dlami/multi-framework --recursive --region REGION), or change the "
        "device kind's standalone_ami_parameter in the catalog"
    )


def test_ami_against_moto_reports_missing_public_parameters(moto_aws: None) -> None:
    r = only(check_amis(stack_from("trn1-multinode"), make_clients("us-west-2", "ssm")))
    assert r.status == FAIL  # moto ships no EKS AL2023 neuron parameter


# ---------------------------------------------------------------------------------------
# reservation (Stubber: moto does not implement DescribeCapacityReservations)
# ---------------------------------------------------------------------------------------

CR = "cr-0a1b2c3d4e5f67890"


def reservation(**changes: Any) -> dict[str, Any]:
    cr: dict[str, Any] = {
        "CapacityReservationId": CR,
        "InstanceType": "p5e.48xlarge",
        "InstancePlatform": "Linux/UNIX",
        "AvailabilityZone": "us-east-2b",
        "AvailabilityZoneId": "use2-az2",
        "TotalInstanceCount": 8,
        "AvailableInstanceCount": 8,
        "State": "active",
        "ReservationType": "capacity-block",
        "InstanceMatchCriteria": "targeted",
        "StartDate": datetime(2026, 11, 20, 11, 30, tzinfo=UTC),
        "EndDate": datetime(2026, 11, 27, 11, 30, tzinfo=UTC),
    }
    cr.update(changes)
    return cr


def run_reservation(cr: dict[str, Any] | None, error: str | None = None) -> CheckResult:
    ec2, stub = stubbed("ec2", "us-east-2")
    if error:
        stub.add_client_error("describe_capacity_reservations", error, f"{CR} not found")
    else:
        stub.add_response(
            "describe_capacity_reservations",
            {"CapacityReservations": [cr] if cr else []},
            {"CapacityReservationIds": [CR]},
        )
    with stub:
        return only(
            check_reservations(stack_from("p5e-capacity-block"), make_clients("us-east-2", ec2=ec2))
        )


def test_reservation_active_block_of_the_right_size_passes() -> None:
    r = run_reservation(reservation())
    assert r.status == PASS
    assert r.message == (
        f"capacity block {CR}: active, 8 x p5e.48xlarge in use2-az2, "
        "2026-11-20 11:30 UTC to 2026-11-27 11:30 UTC"
    )


def test_reservation_that_does_not_exist_fails() -> None:
    r = run_reservation(None, error="InvalidCapacityReservationId.NotFound")
    assert r.status == FAIL
    assert r.message == f"{CR} does not exist in us-east-2 for this account"
    assert r.fix is not None
    assert "aws ec2 describe-capacity-reservations --region us-east-2" in r.fix
    assert (
        "describe-capacity-block-offerings --instance-type p5e.48xlarge --instance-count 8" in r.fix
    )


def test_reservation_missing_from_an_empty_answer_fails() -> None:
    assert run_reservation(None).message == f"{CR} does not exist in us-east-2 for this account"


def test_reservation_expired_fails() -> None:
    r = run_reservation(reservation(State="expired"))
    assert r.status == FAIL
    assert r.message == f"capacity block {CR} is expired"
    assert r.fix == (
        "buy a new capacity block or create a new reservation and set "
        "pools[0].purchase.reservation_id to its cr- id"
    )


def test_reservation_too_small_fails() -> None:
    r = run_reservation(reservation(TotalInstanceCount=4, AvailableInstanceCount=4))
    assert r.status == FAIL
    assert r.message == (
        f"capacity block {CR} holds 4 instance(s), fewer than the 8 nodes asked for"
    )
    assert r.fix == "set pools[0].nodes: 4, or extend the reservation to 8 instances"


def test_reservation_in_another_zone_fails() -> None:
    r = run_reservation(reservation(AvailabilityZone="us-east-2c", AvailabilityZoneId="use2-az3"))
    assert r.status == FAIL
    assert r.message == (
        f"capacity block {CR} is in use2-az3 (us-east-2c), not the pool's zone use2-az2"
    )
    assert r.fix == "set pools[0].availability_zone: use2-az3"


def test_reservation_for_another_type_fails() -> None:
    r = run_reservation(reservation(InstanceType="p5.48xlarge"))
    assert r.status == FAIL
    assert r.message == f"capacity block {CR} is for p5.48xlarge, not p5e.48xlarge"
    assert r.fix == (
        "set pools[0].instance_type: p5.48xlarge, or use a reservation for p5e.48xlarge"
    )


def test_reservation_scheduled_warns_until_it_starts() -> None:
    r = run_reservation(reservation(State="scheduled"))
    assert r.status == WARN
    assert r.message.endswith("instances cannot launch until it is active")
    assert r.fix == "deploy after it starts (2026-11-20 11:30 UTC)"


def test_reservation_partly_used_warns() -> None:
    r = run_reservation(reservation(AvailableInstanceCount=6))
    assert r.status == WARN
    assert "only 6 of 8 are free" in r.message


def test_reservation_type_mismatch_warns() -> None:
    r = run_reservation(reservation(ReservationType="default"))
    assert r.status == WARN
    assert r.fix == "set pools[0].purchase.option: reservation"


def test_the_suggested_option_is_the_table_row_buying_that_reservation_type() -> None:
    """EC2's ReservationType names the capacity; the option to set is read from the purchase
    table (the Capacity Block row, else the reservation row), never spelled in the check."""
    from accelstack.preflight.checks import _option_buying

    stack = stack_from("p5e-capacity-block")
    cat = stack.catalog
    block = _option_buying(stack, "capacity-block")
    other = _option_buying(stack, "default")
    assert cat.purchase(block).capacity_block and cat.purchase(block).needs_reservation
    assert not cat.purchase(other).capacity_block and cat.purchase(other).needs_reservation


# ---------------------------------------------------------------------------------------
# bucket (moto S3; Stubber for the 403 a real foreign bucket gives)
# ---------------------------------------------------------------------------------------


def named_bucket(name: str) -> Any:
    def edit(d: dict[str, Any]) -> None:
        d["compile_cache"]["bucket"] = name

    return edit


MOTO_ACCOUNT = "123456789012"  # moto's default account id
GENERATED = f"trn1-multinode-ncc-{MOTO_ACCOUNT}"


def test_generated_bucket_name_matches_the_component() -> None:
    from accelstack.components.compile_cache import bucket_name

    assert generated_bucket_name("trn1-multinode", MOTO_ACCOUNT) == bucket_name(
        "trn1-multinode", MOTO_ACCOUNT
    )


def test_generated_bucket_free_passes(moto_aws: None) -> None:
    r = only(check_bucket(stack_from("trn1-multinode"), make_clients("us-west-2", "s3", "sts")))
    assert (r.status, r.subject) == (PASS, f"bucket {GENERATED}")
    assert r.message == f"{GENERATED} is free: accelstack will create it"


def test_generated_bucket_from_an_earlier_deploy_passes(moto_aws: None) -> None:
    SESSION.client("s3", region_name="us-west-2").create_bucket(
        Bucket=GENERATED, CreateBucketConfiguration={"LocationConstraint": "us-west-2"}
    )
    r = only(check_bucket(stack_from("trn1-multinode"), make_clients("us-west-2", "s3", "sts")))
    assert r.status == PASS
    assert r.message == f"{GENERATED} exists and is ours (created by an earlier deploy)"


def test_generated_bucket_taken_by_someone_else_fails(moto_aws: None) -> None:
    s3, stub = stubbed("s3", "us-west-2")
    stub.add_client_error(
        "head_bucket",
        "403",
        "Forbidden",
        http_status_code=403,
        expected_params={"Bucket": GENERATED},
    )
    with stub:
        r = only(
            check_bucket(stack_from("trn1-multinode"), make_clients("us-west-2", "sts", s3=s3))
        )
    assert r.status == FAIL
    assert r.message == (
        f"{GENERATED} exists and belongs to another account (HeadBucket: 403 Forbidden)"
    )
    assert r.fix == (
        "set compile_cache.bucket to an existing bucket of yours (if this bucket is yours, "
        "grant s3:ListBucket on it)"
    )


def test_named_bucket_that_does_not_exist_fails(moto_aws: None) -> None:
    r = only(
        check_bucket(
            stack_from("trn1-multinode", named_bucket("acme-neuron-cache")),
            make_clients("us-west-2", "s3"),
        )
    )
    assert r.status == FAIL
    assert r.message == (
        "acme-neuron-cache does not exist; compile_cache.bucket names an existing bucket to "
        "use, and accelstack does not create it"
    )
    assert r.fix == (
        "create it (aws s3 mb s3://acme-neuron-cache --region us-west-2), or drop "
        "compile_cache.bucket to let accelstack create one"
    )


def test_named_bucket_ours_passes(moto_aws: None) -> None:
    s3 = SESSION.client("s3", region_name="us-west-2")
    s3.create_bucket(
        Bucket="acme-neuron-cache", CreateBucketConfiguration={"LocationConstraint": "us-west-2"}
    )
    r = only(
        check_bucket(
            stack_from("trn1-multinode", named_bucket("acme-neuron-cache")),
            make_clients("us-west-2", "s3"),
        )
    )
    assert r.status == PASS
    assert r.message == "acme-neuron-cache exists and is ours"


def test_named_bucket_ours_in_another_region_warns(moto_aws: None) -> None:
    SESSION.client("s3", region_name="us-east-1").create_bucket(Bucket="acme-neuron-cache")
    r = only(
        check_bucket(
            stack_from("trn1-multinode", named_bucket("acme-neuron-cache")),
            make_clients("us-west-2", "s3"),
        )
    )
    assert r.status == WARN
    assert "in us-east-1, not us-west-2" in r.message
    assert r.fix == "use a bucket in us-west-2"


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_named_bucket_taken_by_someone_else_fails() -> None:
    s3, stub = stubbed("s3", "us-west-2")
    stub.add_client_error("head_bucket", "403", "Forbidden", http_status_code=403)
    with stub:
        r = only(
            check_bucket(
                stack_from("trn1-multinode", named_bucket("data")),
                make_clients("us-west-2", s3=s3),
            )
        )
    assert r.status == FAIL
    assert r.message == "data exists and belongs to another account (HeadBucket: 403 Forbidden)"
    assert r.fix == (
        "choose another compile_cache.bucket name, or drop it to let accelstack create one "
        "(if the bucket is yours, grant s3:ListBucket on it)"
    )


def test_bucket_check_is_skipped_without_a_neuron_pool() -> None:
    assert check_bucket(stack_from("llama3-70b-p5"), make_clients("us-east-2")) == []


def checkpoint_bucket(name: str, region: str) -> Any:
    def edit(d: dict[str, Any]) -> None:
        d["checkpoint"] = {"bucket": name, "bucket_region": region}

    return edit


def test_checkpoint_bucket_in_the_stack_region_passes(moto_aws: None) -> None:
    SESSION.client("s3", region_name="us-east-2").create_bucket(
        Bucket="acme-ckpt", CreateBucketConfiguration={"LocationConstraint": "us-east-2"}
    )
    stack = stack_from("llama3-70b-p5", checkpoint_bucket("acme-ckpt", "us-east-2"))
    r = only(check_bucket(stack, make_clients("us-east-2", "s3")))
    assert (r.status, r.subject) == (PASS, "checkpoint bucket acme-ckpt")


def test_checkpoint_bucket_really_in_another_region_fails(moto_aws: None) -> None:
    """The spec says us-east-2 (validation passes); S3 says us-east-1: preflight refuses."""
    SESSION.client("s3", region_name="us-east-1").create_bucket(Bucket="acme-ckpt")
    stack = stack_from("llama3-70b-p5", checkpoint_bucket("acme-ckpt", "us-east-2"))
    r = only(check_bucket(stack, make_clients("us-east-2", "s3")))
    assert r.status == FAIL
    assert "acme-ckpt is in us-east-1, not the stack's region us-east-2" in r.message


def test_missing_checkpoint_bucket_fails(moto_aws: None) -> None:
    stack = stack_from("llama3-70b-p5", checkpoint_bucket("acme-none", "us-east-2"))
    r = only(check_bucket(stack, make_clients("us-east-2", "s3")))
    assert r.status == FAIL and "acme-none does not exist" in r.message


# ---------------------------------------------------------------------------------------
# kubernetes (Stubber: moto answers DescribeClusterVersions with 'Not yet implemented')
# ---------------------------------------------------------------------------------------


def versions(*rows: tuple[str, str]) -> dict[str, Any]:
    return {"clusterVersions": [{"clusterVersion": v, "versionStatus": s} for v, s in rows]}


def run_k8s(response: dict[str, Any], preset: str = "trn1-multinode") -> CheckResult:
    eks, stub = stubbed("eks", "us-west-2")
    stub.add_response("describe_cluster_versions", response, {"includeAll": True})
    with stub:
        return only(check_kubernetes(stack_from(preset), make_clients("us-west-2", eks=eks)))


def test_kubernetes_standard_support_passes() -> None:
    r = run_k8s(versions(("1.36", "STANDARD_SUPPORT"), ("1.35", "STANDARD_SUPPORT")))
    assert (r.status, r.message) == (PASS, "EKS offers 1.35 (standard support)")


def test_kubernetes_extended_support_warns_about_the_price() -> None:
    r = run_k8s(versions(("1.36", "STANDARD_SUPPORT"), ("1.35", "EXTENDED_SUPPORT")))
    assert r.status == WARN
    assert "0.60 USD/hour" in r.message
    assert r.fix == "set cluster.kubernetes_version to a standard-support version (1.36)"


def test_kubernetes_version_not_offered_fails() -> None:
    r = run_k8s(
        versions(
            ("1.37", "STANDARD_SUPPORT"),
            ("1.36", "STANDARD_SUPPORT"),
            ("1.34", "EXTENDED_SUPPORT"),
            ("1.30", "UNSUPPORTED"),
        )
    )
    assert r.status == FAIL
    assert r.message == "1.35 is not offered by EKS in us-west-2 (offered: 1.34, 1.36, 1.37)"
    assert r.fix == "set cluster.kubernetes_version to one of 1.36, 1.37"


def test_kubernetes_unsupported_version_fails() -> None:
    r = run_k8s(versions(("1.36", "STANDARD_SUPPORT"), ("1.35", "UNSUPPORTED")))
    assert r.status == FAIL
    assert r.message.startswith("1.35 is no longer supported by EKS")


def test_kubernetes_falls_back_to_the_catalog_when_eks_cannot_be_asked(moto_aws: None) -> None:
    r = only(check_kubernetes(stack_from("trn1-multinode"), make_clients("us-west-2", "eks")))
    assert r.status == WARN
    assert r.message.startswith("EKS could not be asked (404: Not yet implemented)")
    assert "the catalog lists 1.35 as supported" in r.message


def test_kubernetes_fallback_fails_a_version_outside_the_catalog(moto_aws: None) -> None:
    stack = stack_from("trn1-multinode")
    stack = dataclasses.replace(stack, kubernetes_version="1.20")
    r = only(check_kubernetes(stack, make_clients("us-west-2", "eks")))
    assert r.status == FAIL
    assert r.fix == "set cluster.kubernetes_version to one of 1.32, 1.33, 1.34, 1.35"


def test_kubernetes_is_skipped_for_standalone() -> None:
    assert check_kubernetes(stack_from("trn1-multinode", ec2_mode), make_clients("us-west-2")) == []


# ---------------------------------------------------------------------------------------
# running and formatting
# ---------------------------------------------------------------------------------------


def test_run_preflight_without_credentials_raises_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in FAKE_ENV:
        if key.startswith("AWS_") and key != "AWS_EC2_METADATA_DISABLED":
            monkeypatch.delenv(key, raising=False)
    with pytest.raises(PreflightError, match="no usable AWS credentials"):
        run_preflight(
            stack_from("trn1-multinode"),
            make_clients("us-west-2", "ec2", session=boto3.Session()),
            only=["offering"],
        )


def test_unknown_profile_is_a_preflight_error() -> None:
    with pytest.raises(PreflightError, match="could not be found"):
        AwsClients.from_session("us-west-2", profile="no-such-profile")


def test_text_and_json_reports() -> None:
    stack = stack_from("trn1-multinode")
    results = [
        CheckResult("offering", "pool trn1", PASS, "ok"),
        CheckResult("quota", "quota L-2C3B7624", FAIL, "too low", "aws service-quotas ..."),
    ]
    text = format_text(stack, results)
    assert "PASS  offering  pool trn1: ok" in text
    assert (
        "FAIL  quota     quota L-2C3B7624: too low\n                fix: aws service-quotas ..."
        in text
    )
    assert text.endswith("1 passed, 1 failed, 0 warning(s)\n")
    doc = json.loads(format_json(stack, results))
    assert doc["ok"] is False and doc["summary"] == {"PASS": 1, "FAIL": 1, "WARN": 0}
    assert doc["checks"][1]["fix"] == "aws service-quotas ..."
