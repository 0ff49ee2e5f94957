"""The offline plan: every preset planned under Pulumi mocks, golden documents, targeted
assertions on the resources, stability of names and stateful inputs, failures, and the CLI."""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from accelstack.catalog import Catalog, load_catalog
from accelstack.cli import main
from accelstack.errors import VerdictError
from accelstack.plan import Plan, PlanError, PlannedResource, fake_ami, run_plan
from accelstack.resolve import Stack, resolve
from accelstack.spec import load_spec, parse_spec, read_yaml
from tests.components.test_components import EFA_COUNTS, small_spec
from tests.conftest import PRESETS, ROOT, compare_golden, planned_preset, preset_ids

from ..helpers_plan import plan_stack
from ..helpers_program import filled_copy

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

GOLDEN = ROOT / "tests" / "golden" / "plan"
LT = "aws:ec2/launchTemplate:LaunchTemplate"
NG = "aws:eks/nodeGroup:NodeGroup"
PG = "aws:ec2/placementGroup:PlacementGroup"
BUCKET = "aws:s3/bucket:Bucket"
FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"
KMS = "aws:kms/key:Key"
STATEFUL = (BUCKET, FSX, KMS)


def preset_plan(stem: str) -> Plan:
    return planned_preset(stem)[1]


@cache
def type_plan(itype: str, **_: Any) -> Plan:
    cat = load_catalog()
    return plan_stack(resolve(parse_spec(small_spec(cat, itype), "<test>"), cat))


def plan_data(data: dict[str, Any]) -> Plan:
    return plan_stack(resolve(parse_spec(data, "<test>")))


def pool_lt(plan: Plan, pool: str) -> PlannedResource:
    return plan.get(LT, f"{plan.stack}-{pool}-lt")


def pool_ng(plan: Plan, pool: str) -> PlannedResource:
    return plan.get(NG, f"{plan.stack}-{pool}-ng")


# ---------------------------------------------------------------------------------------
# Golden documents and coverage of every preset
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("stem", preset_ids())
def test_golden_plan(stem: str) -> None:
    compare_golden(preset_plan(stem).to_json(), GOLDEN / f"{stem}.json")


def eks_presets() -> list[Path]:
    return [p for p in PRESETS if load_spec(p).orchestration == "eks"]


def test_every_preset_is_planned_with_its_pools() -> None:
    assert len(PRESETS) >= 7 and len(eks_presets()) >= 7
    for path in PRESETS:
        assert preset_plan(path.stem).resources, path
    for path in eks_presets():
        plan = preset_plan(path.stem)
        spec = load_spec(path)
        ngs = {r.inputs["labels"].get("accelstack.io/pool") for r in plan.of_type(NG)}
        assert ngs == {p.name for p in spec.pools} | {None}, path  # None: the system group
        assert len(plan.of_type("aws:eks/cluster:Cluster")) == 1
        assert plan.outputs["kubeconfig"] == "[secret]"
        assert plan.outputs["nodeGroups"].keys() == {p.name for p in spec.pools}


def test_plan_json_is_stable_and_sorted() -> None:
    plan = preset_plan("mixed-trn2-p5")
    keys = [(r.type, r.name) for r in plan.resources]
    assert keys == sorted(keys)
    again = plan_stack(resolve(load_spec(ROOT / "stacks" / "mixed-trn2-p5.yaml")))
    assert again.to_json() == plan.to_json()
    doc = json.loads(plan.to_json())
    assert doc["version"] == 1 and doc["summary"]["resources"] == len(plan.resources)


def test_cost_engineer_fields_are_readable() -> None:
    plan = preset_plan("llama3-70b-trn2")
    ng = pool_ng(plan, "trn2")
    assert ng.inputs["instanceTypes"] == ["trn2.48xlarge"]
    assert ng.inputs["scalingConfig"]["desiredSize"] == 16
    assert isinstance(ng.inputs["scalingConfig"]["desiredSize"], int)
    assert ng.inputs["capacityType"] == "ON_DEMAND"
    assert pool_lt(plan, "trn2").inputs["blockDeviceMappings"][0]["ebs"]["volumeSize"] == 1024
    assert plan.of_type(FSX)[0].inputs["storageCapacity"] == 4800
    # one NAT gateway per zone in use (no inter-AZ data charges)
    assert len(plan.of_type("aws:ec2/natGateway:NatGateway")) == 2


