"""Work survives edits and faults: tag and label edits leave accelerator launch templates
unchanged, node groups repair themselves and update within their timeouts, reserved capacity
scales to zero, and every EKS stack has a durable checkpoint location its pods can reach."""

from __future__ import annotations

import base64
import copy
import json
from dataclasses import replace
from typing import Any

import pytest

from accelstack.catalog import Catalog, load_catalog
from accelstack.catalog.sizing import (
    fsx_gib_for,
    fsx_min_gib,
    fsx_tier_for,
    fsx_write_seconds,
    training_state_bytes,
)
from accelstack.cost.pricing import price_plan, price_stack
from accelstack.errors import SpecError
from accelstack.plan import Plan
from accelstack.plan.rules import evaluate
from accelstack.render import render_manifest
from accelstack.resolve import Stack, resolve
from accelstack.spec import Spec, parse_spec, read_yaml
from tests.conftest import STACKS, planned_preset, preset_ids
from tests.helpers_plan import plan_stack

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
ASG_TAG = "aws:autoscaling/tag:Tag"
ADDON = "aws:eks/addon:Addon"
ASSOCIATION = "aws:eks/podIdentityAssociation:PodIdentityAssociation"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
DRA = "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation"
BUCKET = "aws:s3/bucket:Bucket"

EKS_PRESETS = [
    s for s in preset_ids() if read_yaml(STACKS / f"{s}.yaml").get("orchestration", "eks") == "eks"
]


def spec_data(stem: str) -> dict[str, Any]:
    return copy.deepcopy(read_yaml(STACKS / f"{stem}.yaml"))


def stack_of(data: dict[str, Any], catalog: Catalog | None = None) -> Stack:
    return resolve(parse_spec(data, f"{data['name']}.yaml"), catalog)


def preset_plan(stem: str) -> Plan:
    """The session's shared plan of the preset (tests/conftest.py)."""
    return planned_preset(stem)[1]


def accelerator_lts(plan: Plan) -> dict[str, str]:
    """Every launch template but the system one, as canonical JSON of its inputs."""
    return {
        lt.name: json.dumps(lt.inputs, sort_keys=True)
        for lt in plan.of_type(LAUNCH_TEMPLATE)
        if not lt.name.endswith("-system-lt")
    }


def pool_node_groups(plan: Plan) -> list[Any]:
    return [ng for ng in plan.of_type(NODE_GROUP) if not ng.name.endswith("-system-ng")]


# ---------------------------------------------------------------------------------------
# No silent node rolls
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("stem", EKS_PRESETS)
def test_tag_edit_leaves_every_launch_template_byte_identical(stem: str) -> None:
    before = preset_plan(stem)
    data = spec_data(stem)
    data["tags"] = {**data.get("tags", {}), "cost-center": "cc-9999", "owner": "edited"}
    after = plan_stack(stack_of(data))
    assert accelerator_lts(after) == accelerator_lts(before)
    assert accelerator_lts(before), "a preset without accelerator launch templates"
    system = f"{data['name']}-system-lt"
    assert after.get(LAUNCH_TEMPLATE, system).inputs == before.get(LAUNCH_TEMPLATE, system).inputs
    # the edit reaches the instances through the Auto Scaling groups' propagated tags
    tags = {
        (t.name, t.inputs["tag"]["key"], t.inputs["tag"]["value"]) for t in after.of_type(ASG_TAG)
    }
    assert {k for _, k, v in tags if v == "edited"} == {"owner"}
    assert all(t.inputs["tag"]["propagateAtLaunch"] is True for t in after.of_type(ASG_TAG))
    groups = {ng.name.removesuffix("-ng") for ng in after.of_type(NODE_GROUP)}
    assert {name.rsplit("-asg-tag-", 1)[0] for name, k, _ in tags if k == "owner"} == groups


def test_launch_templates_carry_only_stable_tags() -> None:
    plan = preset_plan("llama3-70b-p5")
    for lt in plan.of_type(LAUNCH_TEMPLATE):
        for spec in lt.inputs["tagSpecifications"]:
            assert set(spec["tags"]) == {"accelstack:stack", "managed-by", "Name"}, lt.name


