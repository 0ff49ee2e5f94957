"""Standalone clusters (orchestration: ec2): the trn1-standalone preset and variants planned
offline under Pulumi mocks, with the EKS path's assertions (EFA count, placement group rules,
IMDSv2, encrypted gp3 roots, no 0.0.0.0/0 ingress), plus what is standalone's own: the DLAMI,
one private subnet, SSM-only access, the instance profile, the user data and its rank and
rendezvous environment."""

from __future__ import annotations

import copy
import json
import subprocess
from functools import cache
from typing import Any

import pytest

from accelstack.catalog import load_catalog
from accelstack.components.compile_cache import bucket_name
from accelstack.components.standalone import (
    ENV_FILE,
    HEAD_UNKNOWN,
    RUN_COMMAND,
    USER_DATA_LIMIT,
    _heredoc,
    market_options,
    node_env,
    run_command,
    ssh_access,
    user_data,
)
from accelstack.cost.pricing import price_plan, price_stack
from accelstack.plan import ACCOUNT_ID, Answers, Plan, PlannedResource, fake_ami
from accelstack.render import render_node_script
from accelstack.resolve import Stack, resolve
from accelstack.spec import load_spec, parse_spec, read_yaml

from .conftest import ROOT, STACKS, compare_golden
from .helpers_plan import plan_stack
from .helpers_render import SHELLCHECK, SHELLCHECK_ARGS

PRESET = "trn1-standalone"
LT = "aws:ec2/launchTemplate:LaunchTemplate"
INSTANCE = "aws:ec2/instance:Instance"
PG = "aws:ec2/placementGroup:PlacementGroup"
INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
EGRESS = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
SUBNET = "aws:ec2/subnet:Subnet"
GPU_DLAMI = "/aws/service/deeplearning/ami/x86_64/oss-nvidia-driver-gpu-pytorch-2.11-amazon-linux-2023/latest/ami-id"


def preset_stack() -> Stack:
    return resolve(load_spec(STACKS / f"{PRESET}.yaml"))


def variant(edit: Any) -> Stack:
    data = copy.deepcopy(read_yaml(STACKS / f"{PRESET}.yaml"))
    edit(data)
    return resolve(parse_spec(data, f"{data['name']}.yaml"))


def p5_standalone(data: dict[str, Any]) -> None:
    """The p5e capacity-block preset as a standalone cluster."""
    data.clear()
    data.update(copy.deepcopy(read_yaml(STACKS / "p5e-capacity-block.yaml")))
    data["orchestration"] = "ec2"


def finetune_standalone(data: dict[str, Any]) -> None:
    """The single trn1.2xlarge preset (no EFA) as a standalone cluster."""
    data.clear()
    data.update(copy.deepcopy(read_yaml(STACKS / "trn1-finetune.yaml")))
    data["orchestration"] = "ec2"