# ---------------------------------------------------------------------------------------
# EFA, placement, AMIs, IMDS, taints
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("itype", "count"), sorted(EFA_COUNTS.items()))
def test_launch_template_efa_interfaces(catalog: Catalog, itype: str, count: int) -> None:
    plan = type_plan(itype)
    nics = pool_lt(plan, "p").inputs["networkInterfaces"]
    assert len(nics) == count == catalog.instances[itype].efa_interfaces
    assert (nics[0]["deviceIndex"], nics[0]["interfaceType"]) == (0, "efa")
    assert {n["deviceIndex"] for n in nics[1:]} == {1}
    assert [n["networkCardIndex"] for n in nics] == list(range(count))
    efa_sg = plan.get("aws:ec2/securityGroup:SecurityGroup", f"{plan.stack}-p-efa-sg")
    assert efa_sg is not None and all(len(n["securityGroups"]) == 2 for n in nics)


def test_efa_only_style_in_capacity_block_preset() -> None:
    nics = pool_lt(preset_plan("p5e-capacity-block"), "h200").inputs["networkInterfaces"]
    assert len(nics) == 32
    assert {n["interfaceType"] for n in nics[1:]} == {"efa-only"}


def test_placement_groups() -> None:
    for stem, pools in {
        "trn1-multinode": ["trn1"],
        "mixed-trn2-p5": ["trn2", "h100"],
        "llama3-70b-p5": ["h100"],
    }.items():
        plan = preset_plan(stem)
        for pool in pools:
            pg = plan.get(PG, f"{stem}-{pool}-pg")
            assert pg.inputs["strategy"] == "cluster"
            assert pool_lt(plan, pool).inputs["placement"] == {"groupName": f"{stem}-{pool}-pg"}
    cb = preset_plan("p5e-capacity-block")  # capacity block: no placement group
    assert cb.of_type(PG) == [] and "placement" not in pool_lt(cb, "h200").inputs
    ft = preset_plan("trn1-finetune")  # no EFA: no placement group, no interfaces
    assert ft.of_type(PG) == []
    assert "networkInterfaces" not in pool_lt(ft, "trn1").inputs


def test_capacity_block_targets_the_reservation() -> None:
    plan = preset_plan("p5e-capacity-block")
    lt = pool_lt(plan, "h200").inputs
    assert lt["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert lt["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": "cr-0a1b2c3d4e5f67890"}
    }
    assert pool_ng(plan, "h200").inputs["capacityType"] == "CAPACITY_BLOCK"


@pytest.mark.parametrize(
    ("stem", "pool", "variant"),
    [
        ("llama3-70b-trn2", "trn2", "neuron"),
        ("llama3-70b-p5", "h100", "nvidia"),
        ("mixed-trn2-p5", "trn2", "neuron"),
        ("mixed-trn2-p5", "h100", "nvidia"),
    ],
)
def test_ami_from_the_family_ssm_parameter(stem: str, pool: str, variant: str) -> None:
    plan = preset_plan(stem)
    k8s = resolve(load_spec(ROOT / "stacks" / f"{stem}.yaml")).kubernetes_version
    param = f"/aws/service/eks/optimized-ami/{k8s}/amazon-linux-2023/x86_64/{variant}/recommended/image_id"
    # pinned (the offline plan simulates `accelstack amis pin`): the alias is not looked up
    assert {
        "token": "aws:ssm/getParameter:getParameter",
        "args": {"name": param},
    } not in plan.lookups
    assert pool_lt(plan, pool).inputs["imageId"] == fake_ami(param)