def test_label_edit_changes_the_node_group_not_the_launch_template(catalog: Catalog) -> None:
    """A node label that is not the registration label (here: the NVIDIA chart's affinity
    label, changed in the catalog) is applied by EKS from the node group's labels: a spec
    without `labels_at_boot` (the presets as released) rolls no node for it."""
    before, after = _chart_label_edit(catalog, spec_data("llama3-70b-p5"))
    assert accelerator_lts(after) == accelerator_lts(before)
    (ng,) = pool_node_groups(after)
    assert ng.inputs["labels"]["example.com/extra"] == "yes"
    (old,) = pool_node_groups(before)
    assert "example.com/extra" not in old.inputs["labels"]


def test_with_labels_at_boot_the_scheduling_labels_are_registration_labels(
    catalog: Catalog,
) -> None:
    """`labels_at_boot: true` (what `new` and `init` write): the chart's affinity label is in
    the nodeadm flags as well as the node group's labels, so a node's device plugin starts the
    moment it registers; a change of it (a catalog edit, here) is then a launch-template
    change that rolls the pool, on purpose, and the node group carries the same labels."""
    data = spec_data("llama3-70b-p5")
    data["pools"][0]["labels_at_boot"] = True
    before, after = _chart_label_edit(catalog, data)
    (name,) = accelerator_lts(before)
    for plan in (before, after):
        flags = base64.b64decode(plan.get(LAUNCH_TEMPLATE, name).inputs["userData"]).decode()
        assert "nvidia.com/gpu.present=true" in flags
    text = base64.b64decode(after.get(LAUNCH_TEMPLATE, name).inputs["userData"]).decode()
    assert "example.com/extra=yes" in text
    (ng,) = pool_node_groups(after)
    assert ng.inputs["labels"]["example.com/extra"] == "yes"


def _chart_label_edit(catalog: Catalog, data: dict[str, Any]) -> tuple[Any, Any]:
    """The plans of `data` before and after the NVIDIA chart's affinity labels gain one."""
    charts = dict(catalog.charts)
    charts["nvidia"] = charts["nvidia"].model_copy(
        update={"node_labels": {"nvidia.com/gpu.present": "true", "example.com/extra": "yes"}}
    )
    edited = catalog.model_copy(update={"charts": charts})
    return plan_stack(stack_of(data, catalog)), plan_stack(stack_of(data, edited))


def test_lnc_and_ami_changes_do_change_the_launch_template() -> None:
    """The inputs that must roll nodes still do: the node's LNC setting (user data) and AMI."""
    data = spec_data("llama3-70b-trn2")
    base = plan_stack(stack_of(data))
    data["pools"][0]["logical_cores"] = 1
    lnc = plan_stack(stack_of(data))
    (name,) = accelerator_lts(base)
    assert (
        base.get(LAUNCH_TEMPLATE, name).inputs["userData"]
        != lnc.get(LAUNCH_TEMPLATE, name).inputs["userData"]
    )
    stack = stack_of(spec_data("llama3-70b-trn2"))
    pins = {p.ami_parameter: "ami-0123456789abcdef0" for p in stack.pools if p.ami_parameter}
    pinned = plan_stack(stack.with_ami_pins(pins, False, "test"))
    assert pinned.get(LAUNCH_TEMPLATE, name).inputs["imageId"] == "ami-0123456789abcdef0"


