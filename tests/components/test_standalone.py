"""Standalone clusters (orchestration: ec2): the trn1-standalone preset and variants planned
offline under Pulumi mocks, with the EKS path's assertions (EFA count, placement group rules,
IMDSv2, encrypted gp3 roots, no 0.0.0.0/0 ingress), plus what is standalone's own: the DLAMI,
one private subnet, SSM-only access, the instance profile, one EC2 Fleet request per pool and
the SSM document + association that deliver the launch script and environment."""

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
    RUN_COMMAND,
    _heredoc,
    install_script,
    node_env,
    run_command,
    run_wrapper,
    ssh_access,
    ssm_document,
)
from accelstack.cost.pricing import price_plan, price_stack
from accelstack.inventory import fleet_capacity
from accelstack.plan import ACCOUNT_ID, Plan, PlannedResource, fake_ami
from accelstack.render import render_node_script
from accelstack.resolve import Stack, resolve
from accelstack.spec import load_spec, parse_spec, read_yaml

from .. import factories
from ..conftest import ROOT, STACKS, compare_golden
from ..helpers_plan import plan_stack
from ..helpers_render import SHELLCHECK, SHELLCHECK_ARGS

PRESET = "trn1-standalone"
LT = "aws:ec2/launchTemplate:LaunchTemplate"
INSTANCE = "aws:ec2/instance:Instance"
FLEET = "aws:ec2/fleet:Fleet"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
DOCUMENT = "aws:ssm/document:Document"
ASSOCIATION = "aws:ssm/association:Association"
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
    factories.to_standalone(data)


def finetune_standalone(data: dict[str, Any]) -> None:
    """The single trn1.2xlarge preset (no EFA) as a standalone cluster."""
    data.clear()
    data.update(copy.deepcopy(read_yaml(STACKS / "trn1-finetune.yaml")))
    factories.to_standalone(data)


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


def fleet_of(plan: Plan, pool: str) -> PlannedResource:
    return plan.get(FLEET, f"{plan.stack}-{pool}-fleet")


def document_of(plan: Plan, pool: str) -> dict[str, Any]:
    return json.loads(plan.get(DOCUMENT, f"{plan.stack}-{pool}-install").inputs["content"])


def install_text(plan: Plan, pool: str) -> str:
    return "\n".join(document_of(plan, pool)["mainSteps"][0]["inputs"]["runCommand"]) + "\n"


# ---------------------------------------------------------------------------------------
# Golden plan and the program hook
# ---------------------------------------------------------------------------------------


def test_golden_plan_of_the_standalone_preset() -> None:
    plan = plan_of(PRESET)
    compare_golden(plan.to_json(), ROOT / "tests" / "golden" / "plan" / f"{PRESET}.json")
    assert plan.of_type("aws:eks/cluster:Cluster") == []
    assert plan.of_type("aws:eks/nodeGroup:NodeGroup") == []
    assert len(plan.of_type("accelstack:standalone:StandaloneCluster")) == 1