def test_imdsv2_and_encrypted_gp3_on_every_launch_template() -> None:
    for path in PRESETS:
        plan = preset_plan(path.stem)
        lts = plan.of_type(LT)
        assert lts, path
        if path in eks_presets():
            assert len(lts) == len(plan.of_type(NG))
            assert all("launchTemplate" in ng.inputs for ng in plan.of_type(NG))
        roots = [lt.inputs["blockDeviceMappings"][0]["ebs"] for lt in lts]
        for lt in lts:
            md = lt.inputs["metadataOptions"]
            # EKS nodes: hop limit 1 (pods cannot reach the node role); standalone keeps 2
            hops = 1 if path in eks_presets() else 2
            assert md["httpTokens"] == "required" and md["httpPutResponseHopLimit"] == hops
        assert roots, path
        for ebs in roots:
            assert ebs["volumeType"] == "gp3" and ebs["encrypted"] in ("true", True)


def test_taints_and_labels_on_node_groups() -> None:
    plan = preset_plan("mixed-trn2-p5")
    trn, gpu = pool_ng(plan, "trn2").inputs, pool_ng(plan, "h100").inputs
    assert trn["taints"] == [
        {"effect": "NO_SCHEDULE", "key": "aws.amazon.com/neuron", "value": "true"}
    ]
    assert gpu["taints"] == [{"effect": "NO_SCHEDULE", "key": "nvidia.com/gpu", "value": "true"}]
    assert trn["labels"]["accelstack.io/accelerator"] == "neuron"
    assert gpu["labels"]["accelstack.io/efa"] == "true"
    system = plan.get(NG, "mixed-trn2-p5-system-ng").inputs
    assert "taints" not in system
    # each pool's node group sits in its own zone's private subnet
    assert trn["subnetIds"] != gpu["subnetIds"] and len(trn["subnetIds"]) == 1


def test_node_role_policies_are_minimal() -> None:
    plan = preset_plan("trn1-multinode")
    arns = sorted(
        r.inputs["policyArn"].rsplit("/", 1)[1]
        for r in plan.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
        if r.parent == "trn1-multinode-trn1"
    )
    assert arns == [
        "AmazonEC2ContainerRegistryReadOnly",
        "AmazonEKSWorkerNodePolicy",
        "AmazonSSMManagedInstanceCore",
    ]  # the CNI policy reaches aws-node through Pod Identity (test_deploy_rules)


# ---------------------------------------------------------------------------------------
# Cluster, bucket, security groups
# ---------------------------------------------------------------------------------------


def test_cluster_settings() -> None:
    plan = preset_plan("llama3-70b-trn2")
    c = plan.of_type("aws:eks/cluster:Cluster")[0].inputs
    assert c["version"] == "1.35"
    assert c["accessConfig"]["authenticationMode"] == "API"
    assert c["accessConfig"]["bootstrapClusterCreatorAdminPermissions"] is False
    assert sorted(c["enabledClusterLogTypes"]) == sorted(
        ["api", "audit", "authenticator", "controllerManager", "scheduler"]
    )
    assert c["encryptionConfig"]["resources"] == ["secrets"]
    assert c["vpcConfig"]["endpointPublicAccess"] is True
    assert c["vpcConfig"]["endpointPrivateAccess"] is True
    assert c["vpcConfig"]["publicAccessCidrs"] == ["203.0.113.0/24"]
    key = plan.of_type(KMS)[0]
    assert key.inputs["enableKeyRotation"] is True
    assert plan.option(KMS, key.name, "protect") is True
    addons = {r.inputs["addonName"] for r in plan.of_type("aws:eks/addon:Addon")}
    core = {"vpc-cni", "coredns", "kube-proxy", "eks-pod-identity-agent"}
    core |= {"eks-node-monitoring-agent"}  # feeds node auto repair
    # this preset has FSx; metrics are on by default (tests/render/test_metrics.py)
    assert addons == core | {"aws-fsx-csi-driver", "amazon-cloudwatch-observability"}
    without_fsx = preset_plan("trn1-multinode")
    assert {r.inputs["addonName"] for r in without_fsx.of_type("aws:eks/addon:Addon")} == core | {
        "amazon-cloudwatch-observability"
    }