# ---------------------------------------------------------------------------------------
# Self-healing nodes and updates that can finish
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("stem", EKS_PRESETS)
def test_every_accelerator_node_group_repairs_and_updates_in_time(stem: str) -> None:
    plan, stack = preset_plan(stem), stack_of(spec_data(stem))
    facts = stack.catalog.resilience
    addons = {a.inputs["addonName"] for a in plan.of_type(ADDON)}
    assert facts.node_repair.monitoring_addon in addons
    for ng in pool_node_groups(plan):
        pool = stack.pool(ng.name.removeprefix(f"{stack.name}-").removesuffix("-ng"))
        assert ng.inputs["nodeRepairConfig"] == {"enabled": True}
        sc = ng.inputs["scalingConfig"]
        assert sc["desiredSize"] == sc["maxSize"] == pool.nodes + pool.spare_nodes
        assert sc["minSize"] == (0 if pool.reserved_capacity else pool.nodes + pool.spare_nodes)
        upd = ng.inputs["updateConfig"]
        assert 1 <= upd["maxUnavailable"] <= 100
        assert upd.get("updateStrategy") == ("MINIMAL" if pool.reserved_capacity else None)
        timeouts = plan.option(NODE_GROUP, ng.name, "customTimeouts")
        minutes = int(timeouts["update"].removesuffix("m"))
        batches = -(-sc["maxSize"] // upd["maxUnavailable"])
        assert minutes >= batches * facts.node_group_update.minutes_per_batch
        assert minutes >= facts.node_group_update.provider_default_minutes


def test_capacity_block_pool_scales_to_zero_with_minimal_updates() -> None:
    plan = preset_plan("p5e-capacity-block")
    (ng,) = pool_node_groups(plan)
    assert ng.inputs["capacityType"] == "CAPACITY_BLOCK"
    assert ng.inputs["scalingConfig"] == {"desiredSize": 8, "maxSize": 8, "minSize": 0}
    assert ng.inputs["updateConfig"] == {"maxUnavailable": 2, "updateStrategy": "MINIMAL"}
    assert plan.option(NODE_GROUP, ng.name, "customTimeouts") == {
        "create": "60m",
        "delete": "60m",
        "update": "100m",
    }


def test_a_16_node_pool_updates_four_at_a_time_within_its_timeout() -> None:
    plan = preset_plan("llama3-70b-p5")
    (ng,) = pool_node_groups(plan)
    assert ng.inputs["updateConfig"] == {"maxUnavailable": 4}
    assert plan.option(NODE_GROUP, ng.name, "customTimeouts")["update"] == "100m"


def test_spare_nodes_run_beside_the_job(catalog: Catalog) -> None:
    data = spec_data("llama3-70b-p5")
    data["pools"][0]["spare_nodes"] = 2
    plan = plan_stack(stack_of(data), guard=False)  # two more p5 nodes: over the run budget
    (ng,) = pool_node_groups(plan)
    assert ng.inputs["scalingConfig"] == {"desiredSize": 18, "maxSize": 18, "minSize": 18}
    base = price_stack(stack_of(spec_data("llama3-70b-p5")))
    spare = price_stack(stack_of(data))
    rate = catalog.instance_rate("us-east-2", "p5.48xlarge", "on-demand").usd
    disk = 1024 * catalog.service_rate("us-east-2", "ebs-gp3").usd / catalog.hours_per_month
    # every node also sends metrics (the metrics add-on is priced per node)
    addon = catalog.metrics_addon
    assert addon is not None
    metrics = catalog.service_rate("us-east-2", addon.rate_item).usd
    assert spare.hourly_usd - base.hourly_usd == pytest.approx(
        2 * (rate + disk + metrics), rel=1e-6
    )


def test_neuron_node_problem_detector_is_on() -> None:
    plan = preset_plan("llama3-70b-trn2")
    (neuron,) = [r for r in plan.of_type("kubernetes:helm.sh/v3:Release") if "neuron" in r.name]
    assert neuron.inputs["values"]["npd"] == {"enabled": True, "namespaceOverride": "kube-system"}


# ---------------------------------------------------------------------------------------
# Durable checkpoints
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("stem", EKS_PRESETS)
def test_every_eks_preset_has_a_checkpoint_location_its_pods_reach(stem: str) -> None:
    plan, stack = preset_plan(stem), stack_of(spec_data(stem))
    (bucket,) = [b for b in plan.of_type(BUCKET) if b.name == stack.checkpoint_bucket_resource]
    assert bucket.inputs["bucket"] == f"{stack.name}-ckpt-123456789012"
    assert plan.option(BUCKET, bucket.name, "protect") is True
    (assoc,) = plan.of_type(ASSOCIATION)
    assert assoc.inputs["serviceAccount"] == stack.training_service_account
    policies = {p.name: json.loads(p.inputs["policy"]) for p in plan.of_type(ROLE_POLICY)}
    ckpt = policies[f"{stack.name}-training-checkpoints"]
    objects = ckpt["Statement"][1]
    assert objects["Resource"] == f"arn:aws:s3:::{bucket.inputs['bucket']}/checkpoints/*"
    assert "s3:AbortMultipartUpload" in objects["Action"]
    manifest = render_manifest(stack, "job")
    assert f'serviceAccountName: "{stack.training_service_account}"' in manifest
    assert "ACCELSTACK_CHECKPOINT_DIR" in manifest and "ACCELSTACK_CHECKPOINT_URL" in manifest
    assert plan.outputs["checkpointUrl"] == f"s3://{bucket.inputs['bucket']}/checkpoints/"


def test_fsx_is_linked_to_the_checkpoint_prefix() -> None:
    plan = preset_plan("llama3-70b-p5")
    (dra,) = plan.of_type(DRA)
    assert dra.inputs["dataRepositoryPath"] == "s3://llama3-70b-p5-ckpt-123456789012/checkpoints/"
    assert dra.inputs["fileSystemPath"] == "/checkpoints/"
    assert dra.inputs["s3"]["autoExportPolicy"]["events"] == ["NEW", "CHANGED", "DELETED"]
    assert dra.inputs["batchImportMetaDataOnCreate"] is True
    script = render_manifest(stack_of(spec_data("llama3-70b-p5")), "job")
    assert "/fsx/checkpoints/llama3-70b-p5/" in script


def test_training_state_and_write_time_figures(catalog: Catalog) -> None:
    """70.6B parameters x 16 bytes = 1.13 TB; on 4.8 TiB at 125 MB/s/TiB that is ~32 min (the
    old default), and the 1000 tier writes it in ~4 min."""
    state = training_state_bytes(catalog, 70.6, "bf16")
    assert state == pytest.approx(1.1296e12)
    assert fsx_write_seconds(state, 4800, 125) / 60 == pytest.approx(32.1, abs=0.1)
    assert fsx_write_seconds(state, 4800, 1000) / 60 == pytest.approx(4.0, abs=0.05)
    tiers = catalog.resilience.checkpoint.fsx_throughput_tiers
    assert fsx_tier_for(state, 4800, 300, tiers) == 1000
    assert fsx_tier_for(state, 4800, 600, tiers) == 500
    assert fsx_tier_for(state, 2400, 60, tiers) is None
    assert fsx_min_gib(state, 2) == 2400
    assert fsx_min_gib(1e9, 2) == 1200
    assert fsx_gib_for(state, 60, 1000) == 21600
    assert fsx_write_seconds(state, fsx_gib_for(state, 60, 1000), 1000) <= 60


def test_preset_picks_the_tier_that_meets_the_target_and_prices_it() -> None:
    stack = stack_of(spec_data("llama3-70b-p5"))
    assert stack.checkpoint is not None
    assert stack.checkpoint.fsx_throughput_per_tib == 1000
    assert stack.checkpoint.fsx_write_seconds is not None
    assert stack.checkpoint.fsx_write_seconds <= stack.checkpoint.write_seconds
    cost = price_plan(stack, preset_plan("llama3-70b-p5").resources)
    (fsx,) = [i for i in cost.items if i.what.startswith("FSx for Lustre")]
    assert fsx.what.endswith("PERSISTENT_2 1000") and fsx.unit_usd == 0.6 and fsx.estimate
    (ck,) = [i for i in cost.items if "checkpoints" in i.what]
    assert ck.quantity == pytest.approx(2 * 1.1296e12 / 2**30)
    assert price_stack(stack).hourly_usd == pytest.approx(cost.hourly_usd)


def test_a_slower_target_picks_a_cheaper_tier() -> None:
    data = spec_data("llama3-70b-p5")
    data["checkpoint"] = {"write_minutes": 10}
    stack = stack_of(data)
    assert stack.checkpoint is not None and stack.checkpoint.fsx_throughput_per_tib == 500


# ---------------------------------------------------------------------------------------
# Bad input: one line each, with the field path
# ---------------------------------------------------------------------------------------


def refused(data: dict[str, Any]) -> str:
    with pytest.raises(SpecError) as err:
        resolve(parse_spec(data, f"{data['name']}.yaml"))  # spec rules, then stack rules
    text = str(err.value)
    assert "Traceback" not in text
    return text


def test_a_tier_that_cannot_meet_the_target_is_refused() -> None:
    data = spec_data("llama3-70b-p5")
    data["storage"]["fsx_throughput_per_tib"] = 125
    text = refused(data)
    assert "storage.fsx_throughput_per_tib: 125 MB/s per TiB on 4800 GiB writes a 1.13 TB" in text
    assert "use 1000 MB/s per TiB" in text


def test_a_target_no_tier_meets_is_refused_with_the_size_that_would() -> None:
    data = spec_data("llama3-70b-p5")
    data["checkpoint"] = {"write_minutes": 1}
    text = refused(data)
    assert "checkpoint.write_minutes: 1 min cannot be met" in text
    assert "storage.fsx_lustre_gib >= 21600" in text


def test_fsx_too_small_for_the_checkpoints_is_refused() -> None:
    data = spec_data("llama3-70b-p5")
    data["storage"]["fsx_lustre_gib"] = 1200
    assert "storage.fsx_lustre_gib: 1200 GiB cannot hold 2 checkpoints" in refused(data)


def test_spare_nodes_beyond_the_capacity_block_are_refused() -> None:
    data = spec_data("p5e-capacity-block")
    data["pools"][0]["spare_nodes"] = 1
    assert (
        "pools[0].spare_nodes: 8 nodes + 1 spare = 9 is beyond the capacity-block's 8"
        in refused(data)
    )
    data["pools"][0]["purchase"]["instances"] = 9
    stack = stack_of(data)
    assert stack.pools[0].running_nodes == 9


def test_purchase_instances_only_on_reserved_capacity() -> None:
    data = spec_data("llama3-70b-p5")
    data["pools"][0]["purchase"] = {"option": "on-demand", "instances": 20}
    assert (
        "pools[0].purchase.instances: is only read with capacity-block or reservation"
        in refused(data)
    )


def test_checkpoint_bucket_outside_the_region_is_refused() -> None:
    data = spec_data("llama3-70b-p5")
    data["checkpoint"] = {"bucket": "team-checkpoints", "bucket_region": "eu-west-1"}
    text = refused(data)
    assert "checkpoint.bucket_region: 'eu-west-1' is not the stack's region 'us-east-2'" in text


def test_an_existing_checkpoint_bucket_is_used_not_created() -> None:
    data = spec_data("llama3-70b-p5")
    data["checkpoint"] = {"bucket": "team-checkpoints", "bucket_region": "us-east-2"}
    plan = plan_stack(stack_of(data))
    assert not [b for b in plan.of_type(BUCKET) if "checkpoints" in b.name]
    (dra,) = plan.of_type(DRA)
    assert dra.inputs["dataRepositoryPath"] == "s3://team-checkpoints/checkpoints/"


def test_the_checkpoint_section_is_eks_only() -> None:
    data = spec_data("trn1-standalone")
    data["checkpoint"] = {"write_minutes": 5}
    assert "checkpoint.write_minutes: applies to orchestration 'eks' only" in refused(data)
    assert resolve(Spec.model_validate(spec_data("trn1-standalone"))).checkpoint is None


def test_catalog_facts_load(catalog: Catalog) -> None:
    res = load_catalog().resilience
    assert res.checkpoint.fsx_throughput_tiers == (125, 250, 500, 1000)
    assert res.node_group_update.max_unavailable(1) == 1
    assert res.node_group_update.max_unavailable(2048) == 100
    assert res.node_group_update.update_minutes(2) == 60


def test_spare_nodes_are_eks_only() -> None:
    data = spec_data("trn1-standalone")
    data["pools"][0]["spare_nodes"] = 1
    assert "pools[0].spare_nodes: applies to orchestration 'eks' (node groups) only" in refused(
        data
    )


# ---------------------------------------------------------------------------------------
# Deploy rules: what the plans above show, enforced on any plan (CrossGuard included)
# ---------------------------------------------------------------------------------------


def _edited(plan: Plan, name: str, change: Any) -> Plan:
    out = [
        replace(r, inputs=change(copy.deepcopy(r.inputs))) if r.name == name else r
        for r in plan.resources
    ]
    return replace(plan, resources=out)


def _fired(plan: Plan, stack: Stack, rule: str) -> list[str]:
    return [v.line() for v in evaluate(plan, stack) if v.rule == rule]


@pytest.mark.parametrize("stem", EKS_PRESETS)
def test_presets_pass_the_resilience_rules(stem: str) -> None:
    plan, stack = preset_plan(stem), stack_of(spec_data(stem))
    rules = ("node-repair-on", "reserved-capacity-scales-to-zero", "launch-template-stable-tags")
    assert [v for v in evaluate(plan, stack) if v.rule in rules] == []


def test_rules_catch_repair_off_min_size_and_instance_user_tags() -> None:
    plan, stack = preset_plan("p5e-capacity-block"), stack_of(spec_data("p5e-capacity-block"))
    ng = "p5e-capacity-block-h200-ng"

    def no_repair(i: dict[str, Any]) -> dict[str, Any]:
        return {**i, "nodeRepairConfig": {"enabled": False}}

    def min_eight(i: dict[str, Any]) -> dict[str, Any]:
        return {**i, "scalingConfig": {**i["scalingConfig"], "minSize": 8}, "updateConfig": {}}

    def user_tag(i: dict[str, Any]) -> dict[str, Any]:
        i["tagSpecifications"][0]["tags"]["team"] = "research"
        return i

    (line,) = _fired(_edited(plan, ng, no_repair), stack, "node-repair-on")
    assert ng in line and "node-health.html" in line
    size, strategy = _fired(_edited(plan, ng, min_eight), stack, "reserved-capacity-scales-to-zero")
    assert "minSize is 8" in size and "MINIMAL" in strategy
    bad = _edited(plan, "p5e-capacity-block-h200-lt", user_tag)
    (line,) = _fired(bad, stack, "launch-template-stable-tags")
    assert "tags instances with team" in line


def test_a_lost_pod_is_replaced_only_after_it_terminated() -> None:
    import yaml

    docs = [
        d
        for d in yaml.safe_load_all(render_manifest(stack_of(spec_data("llama3-70b-p5")), "job"))
        if d
    ]
    (job,) = [d for d in docs if d["kind"] == "Job"]
    assert job["spec"]["podReplacementPolicy"] == "Failed"
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"


def test_spare_nodes_count_in_the_subnet_address_budget() -> None:
    """The most nodes a small VPC's zone holds fit; one spare more does not. ('efa' interfaces
    on the extra cards: 42 addresses per node, so the zone's secondary block fills.)"""
    data = spec_data("llama3-70b-p5")
    data["network"] = {"vpc_cidr": "10.42.0.0/20"}
    data["pools"][0]["efa_interface_style"] = "efa"
    data["budget"] = {}
    del data["storage"]  # only the address budget is tested
    data["workload"]["model"] = {"params_billion": 1}

    def fits(nodes: int, spare: int) -> bool:
        data["pools"][0].update(nodes=nodes, spare_nodes=spare)
        try:
            resolve(parse_spec(copy.deepcopy(data), "llama3-70b-p5.yaml"))  # + stack rules
        except SpecError as exc:
            assert "subnet" in str(exc), str(exc)
            return False
        return True

    low, high = 1, 4096  # fits(low), not fits(high): bisect to the most that fit
    assert fits(low, 0) and not fits(high, 0)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if fits(mid, 0) else (low, mid)
    most = low
    assert not fits(most, 1)
    assert "spare" not in refused(
        {**data, "pools": [{**data["pools"][0], "nodes": most + 1, "spare_nodes": 0}]}
    )