@pytest.fixture(autouse=True)
def gpu_dlami_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The offline plan answers SSM parameters ending in /image_id only; the GPU DLAMI's ends in
    /ami-id (a change requested in accelstack/plan.py). Answer it here the same way."""
    original = Answers._ssm

    def _ssm(self: Answers, args: dict[str, Any]) -> dict[str, Any]:
        name = str(args.get("name"))
        if name.endswith("/ami-id"):
            return original(self, {**args, "name": name[: -len("/ami-id")] + "/image_id"}) | {
                "name": name,
                "value": fake_ami(name),
                "insecureValue": fake_ami(name),
                "id": name,
            }
        return original(self, args)

    monkeypatch.setattr(Answers, "_ssm", _ssm)


@cache
def plan_of(key: str) -> Plan:
    stacks = {
        PRESET: preset_stack,
        "p5e": lambda: variant(p5_standalone),
        "no-efa": lambda: variant(finetune_standalone),
        "ssh": lambda: variant(
            lambda d: d.update(standalone={"ssh_key_name": "ops", "ssh_cidrs": ["203.0.113.0/24"]})
        ),
        "spot-efa-only": lambda: variant(
            lambda d: d["pools"][0].update(
                purchase={"option": "spot"}, efa_interface_style="efa-only"
            )
        ),
    }
    return plan_stack(stacks[key]())


def lt_of(plan: Plan, pool: str) -> PlannedResource:
    return plan.get(LT, f"{plan.stack}-{pool}-lt")


def instances(plan: Plan) -> list[PlannedResource]:
    return plan.of_type(INSTANCE)


# ---------------------------------------------------------------------------------------
# Golden plan and the program hook
# ---------------------------------------------------------------------------------------


def test_golden_plan_of_the_standalone_preset() -> None:
    plan = plan_of(PRESET)
    compare_golden(plan.to_json(), ROOT / "tests" / "golden" / "plan" / f"{PRESET}.json")
    assert plan.of_type("aws:eks/cluster:Cluster") == []
    assert plan.of_type("aws:eks/nodeGroup:NodeGroup") == []
    assert len(plan.of_type("accelstack:standalone:StandaloneCluster")) == 1


def test_instances_per_pool_with_rank_tags_and_names() -> None:
    plan = plan_of(PRESET)
    insts = instances(plan)
    assert [i.name for i in insts] == [f"{PRESET}-trn1-0", f"{PRESET}-trn1-1"]
    for rank, inst in enumerate(insts):
        assert inst.inputs["instanceType"] == "trn1.32xlarge"
        assert inst.inputs["tags"]["accelstack.io/pool"] == "trn1"
        assert inst.inputs["tags"]["accelstack.io/node-rank"] == str(rank)
        assert inst.inputs["tags"]["accelstack:stack"] == PRESET
        assert inst.inputs["launchTemplate"]["name"] == f"{PRESET}-trn1-lt"
        assert inst.parent == PRESET
    assert len(plan.outputs["instanceIds"]["trn1"]) == 2
    assert plan.outputs["runCommands"]["trn1"] == run_command(
        preset_stack(), preset_stack().pools[0]
    )


def test_cost_guard_prices_the_standalone_plan_like_the_spec() -> None:
    stack = preset_stack()
    from_plan = price_plan(stack, plan_of(PRESET).resources)
    from_spec = price_stack(stack)
    assert from_plan.hourly_usd == pytest.approx(from_spec.hourly_usd)
    assert from_plan.hourly_usd > 2 * 21.5  # two trn1.32xlarge on demand, plus the rest


# ---------------------------------------------------------------------------------------
# The EKS path's assertions: EFA, placement groups, IMDSv2, root volumes, ingress
# ---------------------------------------------------------------------------------------


def test_launch_template_has_every_efa_interface() -> None:
    plan, cat = plan_of(PRESET), load_catalog()
    nics = lt_of(plan, "trn1").inputs["networkInterfaces"]
    assert len(nics) == cat.instances["trn1.32xlarge"].efa_interfaces == 8
    assert (nics[0]["deviceIndex"], nics[0]["interfaceType"]) == (0, "efa")
    assert {n["deviceIndex"] for n in nics[1:]} == {1}
    assert {n["interfaceType"] for n in nics[1:]} == {"efa"}
    assert [n["networkCardIndex"] for n in nics] == list(range(8))
    assert len({n["subnetId"] for n in nics}) == 1
    assert all(n["securityGroups"] == [plan.outputs["securityGroupId"]] for n in nics)
    # the launch template carries the interfaces, so instances name no subnet of their own
    assert all("subnetId" not in i.inputs for i in instances(plan))


def test_p5e_has_32_interfaces_in_the_efa_only_style() -> None:
    nics = lt_of(plan_of("p5e"), "h200").inputs["networkInterfaces"]
    assert len(nics) == 32
    assert nics[0]["interfaceType"] == "efa"
    assert {n["interfaceType"] for n in nics[1:]} == {"efa-only"}


def test_placement_group_rules() -> None:
    plan = plan_of(PRESET)
    (pg,) = plan.of_type(PG)
    assert pg.name == f"{PRESET}-trn1-pg" and pg.inputs["strategy"] == "cluster"
    assert lt_of(plan, "trn1").inputs["placement"] == {"groupName": pg.name}
    # a capacity block: no placement group (it can cap how many reserved instances launch)
    cb = plan_of("p5e")
    assert cb.of_type(PG) == [] and "placement" not in lt_of(cb, "h200").inputs
    # no EFA: no placement group, no interfaces; the instance sits in the subnet directly
    ne = plan_of("no-efa")
    assert ne.of_type(PG) == [] and "networkInterfaces" not in lt_of(ne, "trn1").inputs
    (inst,) = instances(ne)
    assert inst.inputs["subnetId"].startswith("subnet-")
    assert inst.inputs["vpcSecurityGroupIds"] == [ne.outputs["securityGroupId"]]


def test_capacity_block_and_spot_markets() -> None:
    lt = lt_of(plan_of("p5e"), "h200").inputs
    assert lt["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": "cr-0a1b2c3d4e5f67890"}
    }
    assert lt["instanceMarketOptions"] == {"marketType": "capacity-block"}
    spot = lt_of(plan_of("spot-efa-only"), "trn1").inputs
    assert spot["instanceMarketOptions"]["marketType"] == "spot"
    assert "capacityReservationSpecification" not in spot
    assert {n["interfaceType"] for n in spot["networkInterfaces"][1:]} == {"efa-only"}
    assert "instanceMarketOptions" not in lt_of(plan_of(PRESET), "trn1").inputs


def test_imdsv2_and_encrypted_gp3_roots() -> None:
    for key in (PRESET, "p5e", "no-efa"):
        plan = plan_of(key)
        for lt in plan.of_type(LT):
            md = lt.inputs["metadataOptions"]
            assert md["httpTokens"] == "required" and md["httpPutResponseHopLimit"] == 2
        for inst in instances(plan):
            assert "metadataOptions" not in inst.inputs  # nothing overrides the template
            root = inst.inputs["rootBlockDevice"]
            assert (root["volumeType"], root["encrypted"], root["volumeSize"]) == ("gp3", True, 512)


def test_no_ingress_from_the_internet_by_default() -> None:
    for key in (PRESET, "p5e", "no-efa"):
        plan = plan_of(key)
        for r in plan.of_type(INGRESS):
            assert "cidrIpv4" not in r.inputs and "cidrIpv6" not in r.inputs, r.name
            assert r.inputs["referencedSecurityGroupId"] == r.inputs["securityGroupId"]
        for r in plan.of_type("aws:ec2/securityGroup:SecurityGroup"):
            assert not r.inputs.get("ingress"), r.name
        assert all("keyName" not in lt.inputs for lt in plan.of_type(LT))


def test_self_rules_and_limited_egress() -> None:
    plan = plan_of(PRESET)
    egress = {r.name: r.inputs for r in plan.of_type(EGRESS)}
    self_rule = egress[f"{PRESET}-self-egress"]
    assert self_rule["ipProtocol"] == "-1"
    assert self_rule["referencedSecurityGroupId"] == self_rule["securityGroupId"]
    to_world = [r for r in egress.values() if r.get("cidrIpv4") == "0.0.0.0/0"]
    assert sorted((r["ipProtocol"], r["fromPort"]) for r in to_world) == [("tcp", 80), ("tcp", 443)]
    (ingress,) = plan.of_type(INGRESS)
    assert ingress.inputs["ipProtocol"] == "-1"


def test_ssh_only_when_asked_from_the_given_cidrs() -> None:
    plan = plan_of("ssh")
    ssh = [r for r in plan.of_type(INGRESS) if r.inputs.get("fromPort") == 22]
    assert [(r.inputs["cidrIpv4"], r.inputs["toPort"]) for r in ssh] == [("203.0.113.0/24", 22)]
    assert lt_of(plan, "trn1").inputs["keyName"] == "ops"
    key, cidrs, warning = ssh_access(
        variant(
            lambda d: d.update(standalone={"ssh_key_name": "ops", "ssh_cidrs": ["203.0.113.0/24"]})
        )
    )
    assert (key, cidrs) == ("ops", ("203.0.113.0/24",))
    assert warning is not None and "SSH (tcp/22) is open from 203.0.113.0/24" in warning
    assert ssh_access(preset_stack()) == (None, (), None)


# ---------------------------------------------------------------------------------------
# Standalone's own: DLAMI, one subnet, instance profile
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "pool", "param"),
    [
        (PRESET, "trn1", "/aws/service/neuron/dlami/multi-framework/ubuntu-22.04/latest/image_id"),
        ("p5e", "h200", GPU_DLAMI),
    ],
)
def test_ami_is_the_dlami_from_its_public_parameter(key: str, pool: str, param: str) -> None:
    plan = plan_of(key)
    assert {"token": "aws:ssm/getParameter:getParameter", "args": {"name": param}} in plan.lookups
    assert lt_of(plan, pool).inputs["imageId"] == fake_ami(param)
    device = load_catalog().device_kind_of(lt_of(plan, pool).inputs["instanceType"])
    assert device.standalone_ami_parameter == param


def test_one_private_subnet_in_the_pool_zone() -> None:
    plan, stack = plan_of(PRESET), preset_stack()
    private = [s for s in plan.of_type(SUBNET) if "-private-" in s.name]
    assert [s.inputs["availabilityZoneId"] for s in private] == [stack.pools[0].zone_id]
    public = [s for s in plan.of_type(SUBNET) if "-public-" in s.name]
    assert len(public) == 1 and public[0].inputs["mapPublicIpOnLaunch"] is False  # NAT only
    assert all(
        "associatePublicIpAddress" not in n for n in lt_of(plan, "trn1").inputs["networkInterfaces"]
    )


def test_instance_profile_has_ssm_core_and_only_the_cache_prefix() -> None:
    plan = plan_of(PRESET)
    attachments = plan.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    assert [a.inputs["policyArn"] for a in attachments] == [
        "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore"
    ]
    (policy,) = plan.of_type("aws:iam/rolePolicy:RolePolicy")
    doc = json.loads(policy.inputs["policy"])
    bucket = bucket_name(PRESET, ACCOUNT_ID)
    assert sorted(str(s["Resource"]) for s in doc["Statement"]) == [
        f"arn:aws:s3:::{bucket}",
        f"arn:aws:s3:::{bucket}/neuron-cache/*",
    ]
    assert {
        a
        for s in doc["Statement"]
        for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    } == {"s3:ListBucket", "s3:GetObject", "s3:PutObject", "s3:DeleteObject"}
    (profile,) = plan.of_type("aws:iam/instanceProfile:InstanceProfile")
    assert lt_of(plan, "trn1").inputs["iamInstanceProfile"]["arn"].endswith(profile.name)
    trust = json.loads(plan.of_type("aws:iam/role:Role")[0].inputs["assumeRolePolicy"])
    assert trust["Statement"][0]["Principal"]["Service"] == "ec2.amazonaws.com"
    (b,) = plan.of_type("aws:s3/bucket:Bucket")
    assert b.inputs["bucket"] == bucket and plan.option(b.type, b.name, "protect") is True


def test_gpu_pool_has_no_cache_policy() -> None:
    plan = plan_of("p5e")
    assert plan.of_type("aws:iam/rolePolicy:RolePolicy") == []
    assert plan.of_type("aws:s3/bucket:Bucket") == []


# ---------------------------------------------------------------------------------------
# User data: the launch script and the rank and rendezvous environment
# ---------------------------------------------------------------------------------------


def env_lines(text: str) -> dict[str, str]:
    body = text.split(f"cat > {ENV_FILE} <<'ACCELSTACK_ENV_EOF'\n", 1)[1]
    body = body.split("\nACCELSTACK_ENV_EOF\n", 1)[0]
    return dict(line.split("=", 1) for line in body.splitlines())


def test_user_data_rank_environment_and_the_installed_script() -> None:
    plan, stack = plan_of(PRESET), preset_stack()
    head, worker = (i.inputs["userData"] for i in instances(plan))
    bucket = bucket_name(PRESET, ACCOUNT_ID)
    assert env_lines(head) == {
        "ACCELSTACK_STACK": PRESET,
        "ACCELSTACK_POOL": "trn1",
        "ACCELSTACK_ORCHESTRATOR": "standalone",
        "ACCELSTACK_NNODES": "2",
        "ACCELSTACK_NODE_RANK": "0",
        "ACCELSTACK_RDZV_PORT": "29500",
        "ACCELSTACK_COMPILE_CACHE_URL": f"s3://{bucket}/neuron-cache/trn1/",
    }
    assert "latest/meta-data/local-ipv4" in head  # the head reads its own address
    assert env_lines(worker)["ACCELSTACK_NODE_RANK"] == "1"
    assert "ACCELSTACK_HEAD_ADDR" in env_lines(worker)
    assert "local-ipv4" not in worker
    script = render_node_script(stack, stack.pools[0], "standalone", bucket=bucket)
    assert f"cat > /opt/accelstack/launch-trn1.sh <<'ACCELSTACK_SCRIPT_EOF'\n{script}" in head
    assert f"cat > {RUN_COMMAND} <<'ACCELSTACK_RUN_EOF'" in worker


def test_workers_get_the_head_private_ip_through_output_apply(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    original = Answers.new_resource

    def new_resource(self: Answers, typ: str, name: str, inputs: dict[str, Any]) -> Any:
        rid, out = original(self, typ, name, inputs)
        if typ == INSTANCE:
            out["privateIp"] = f"10.42.0.{10 + int(name.rsplit('-', 1)[1])}"
        return rid, out

    monkeypatch.setattr(Answers, "new_resource", new_resource)
    plan = plan_stack(preset_stack())
    head, worker = instances(plan)
    assert env_lines(worker.inputs["userData"])["ACCELSTACK_HEAD_ADDR"] == "10.42.0.10"
    assert "ACCELSTACK_HEAD_ADDR" not in env_lines(head.inputs["userData"])
    assert plan.outputs["headAddresses"] == {"trn1": "10.42.0.10"}


def test_user_data_passes_shellcheck(tmp_path: Any) -> None:
    stack = preset_stack()
    pool = stack.pools[0]
    script = render_node_script(stack, pool, "standalone", bucket="b")
    for rank, head in ((0, None), (1, "10.0.0.5")):
        text = user_data(
            stack,
            pool,
            rank,
            head,
            "launch-trn1.sh",
            script,
            "s3://b/p/",
            ("fs-1.fsx.us-west-2.amazonaws.com", "abcdefgh"),
        )
        path = tmp_path / f"ud-{rank}.sh"
        path.write_text(text)
        proc = subprocess.run(
            [str(SHELLCHECK), *SHELLCHECK_ARGS, "-e", "SC1091", str(path)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stdout
        assert subprocess.run(["bash", "-n", str(path)], timeout=30).returncode == 0


def test_pure_helpers() -> None:
    stack = preset_stack()
    pool = stack.pools[0]
    assert node_env(stack, pool, 1, None, None)["ACCELSTACK_HEAD_ADDR"] == HEAD_UNKNOWN
    assert "ACCELSTACK_HEAD_ADDR" not in node_env(stack, pool, 0, "10.0.0.1", None)
    assert market_options(pool) is None
    with pytest.raises(ValueError, match="heredoc marker"):
        _heredoc("/x", "a\nEOF_X\nb", "0644", "EOF_X")
    with pytest.raises(ValueError, match=f"EC2 allows {USER_DATA_LIMIT}"):
        user_data(stack, pool, 0, None, "s.sh", "#" * USER_DATA_LIMIT, None)


def trn2_standalone_lnc1(data: dict[str, Any]) -> None:
    """The trn2 preset as a standalone cluster at LNC=1 (the trn2 default is 2)."""
    data.clear()
    data.update(copy.deepcopy(read_yaml(STACKS / "llama3-70b-trn2.yaml")))
    data["orchestration"] = "ec2"
    data["pools"][0]["logical_cores"] = 1


def test_user_data_writes_a_non_default_lnc_on_the_node() -> None:
    stack = variant(trn2_standalone_lnc1)
    pool = stack.pools[0]
    script = render_node_script(stack, pool, "standalone", bucket="b")
    text = user_data(stack, pool, 1, "10.0.0.5", "launch-trn2.sh", script, None)
    assert "echo NEURON_LOGICAL_NC_CONFIG=1 > /opt/aws/neuron/logical_nc_config\n" in text
    # the default LNC is left to the node: nothing written
    default = preset_stack()  # trn1: LNC 1 is its only setting
    d_pool = default.pools[0]
    d_script = render_node_script(default, d_pool, "standalone", bucket="b")
    assert "logical_nc_config" not in user_data(
        default, d_pool, 1, "10.0.0.5", "x.sh", d_script, None
    )