def test_fsx_claim_binds_the_file_system_the_jobs_mount() -> None:
    from accelstack.render import fsx_claim_name

    plan = preset_plan("llama3-70b-trn2")
    stack = resolve(load_spec(ROOT / "stacks" / "llama3-70b-trn2.yaml"))
    (fs,) = plan.of_type("aws:fsx/lustreFileSystem:LustreFileSystem")
    (pv,) = plan.of_type("kubernetes:core/v1:PersistentVolume")
    (pvc,) = plan.of_type("kubernetes:core/v1:PersistentVolumeClaim")
    claim = fsx_claim_name(stack)
    assert pvc.inputs["metadata"] == {"name": claim, "namespace": "training"}
    assert pvc.inputs["spec"]["volumeName"] == pv.inputs["metadata"]["name"] == claim
    assert pvc.inputs["spec"]["storageClassName"] == pv.inputs["spec"]["storageClassName"] == ""
    csi = pv.inputs["spec"]["csi"]
    assert csi["driver"] == "fsx.csi.aws.com"
    assert set(csi["volumeAttributes"]) == {"dnsname", "mountname"}
    assert pv.inputs["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert pv.inputs["spec"]["capacity"]["storage"] == f"{fs.inputs['storageCapacity']}Gi"
    assert not preset_plan("trn1-multinode").of_type("kubernetes:core/v1:PersistentVolume")


def test_public_endpoint_and_admin_access_entries(catalog: Catalog) -> None:
    data = small_spec(catalog, "trn1.32xlarge")
    admin = "arn:aws:iam::123456789012:role/platform-admin"
    data["cluster"] = {
        "endpoint_public_access": True,
        "public_access_cidrs": ["203.0.113.0/24"],
        "admin_principal_arns": [admin],
    }
    plan = plan_data(data)
    vpc = plan.of_type("aws:eks/cluster:Cluster")[0].inputs["vpcConfig"]
    assert vpc["endpointPublicAccess"] is True and vpc["publicAccessCidrs"] == ["203.0.113.0/24"]
    (entry,) = plan.of_type("aws:eks/accessEntry:AccessEntry")
    assert entry.inputs["principalArn"] == admin
    (assoc,) = plan.of_type("aws:eks/accessPolicyAssociation:AccessPolicyAssociation")
    assert assoc.inputs["policyArn"].endswith("/AmazonEKSClusterAdminPolicy")


def test_compile_cache_bucket_is_locked_down_and_protected() -> None:
    plan = preset_plan("trn1-multinode")
    bucket = plan.get(BUCKET, "trn1-multinode-compile-cache-bucket")
    assert plan.option(BUCKET, bucket.name, "protect") is True
    assert plan.option(BUCKET, bucket.name, "retainOnDelete") is True
    assert bucket.inputs["bucket"] == plan.outputs["compileCacheBucket"]
    pab = plan.of_type("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock")[0].inputs
    assert all(
        pab[k] is True
        for k in (
            "blockPublicAcls",
            "blockPublicPolicy",
            "ignorePublicAcls",
            "restrictPublicBuckets",
        )
    )
    own = plan.of_type("aws:s3/bucketOwnershipControls:BucketOwnershipControls")[0].inputs
    assert own["rule"]["objectOwnership"] == "BucketOwnerEnforced"
    sse = plan.of_type(
        "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
    )[0].inputs
    assert sse["rules"][0]["applyServerSideEncryptionByDefault"]["sseAlgorithm"] in (
        "AES256",
        "aws:kms",
    )
    ver = plan.of_type("aws:s3/bucketVersioning:BucketVersioning")[0].inputs
    assert ver["versioningConfiguration"]["status"] == "Enabled"
    life = plan.get(
        "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration",
        "trn1-multinode-compile-cache-lifecycle",
    )
    assert life.inputs["rules"][0]["noncurrentVersionExpiration"]["noncurrentDays"] == 30
    pol = json.loads(plan.of_type("aws:s3/bucketPolicy:BucketPolicy")[0].inputs["policy"])
    assert pol["Statement"][0]["Condition"]["Bool"]["aws:SecureTransport"] == "false"
    assert plan.outputs["compileCacheUrls"] == {
        "trn1": f"s3://{bucket.inputs['bucket']}/neuron-cache/trn1/"
    }


def test_pod_identity_policy_in_the_plan_names_only_the_cache() -> None:
    plan = preset_plan("llama3-70b-trn2")
    bucket = plan.get(BUCKET, "llama3-70b-trn2-compile-cache-bucket").inputs["bucket"]
    cache = plan.get("aws:iam/rolePolicy:RolePolicy", "llama3-70b-trn2-training-compile-cache")
    policy = json.loads(cache.inputs["policy"])
    resources = sorted(str(s["Resource"]) for s in policy["Statement"])
    assert resources == sorted([f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/neuron-cache/*"])
    (assoc,) = plan.of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
    assert assoc.inputs["namespace"] == load_catalog().defaults.training_namespace
    trust = json.loads(
        plan.get("aws:iam/role:Role", "llama3-70b-trn2-training-role").inputs["assumeRolePolicy"]
    )
    assert trust["Statement"][0]["Principal"]["Service"] == "pods.eks.amazonaws.com"


def test_no_nvidia_resources_without_gpu_and_no_cache_without_neuron() -> None:
    p5 = preset_plan("llama3-70b-p5")
    charts = {r.inputs["chart"] for r in p5.of_type("kubernetes:helm.sh/v3:Release")}
    trainer = load_catalog().charts["trainer"].chart
    assert charts == {"nvidia-device-plugin", "aws-efa-k8s-device-plugin", trainer}
    buckets = [b.name for b in p5.of_type(BUCKET)]
    assert buckets == ["llama3-70b-p5-checkpoints-bucket"] and "compileCacheUrls" not in p5.outputs
    ft = preset_plan("trn1-finetune")
    charts = {r.inputs["chart"] for r in ft.of_type("kubernetes:helm.sh/v3:Release")}
    assert charts == {"oci://public.ecr.aws/neuron/neuron-helm-chart", trainer}


def test_no_security_group_rule_opens_ingress_to_the_world() -> None:
    for path in PRESETS:
        plan = preset_plan(path.stem)
        for r in plan.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"):
            assert "cidrIpv4" not in r.inputs and "cidrIpv6" not in r.inputs, r.name
            assert r.inputs["referencedSecurityGroupId"].startswith("sg-")
        for r in plan.of_type("aws:ec2/securityGroup:SecurityGroup"):
            assert not r.inputs.get("ingress"), r.name
        for r in plan.of_type("aws:ec2/securityGroupRule:SecurityGroupRule"):
            assert not (
                r.inputs["type"] == "ingress" and "0.0.0.0/0" in r.inputs.get("cidrBlocks", [])
            )


def test_efa_security_group_allows_self_ingress_and_egress() -> None:
    plan = preset_plan("trn1-multinode")
    sg = "trn1-multinode-trn1-efa-sg"
    for typ, name in (
        ("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "ingress"),
        ("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule", "egress"),
    ):
        rule = plan.get(typ, f"trn1-multinode-trn1-efa-self-{name}").inputs
        assert rule["ipProtocol"] == "-1"
        assert rule["referencedSecurityGroupId"] == rule["securityGroupId"]
        assert rule["securityGroupId"].startswith("sg-") and sg


def test_fsx_lustre() -> None:
    plan = preset_plan("llama3-70b-p5")
    (fs,) = plan.of_type(FSX)
    assert fs.inputs["deploymentType"] == "PERSISTENT_2"
    # the lowest tier that writes the 1.13 TB checkpoint within the default 5 minutes
    assert fs.inputs["perUnitStorageThroughput"] == 1000
    assert plan.option(FSX, fs.name, "protect") is True
    ports = sorted(
        (r.inputs["fromPort"], r.inputs["toPort"])
        for r in plan.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
        if r.parent == "llama3-70b-p5-fsx"
    )
    assert set(ports) == {(988, 988), (1018, 1023)}
    subnet = plan.get("aws:ec2/subnet:Subnet", "llama3-70b-p5-network-private-use2-az3")
    assert subnet.inputs["availabilityZoneId"] == "use2-az3"
    assert fs.inputs["subnetIds"] == pool_ng(plan, "h100").inputs["subnetIds"][0]


def test_network_tags_and_zones() -> None:
    plan = preset_plan("mixed-trn2-p5")
    subnets = plan.of_type("aws:ec2/subnet:Subnet")
    zones = {s.inputs["availabilityZoneId"] for s in subnets}
    assert zones == {"use2-az1", "use2-az2"}
    for s in subnets:
        tags = s.inputs["tags"]
        assert tags["kubernetes.io/cluster/mixed-trn2-p5"] == "shared"
        role = (
            "kubernetes.io/role/elb" if "-public-" in s.name else "kubernetes.io/role/internal-elb"
        )
        assert tags[role] == "1"


def test_one_nat_per_zone_when_not_single(catalog: Catalog) -> None:
    data = small_spec(catalog, "trn1.32xlarge")
    data["network"] = {"single_nat_gateway": False}
    assert len(plan_data(data).of_type("aws:ec2/natGateway:NatGateway")) == 2


def test_existing_network_uses_the_given_subnets(catalog: Catalog) -> None:
    data = small_spec(catalog, "trn1.32xlarge")
    data["network"] = {
        "mode": "existing",
        "vpc_id": "vpc-0123456789abcdef0",
        "private_subnet_ids": ["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"],
    }
    plan = plan_data(data)
    assert plan.of_type("aws:ec2/vpc:Vpc") == [] and plan.of_type("aws:ec2/subnet:Subnet") == []
    assert pool_ng(plan, "p").inputs["subnetIds"] == ["subnet-0aaaaaaaaaaaaaaa1"]


# ---------------------------------------------------------------------------------------
# Stability: budget, tags and node count change nothing that matters
# ---------------------------------------------------------------------------------------


def test_budget_tags_and_nodes_keep_names_and_stateful_inputs() -> None:
    path = ROOT / "stacks" / "llama3-70b-trn2.yaml"
    base = preset_plan("llama3-70b-trn2")
    data = copy.deepcopy(read_yaml(path))
    data["budget"] = {"max_hourly_usd": 9999, "max_run_usd": 9_999_999}
    data["tags"] = {"team": "another-team", "new-tag": "x"}
    data["pools"][0]["nodes"] = 24
    changed = plan_stack(resolve(parse_spec(data, str(path))))
    # the same resources, except one propagated Auto Scaling group tag per user tag key and
    # the private registry path 24 nodes add (scale.yaml image_delivery: NAT-bound above 20)
    tag = "aws:autoscaling/tag:Tag"
    registry = ("-ecr-api", "-ecr-dkr", "-ecr-endpoints-sg", "-ecr-endpoints-https")
    added = ("-cache-ecr-public", "-node-role-pull-through", *registry)
    assert [
        (r.type, r.name) for r in changed.resources if r.type != tag and not r.name.endswith(added)
    ] == [(r.type, r.name) for r in base.resources if r.type != tag]
    assert len(changed.of_type(tag)) == 2 * len(data["tags"])  # pool + system group
    for typ in STATEFUL:
        assert base.of_type(typ), typ
        assert [r.inputs for r in changed.of_type(typ)] == [r.inputs for r in base.of_type(typ)]
    # ...while the changes did land where they belong
    assert pool_ng(changed, "trn2").inputs["scalingConfig"]["desiredSize"] == 24
    provider = changed.of_type("pulumi:providers:aws")[0]
    assert "another-team" in provider.inputs["defaultTags"]


# ---------------------------------------------------------------------------------------
# Failures and the guard hook
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_stack() -> Stack:
    return resolve(load_spec(ROOT / "stacks" / "trn1-finetune.yaml"))


def test_duplicate_names_fail_cleanly(tiny_stack: Stack) -> None:
    def build(stack: Stack) -> dict[str, Any]:
        import pulumi_aws as aws

        aws.ec2.Vpc("same", cidr_block="10.0.0.0/16")
        aws.ec2.Vpc("same", cidr_block="10.1.0.0/16")
        return {}

    with pytest.raises(PlanError, match=r"two resources share the name aws:ec2/vpc:Vpc 'same'"):
        run_plan(tiny_stack, build=build)


def test_unknown_lookup_fails_cleanly_and_the_next_plan_works(tiny_stack: Stack) -> None:
    def build(stack: Stack) -> dict[str, Any]:
        import pulumi_aws as aws

        ami = aws.ec2.get_ami_output(owners=["amazon"], most_recent=True)
        aws.ec2.Instance("i", ami=ami.id, instance_type="m6i.large")
        return {}

    with pytest.raises(PlanError) as err:
        run_plan(tiny_stack, build=build)
    assert "no offline answer for lookup 'aws:ec2/getAmi:getAmi'" in str(err.value)
    assert "\n" not in str(err.value)
    assert len(plan_stack(tiny_stack).resources) == len(preset_plan("trn1-finetune").resources)


def test_program_exception_fails_cleanly(tiny_stack: Stack) -> None:
    def build(stack: Stack) -> dict[str, Any]:
        raise ValueError("boom\nsecond line")

    with pytest.raises(
        PlanError,
        match=r"^trn1-finetune: the program failed: ValueError: boom \(at tests/plan/test_plan\.py:\d+ in build\)$",
    ):
        run_plan(tiny_stack, build=build)


def test_guard_refusal_registers_nothing(
    tiny_stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []

    def enforce(stack: Stack) -> None:
        calls.append(stack.name)
        raise VerdictError(f"{stack.name}: over budget")

    monkeypatch.setattr("accelstack.plan.engine.enforce", enforce)
    built: list[str] = []

    def build(stack: Stack) -> dict[str, Any]:
        built.append(stack.name)
        return {}

    with pytest.raises(VerdictError, match="over budget"):
        run_plan(tiny_stack, build=build)
    assert calls == ["trn1-finetune"] and built == []


def test_over_budget_spec_registers_nothing_with_the_real_guard(
    tiny_stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = copy.deepcopy(read_yaml(ROOT / "stacks" / "trn1-finetune.yaml"))
    data["budget"] = {"max_hourly_usd": 0.5}
    stack = resolve(parse_spec(data, "trn1-finetune.yaml"))
    built: list[str] = []

    def build(s: Stack) -> dict[str, Any]:
        built.append(s.name)
        return {}

    with pytest.raises(VerdictError, match="over budget"):
        run_plan(stack, build=build)
    assert built == []


# ---------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------


def test_cli_plan_text_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    spec = str(ROOT / "stacks" / "trn1-finetune.yaml")
    assert main(["plan", spec]) == 0
    out = capsys.readouterr().out
    assert "aws:eks/nodeGroup:NodeGroup  trn1-finetune-trn1-ng" in out
    assert 'kubeconfig: "[secret]"' in out
    assert main(["plan", spec, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["stack"] == "trn1-finetune"
    assert main(["plan", spec, "--format", "yaml"]) == 2
    assert main(["plan", str(ROOT / "stacks" / "nope.yaml")]) == 2


def test_cli_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(ROOT / "stacks")]) == 0
    out = capsys.readouterr().out
    assert f"{len(PRESETS)} of {len(PRESETS)} specs passed" in out
    good = yaml.safe_load((ROOT / "stacks" / "trn1-finetune.yaml").read_text())
    (tmp_path / "trn1-finetune.yaml").write_text(yaml.safe_dump(good))
    bad = dict(good, name="broken")
    bad["pools"] = [dict(good["pools"][0], instance_type="trn9.huge")]
    (tmp_path / "broken.yaml").write_text(yaml.safe_dump(bad))
    assert main(["check", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert "1 of 2 specs passed" in captured.out and "trn9.huge" in captured.err
    assert main(["check", str(tmp_path / "missing")]) == 2
    # an over-budget spec is a verdict: exit 1, not 2
    (tmp_path / "broken.yaml").unlink()
    (tmp_path / "trn1-finetune.yaml").write_text(
        yaml.safe_dump(dict(good, budget={"max_hourly_usd": 0.5}))
    )
    assert main(["check", str(tmp_path)]) == 1
    assert "over budget" in capsys.readouterr().err


def test_existing_compile_cache_bucket_is_used_not_created(catalog: Catalog) -> None:
    data = small_spec(catalog, "trn1.32xlarge")
    data["compile_cache"] = {"bucket": "team-neuron-cache", "prefix": "jobs/"}
    plan = plan_data(data)
    assert [b.name for b in plan.of_type(BUCKET)] == [f"{data['name']}-checkpoints-bucket"]
    cache = f"{data['name']}-training-compile-cache"
    policy = json.loads(plan.get("aws:iam/rolePolicy:RolePolicy", cache).inputs["policy"])
    assert policy["Statement"][1]["Resource"] == "arn:aws:s3:::team-neuron-cache/jobs/*"
    assert plan.outputs["compileCacheUrls"] == {"p": "s3://team-neuron-cache/jobs/p/"}


def test_the_pulumi_program_builds_what_the_plan_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """__main__.py under the same mocks: config -> spec -> guard -> build -> exports."""
    import runpy

    import pulumi

    # config accelstack:spec names the spec; the Pulumi stack is the spec's own (same name), so
    # resources keep the spec's names (tests/resolve/test_stack_names.py: other stack names)
    stack = resolve(load_spec(ROOT / "stacks" / "trn1-multinode.yaml"))
    filled_copy(ROOT / "stacks" / "trn1-multinode.yaml", tmp_path)  # placeholders filled in
    monkeypatch.chdir(tmp_path)

    def program(_: Stack) -> dict[str, Any]:
        multinode = resolve(load_spec(ROOT / "stacks" / "trn1-multinode.yaml"))
        pins = {p: fake_ami(p) for p in multinode.ami_parameters}  # as `accelstack amis pin`
        pulumi.runtime.set_all_config(
            {"accelstack:spec": "stacks/trn1-multinode.yaml", "accelstack:amis": json.dumps(pins)}
        )
        try:
            runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__")
        finally:
            pulumi.runtime.set_all_config({})
        return {}

    plan = run_plan(stack, build=program, guard=False)  # __main__ runs the guard itself
    # the preset with its placeholders filled (access entry names hash the admin ARN)
    want = plan_stack(resolve(load_spec(tmp_path / "stacks" / "trn1-multinode.yaml")))
    assert [(r.type, r.name) for r in plan.resources] == [(r.type, r.name) for r in want.resources]
    # (lookup answers follow the mocked stack's region, so compare region-free inputs)
    assert [r.inputs for r in plan.of_type(NG)] == [r.inputs for r in want.of_type(NG)]


def test_a_plan_registers_without_the_sdks_stack_traces_and_puts_the_hook_back() -> None:
    """Under mocks nothing reads a registration's stack trace, so the plan skips collecting it;
    the SDK's own collector is back after the plan, whether the program ran or raised."""
    from pulumi.runtime import resource

    original = resource._get_stack_trace
    stack = resolve(load_spec(ROOT / "stacks" / "trn1-finetune.yaml"), load_catalog())
    during: list[Any] = []

    def program(s: Stack) -> dict[str, Any]:
        during.append(resource._get_stack_trace())
        return {}

    def broken(s: Stack) -> dict[str, Any]:
        raise RuntimeError("the program failed")

    run_plan(stack, program, guard=False)
    assert len(during) == 1 and list(during[0].frames) == []
    assert resource._get_stack_trace is original
    with pytest.raises(Exception, match="the program failed"):
        run_plan(stack, broken, guard=False)
    assert resource._get_stack_trace is original