def test_one_fleet_request_per_pool_all_or_nothing() -> None:
    """The pool's instances launch in one request (EC2 Fleet, instant),
    all `nodes` or none, not one aws:ec2/instance per node."""
    plan = plan_of(PRESET)
    assert plan.of_type(INSTANCE) == []
    fleet = fleet_of(plan, "trn1").inputs
    assert fleet["type"] == "instant" and fleet["terminateInstances"] is True
    assert fleet["targetCapacitySpecification"] == {
        "defaultTargetCapacityType": "on-demand",
        "totalTargetCapacity": 2,
    }
    assert fleet["onDemandOptions"] == {
        "minTargetCapacity": 2,
        "singleAvailabilityZone": True,
        "singleInstanceType": True,
    }
    (cfg,) = fleet["launchTemplateConfigs"]
    assert cfg["launchTemplateSpecification"]["launchTemplateName"] == f"{PRESET}-trn1-lt"
    assert cfg["overrides"] == [{"instanceType": "trn1.32xlarge"}]  # subnet from the EFA NICs
    assert len(plan.outputs["instanceIds"]["trn1"]) == 2
    tags = lt_of(plan, "trn1").inputs["tagSpecifications"][0]
    assert tags["resourceType"] == "instance"
    assert (
        tags["tags"]["accelstack.io/pool"] == "trn1" and tags["tags"]["accelstack:stack"] == PRESET
    )
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
    assert {n["interfaceType"] for n in nics[1:]} == {
        "efa-only"
    }  # the catalog default (no IP per extra card)
    assert [n["networkCardIndex"] for n in nics] == list(range(8))
    assert len({n["subnetId"] for n in nics}) == 1
    assert all(n["securityGroups"] == [plan.outputs["securityGroupId"]] for n in nics)
    # the launch template carries the interfaces, so the fleet names no subnet of its own
    assert (
        "subnetId" not in fleet_of(plan, "trn1").inputs["launchTemplateConfigs"][0]["overrides"][0]
    )


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
    # no EFA: no placement group, no interfaces; the fleet puts the instance in the subnet
    ne = plan_of("no-efa")
    assert ne.of_type(PG) == [] and "networkInterfaces" not in lt_of(ne, "trn1").inputs
    (override,) = fleet_of(ne, "trn1").inputs["launchTemplateConfigs"][0]["overrides"]
    assert override["subnetId"].startswith("subnet-")
    assert lt_of(ne, "trn1").inputs["vpcSecurityGroupIds"] == [ne.outputs["securityGroupId"]]


def test_capacity_block_and_spot_markets() -> None:
    """The market is the fleet's (EC2 Fleet refuses market options in its launch template)."""
    cb = plan_of("p5e")
    lt = lt_of(cb, "h200").inputs
    assert lt["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": "cr-0a1b2c3d4e5f67890"}
    }
    assert "instanceMarketOptions" not in lt
    spec = fleet_of(cb, "h200").inputs["targetCapacitySpecification"]
    assert spec["defaultTargetCapacityType"] == "capacity-block"
    spot = plan_of("spot-efa-only")
    assert fleet_of(spot, "trn1").inputs["spotOptions"]["minTargetCapacity"] == 2
    assert "onDemandOptions" not in fleet_of(spot, "trn1").inputs
    assert "capacityReservationSpecification" not in lt_of(spot, "trn1").inputs
    assert {n["interfaceType"] for n in lt_of(spot, "trn1").inputs["networkInterfaces"][1:]} == {
        "efa-only"
    }
    assert "instanceMarketOptions" not in lt_of(plan_of(PRESET), "trn1").inputs


def test_imdsv2_and_encrypted_gp3_roots() -> None:
    for key in (PRESET, "p5e", "no-efa"):
        plan = plan_of(key)
        for lt in plan.of_type(LT):
            md = lt.inputs["metadataOptions"]
            assert md["httpTokens"] == "required"
            (root,) = lt.inputs["blockDeviceMappings"]
            ebs = root["ebs"]
            assert (ebs["volumeType"], ebs["encrypted"], ebs["volumeSize"]) == ("gp3", "true", 512)
            device = load_catalog().device_kind_of(lt.inputs["instanceType"])
            assert root["deviceName"] == device.standalone_root_device


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
        (PRESET, "trn1", "/aws/service/neuron/dlami/multi-framework/ubuntu-24.04/latest/image_id"),
        ("p5e", "h200", GPU_DLAMI),
    ],
)
def test_ami_is_the_dlami_from_its_public_parameter(key: str, pool: str, param: str) -> None:
    """The pinned id (simulated offline: what `accelstack amis pin` would record), no lookup."""
    plan = plan_of(key)
    assert not [lk for lk in plan.lookups if lk["token"] == "aws:ssm/getParameter:getParameter"]
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
    policies = {p.name: json.loads(p.inputs["policy"]) for p in plan.of_type(ROLE_POLICY)}
    assert policies.pop(f"{PRESET}-node-describe-policy")["Statement"] == [
        {"Action": "ec2:DescribeInstances", "Effect": "Allow", "Resource": "*"}
    ]  # rank discovery in accelstack-run
    (doc,) = policies.values()
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
    assert [p.name for p in plan.of_type(ROLE_POLICY)] == [f"{plan.stack}-node-describe-policy"]
    assert plan.of_type("aws:s3/bucket:Bucket") == []


# ---------------------------------------------------------------------------------------
# Delivery through SSM: the launch script and the environment
# ---------------------------------------------------------------------------------------


def env_lines(text: str) -> dict[str, str]:
    body = text.split(f"cat > {ENV_FILE} <<'ACCELSTACK_ENV_EOF'\n", 1)[1]
    body = body.split("\nACCELSTACK_ENV_EOF\n", 1)[0]
    return dict(line.split("=", 1) for line in body.splitlines())


def test_the_script_and_environment_come_through_an_ssm_association() -> None:
    plan, stack = plan_of(PRESET), preset_stack()
    assert all("userData" not in lt.inputs for lt in plan.of_type(LT))  # nothing in user data
    text = install_text(plan, "trn1")
    bucket = bucket_name(PRESET, ACCOUNT_ID)
    assert env_lines(text) == {
        "ACCELSTACK_STACK": PRESET,
        "ACCELSTACK_POOL": "trn1",
        "ACCELSTACK_REGION": "us-west-2",
        "ACCELSTACK_ORCHESTRATOR": "standalone",
        "ACCELSTACK_NNODES": "2",
        "ACCELSTACK_RDZV_PORT": "29500",
        "PET_MAX_RESTARTS": "3",
        "TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1",
        "ACCELSTACK_COMPILE_CACHE_URL": f"s3://{bucket}/neuron-cache/trn1/",
    }
    script = render_node_script(stack, stack.pools[0], "standalone", bucket=bucket)
    assert f"cat > /opt/accelstack/launch-trn1.sh <<'ACCELSTACK_SCRIPT_EOF'\n{script}" in text
    assert f"cat > {RUN_COMMAND} <<'ACCELSTACK_RUN_EOF'" in text
    (assoc,) = plan.of_type(ASSOCIATION)
    doc = plan.get(DOCUMENT, f"{PRESET}-trn1-install")
    assert doc.inputs["documentType"] == "Command"
    assert assoc.inputs["documentVersion"] == "1"  # follows the document's latest version
    assert assoc.inputs["targets"] == [
        {"key": "tag:accelstack:stack", "values": [PRESET]},
        {"key": "tag:accelstack.io/pool", "values": ["trn1"]},
    ]
    assert "applyOnlyAtCronInterval" not in assoc.inputs  # applies on create and on change


def test_a_new_argument_changes_the_document_not_the_instances() -> None:
    """A workload.args edit reaches the nodes through the document; launch template and fleet
    inputs stay the same, so `pulumi up` replaces no instance."""
    edited = plan_stack(variant(lambda d: d["workload"].update(args=["--new-flag"])))
    base = plan_of(PRESET)
    assert install_text(edited, "trn1") != install_text(base, "trn1")
    assert "--new-flag" in install_text(edited, "trn1")
    assert lt_of(edited, "trn1").inputs == lt_of(base, "trn1").inputs
    assert fleet_of(edited, "trn1").inputs == fleet_of(base, "trn1").inputs


def test_install_script_and_run_wrapper_pass_shellcheck(tmp_path: Any) -> None:
    stack = preset_stack()
    pool = stack.pools[0]
    script = render_node_script(stack, pool, "standalone", bucket="b")
    texts = {
        "install.sh": install_script(
            stack,
            pool,
            "launch-trn1.sh",
            script,
            "s3://b/p/",
            ("fs-1.fsx.us-west-2.amazonaws.com", "abcdefgh"),
        ),
        "run.sh": run_wrapper(
            "/opt/accelstack/launch-trn1.sh", "/opt/aws_neuronx_venv_pytorch_2_9/bin/activate"
        ),
    }
    for fname, text in texts.items():
        path = tmp_path / fname
        path.write_text(text)
        proc = subprocess.run(
            [str(SHELLCHECK), *SHELLCHECK_ARGS, "-e", "SC1091", str(path)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stdout
        assert subprocess.run(["bash", "-n", str(path)], timeout=30).returncode == 0


def test_run_wrapper_finds_rank_and_head_from_the_pool_instances(tmp_path: Any) -> None:
    """`accelstack-run` on 10.0.0.9 among 10.0.0.10, 10.0.0.9 and 10.0.0.2 is rank 1 of 3,
    head 10.0.0.2 (numeric IP order), with curl and aws stubbed."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "curl").write_text(
        '#!/bin/bash\ncase "$*" in *local-ipv4*) echo 10.0.0.9;; *) echo token;; esac\n'
    )
    (bin_dir / "aws").write_text("#!/bin/bash\nprintf '10.0.0.10\\t10.0.0.9\\t10.0.0.2\\n'\n")
    (bin_dir / "torchrun").write_text("#!/bin/bash\n")
    launch = tmp_path / "launch.sh"
    launch.write_text('#!/bin/bash\necho "$ACCELSTACK_NODE_RANK $ACCELSTACK_HEAD_ADDR"\n')
    env = tmp_path / "env"
    env.write_text(
        "ACCELSTACK_STACK=s\nACCELSTACK_POOL=p\nACCELSTACK_REGION=r\nACCELSTACK_NNODES=3\n"
    )
    for f in (*bin_dir.iterdir(), launch):
        f.chmod(0o755)
    wrapper = tmp_path / "run.sh"
    wrapper.write_text(
        run_wrapper(str(launch), "/nonexistent/bin/activate").replace(ENV_FILE, str(env))
    )
    proc = subprocess.run(
        ["bash", str(wrapper)],
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "1 10.0.0.2"


def test_pure_helpers() -> None:
    stack = preset_stack()
    pool = stack.pools[0]
    assert "ACCELSTACK_NODE_RANK" not in node_env(stack, pool, None)
    # standalone nodes carry the pods' node-fault budget too
    budget = stack.catalog.launch.fault_tolerance.torchrun_max_restarts
    assert node_env(stack, pool, None)["PET_MAX_RESTARTS"] == str(budget) and budget >= 1
    assert node_env(stack, pool, None)["TORCH_DISABLE_SHARE_RDZV_TCP_STORE"] == "1"
    assert fleet_capacity(pool)["on_demand_options"]["min_target_capacity"] == pool.nodes
    with pytest.raises(ValueError, match="heredoc marker"):
        _heredoc("/x", "a\nEOF_X\nb", "0644", "EOF_X")
    limit = stack.catalog.defaults.ssm_document_limit_bytes
    with pytest.raises(ValueError, match=f"SSM allows {limit}"):
        ssm_document("#" * limit, limit)


def trn2_standalone_lnc1(data: dict[str, Any]) -> None:
    """The trn2 preset as a standalone cluster at LNC=1 (the trn2 default is 2)."""
    data.clear()
    data.update(copy.deepcopy(read_yaml(STACKS / "llama3-70b-trn2.yaml")))
    factories.to_standalone(data)
    data["pools"][0]["logical_cores"] = 1


def test_launch_document_writes_a_non_default_lnc_on_the_node() -> None:
    stack = variant(trn2_standalone_lnc1)
    pool = stack.pools[0]
    script = render_node_script(stack, pool, "standalone", bucket="b")
    text = install_script(stack, pool, "launch-trn2.sh", script, None)
    assert "echo NEURON_LOGICAL_NC_CONFIG=1 > /opt/aws/neuron/logical_nc_config\n" in text
    # the default LNC is left to the node: nothing written
    default = preset_stack()  # trn1: LNC 1 is its only setting
    d_pool = default.pools[0]
    d_script = render_node_script(default, d_pool, "standalone", bucket="b")
    assert "logical_nc_config" not in install_script(default, d_pool, "x.sh", d_script, None)
