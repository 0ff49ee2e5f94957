"""Deploy rules (accelstack.plan.rules): the framework, the plan document's dependencies and
options, every preset planning with zero violations, and per rule a bad plan that shows the
one-line message naming the resource and the document."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest

from accelstack.plan import Plan, PlannedResource
from accelstack.plan.rules import DEPLOY_RULES, Violation, deploy_rule, evaluate, ruleset
from accelstack.resolve import Stack
from tests.conftest import ROOT, planned_preset, preset_ids

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

NG = "aws:eks/nodeGroup:NodeGroup"
LT = "aws:ec2/launchTemplate:LaunchTemplate"


@cache
def preset(stem: str) -> tuple[Plan, Stack]:
    stack, plan = planned_preset(stem)
    return plan, stack


def replace(plan: Plan, type_: str, name: str, **changes: Any) -> Plan:
    """The plan with one resource changed (inputs replaced wholesale or other fields)."""
    resources = [
        dataclasses.replace(r, **changes) if (r.type, r.name) == (type_, name) else r
        for r in plan.resources
    ]
    return dataclasses.replace(plan, resources=resources)


def with_inputs(plan: Plan, r: PlannedResource, **inputs: Any) -> Plan:
    return replace(plan, r.type, r.name, inputs={**r.inputs, **inputs})


def only(found: list[Violation], rule: str) -> Violation:
    hits = [v for v in found if v.rule == rule]
    assert len(hits) >= 1, f"{rule} did not fire: {[v.line() for v in found]}"
    return hits[0]


def assert_line(v: Violation, resource_name: str) -> None:
    line = v.line()
    assert "\n" not in line
    assert resource_name in line and v.source in line and v.rule in line
    primary = ("https://", "terraform-", "aws/", "NVIDIA/", "aws-neuron/")
    # chart rules cite the catalog's charts table and name the chart's own source in the message
    assert v.source.startswith(primary) or ("charts" in v.source and "@" in v.message)


# ---------------------------------------------------------------------------------------
# Framework and plan document
# ---------------------------------------------------------------------------------------


def test_framework_builds_violations_from_pairs(monkeypatch: pytest.MonkeyPatch) -> None:
    @deploy_rule("test-rule", "https://example.invalid/doc", "a test")
    def _body(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
        yield ("aws:x:Y 'n'", "is wrong")

    plan, stack = preset("trn1-finetune")
    assert "test-rule" not in {
        v.rule for v in evaluate(plan, stack)
    }  # decorating registers nothing
    monkeypatch.setattr(ruleset, "DEPLOY_RULES", DEPLOY_RULES.plus(_body))

    found = [v for v in evaluate(plan, stack) if v.rule == "test-rule"]
    assert found == [
        Violation("test-rule", "aws:x:Y 'n'", "is wrong", "https://example.invalid/doc")
    ]
    assert found[0].line() == "aws:x:Y 'n': is wrong [test-rule; https://example.invalid/doc]"
    with pytest.raises(ValueError, match="deploy rule 'test-rule' is registered twice"):
        ruleset.DEPLOY_RULES.plus(deploy_rule("test-rule", "x", "y")(_body.body))


def test_every_rule_names_a_source_and_a_summary() -> None:
    assert DEPLOY_RULES, "no deploy rules registered"
    for info in DEPLOY_RULES:
        assert info.source and info.summary and info.name == info.name.lower()
    assert len(set(DEPLOY_RULES.names)) == len(DEPLOY_RULES)


def test_plan_records_dependencies_and_options() -> None:
    plan, _ = preset("p5e-capacity-block")
    ng = plan.get(NG, "p5e-capacity-block-h200-ng")
    assert "p5e-capacity-block-h200-lt" in ng.depends_on  # property dependency (launch template)
    assert "p5e-capacity-block-cluster-addon-vpc-cni" in ng.depends_on  # explicit depends_on
    assert list(ng.depends_on) == sorted(set(ng.depends_on))
    doc = plan.to_dict()
    entry = next(r for r in doc["resources"] if r["name"] == ng.name and r["type"] == NG)
    assert entry["dependsOn"] == list(ng.depends_on)
    assert "ignoreChanges" not in (entry.get("options") or {})  # the spec owns the size
    vpc = next(r for r in doc["resources"] if r["type"] == "aws:ec2/vpc:Vpc")
    assert "dependsOn" not in vpc


@pytest.mark.parametrize("stem", preset_ids())
def test_every_preset_plans_with_zero_violations(stem: str) -> None:
    plan, stack = preset(stem)
    assert [v.line() for v in evaluate(plan, stack)] == []


# ---------------------------------------------------------------------------------------
# One bad plan per rule: the one-line message names the resource and the document
# ---------------------------------------------------------------------------------------

CLUSTER = "aws:eks/cluster:Cluster"
RELEASE = "kubernetes:helm.sh/v3:Release"
ROLE = "aws:iam/role:Role"
ADDON = "aws:eks/addon:Addon"
FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"


def eks_cluster(plan: Plan) -> PlannedResource:
    return plan.of_type(CLUSTER)[0]


@pytest.mark.parametrize(
    "vpc",
    [
        {"endpointPrivateAccess": True, "endpointPublicAccess": False},  # the old default
        {"endpointPrivateAccess": True, "endpointPublicAccess": True, "publicAccessCidrs": []},
        {
            "endpointPrivateAccess": True,
            "endpointPublicAccess": True,
            "publicAccessCidrs": ["0.0.0.0/0"],
        },
        {
            "endpointPrivateAccess": False,
            "endpointPublicAccess": True,
            "publicAccessCidrs": ["203.0.113.0/24"],
        },
    ],
)
def test_private_only_endpoint_is_refused(vpc: dict[str, Any]) -> None:
    plan, stack = preset("trn1-finetune")
    c = eks_cluster(plan)
    bad = with_inputs(plan, c, vpcConfig={**c.inputs["vpcConfig"], **vpc})
    v = only(evaluate(bad, stack), "eks-endpoint-reachable")
    assert_line(v, c.name)
    assert "cluster-endpoint.html" in v.line()


def test_endpoint_in_the_plan_is_public_limited_and_private() -> None:
    plan, stack = preset("llama3-70b-p5")
    vpc = eks_cluster(plan).inputs["vpcConfig"]
    assert vpc["endpointPrivateAccess"] is True and vpc["endpointPublicAccess"] is True
    assert vpc["publicAccessCidrs"] == list(stack.spec.cluster.public_access_cidrs)


def test_capacity_block_instance_type_in_launch_template() -> None:
    plan, stack = preset("p5e-capacity-block")
    ng = next(r for r in plan.of_type(NG) if r.inputs.get("capacityType") == "CAPACITY_BLOCK")
    lt = next(r for r in plan.of_type(LT) if r.name in ng.depends_on)
    assert "instanceTypes" not in ng.inputs and lt.inputs["instanceType"] == "p5e.48xlarge"
    # the old shape: type on the node group, none in the launch template
    bad = with_inputs(plan, ng, instanceTypes=["p5e.48xlarge"])
    bad = replace(
        bad, LT, lt.name, inputs={k: v for k, v in lt.inputs.items() if k != "instanceType"}
    )
    found = [v for v in evaluate(bad, stack) if v.rule == "capacity-block-node-group"]
    assert len(found) == 2
    assert_line(found[0], ng.name)
    assert_line(found[1], lt.name)
    assert "capacity-blocks-mng.html" in found[0].line()


def test_capacity_block_node_group_is_priced_from_its_launch_template() -> None:
    from accelstack.cost.guard import report_for_plan

    plan, stack = preset("p5e-capacity-block")
    assert "p5e.48xlarge" in report_for_plan(stack, plan)


def release(plan: Plan, role: str) -> PlannedResource:
    return plan.get(RELEASE, f"{plan.stack}-device-plugins-{role}")


def test_neuron_values_keys_are_the_charts() -> None:
    plan, stack = preset("llama3-70b-trn2")
    r = release(plan, "neuron")
    values = r.inputs["values"]
    assert "nodeSelector" not in values and values["devicePlugin"]["nodeSelector"]
    bad = with_inputs(plan, r, values={**values, "nodeSelector": {"a": "b"}})  # the old key
    v = only(evaluate(bad, stack), "device-plugin-values-keys")
    assert_line(v, r.name)
    assert "nodeSelector.a" in v.message


@pytest.mark.parametrize(
    ("stem", "role", "key", "itype"),
    [
        ("trn3-preview", "efa", "supportedInstanceLabels", "trn3.48xlarge"),
        ("trn3-preview", "neuron", "neuronInstances", "trn3.48xlarge"),
    ],
)
def test_instance_lists_cover_every_pool(stem: str, role: str, key: str, itype: str) -> None:
    plan, stack = preset(stem)
    r = release(plan, role)
    values = dict(r.inputs["values"])
    if key == "neuronInstances":
        assert itype in values[key]
        values[key] = [t for t in values[key] if t != itype]
    else:
        assert itype in values[key]["values"]
        values[key] = {**values[key], "values": [t for t in values[key]["values"] if t != itype]}
    v = only(
        evaluate(with_inputs(plan, r, values=values), stack), "device-plugin-serves-every-pool"
    )
    assert_line(v, r.name)
    assert itype in v.message


def test_nvidia_pools_carry_the_charts_affinity_label() -> None:
    plan, stack = preset("llama3-70b-p5")
    ng = plan.get(NG, f"{plan.stack}-h100-ng")
    assert ng.inputs["labels"]["nvidia.com/gpu.present"] == "true"
    labels = {k: v for k, v in ng.inputs["labels"].items() if k != "nvidia.com/gpu.present"}
    v = only(
        evaluate(with_inputs(plan, ng, labels=labels), stack), "device-plugin-serves-every-pool"
    )
    assert_line(v, ng.name)


def test_chart_versions_are_the_catalogs() -> None:
    plan, stack = preset("mixed-trn2-p5")
    r = release(plan, "efa")
    assert r.inputs["version"] == stack.catalog.charts["efa"].version
    v = only(evaluate(with_inputs(plan, r, version="v0.5.7"), stack), "device-plugin-chart-pinned")
    assert_line(v, r.name)


def test_fsx_waits_for_its_security_group_rules() -> None:
    plan, stack = preset("llama3-70b-p5")
    fs = plan.of_type(FSX)[0]
    assert any(n.endswith("-self-988") for n in fs.depends_on)
    kept = tuple(n for n in fs.depends_on if not n.endswith("-988"))
    v = only(
        evaluate(replace(plan, FSX, fs.name, depends_on=kept), stack),
        "fsx-after-security-group-rules",
    )
    assert_line(v, fs.name)
    assert "-988" in v.message


def test_hop_limit_1_on_node_launch_templates() -> None:
    plan, stack = preset("trn1-multinode")
    for lt in plan.of_type(LT):
        assert lt.inputs["metadataOptions"]["httpPutResponseHopLimit"] == 1
    lt = plan.of_type(LT)[0]
    md = {**lt.inputs["metadataOptions"], "httpPutResponseHopLimit": 2}
    v = only(evaluate(with_inputs(plan, lt, metadataOptions=md), stack), "imds-hop-limit-1")
    assert_line(v, lt.name)


def test_cni_policy_not_on_the_node_role() -> None:
    plan, stack = preset("trn1-multinode")
    attachments = plan.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    cni = [a for a in attachments if a.inputs["policyArn"].endswith("/AmazonEKS_CNI_Policy")]
    assert [a.name for a in cni] == [f"{plan.stack}-cluster-cni-role-AmazonEKS_CNI_Policy"]
    # turn the fix off: attach the CNI policy to a node role
    node = next(a for a in attachments if "node-role" in a.name)
    bad = with_inputs(plan, node, policyArn="arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy")
    v = only(evaluate(bad, stack), "cni-through-pod-identity")
    assert_line(v, node.name)
    addon = plan.get(ADDON, f"{plan.stack}-cluster-addon-vpc-cni")
    v = only(
        evaluate(with_inputs(plan, addon, podIdentityAssociations=[]), stack),
        "cni-through-pod-identity",
    )
    assert_line(v, addon.name)


def test_pod_identity_trust_carries_source_conditions() -> None:
    import json

    plan, stack = preset("trn1-multinode")
    role = plan.get(ROLE, f"{plan.stack}-training-role")
    doc = json.loads(role.inputs["assumeRolePolicy"])
    del doc["Statement"][0]["Condition"]
    v = only(
        evaluate(with_inputs(plan, role, assumeRolePolicy=json.dumps(doc)), stack),
        "pod-identity-trust-conditions",
    )
    assert_line(v, role.name)
    assert "aws:SourceAccount" in v.message and "aws:SourceArn" in v.message


def test_creator_admin_only_when_asked() -> None:
    plan, stack = preset("trn1-finetune")
    c = eks_cluster(plan)
    assert c.inputs["accessConfig"]["bootstrapClusterCreatorAdminPermissions"] is False
    access = {**c.inputs["accessConfig"], "bootstrapClusterCreatorAdminPermissions": True}
    v = only(
        evaluate(with_inputs(plan, c, accessConfig=access), stack), "cluster-creator-admin-explicit"
    )
    assert_line(v, c.name)


# ---------------------------------------------------------------------------------------
# The CrossGuard entry point: the same rules over pulumi_policy-shaped resources
# ---------------------------------------------------------------------------------------


@dataclasses.dataclass
class _Opts:
    protect: bool = False
    ignore_changes: list[str] = dataclasses.field(default_factory=list)
    delete_before_replace: bool | None = None


@dataclasses.dataclass
class _PolicyResource:
    resource_type: str
    props: dict[str, Any]
    name: str
    opts: _Opts
    parent: Any = None
    dependencies: list[Any] = dataclasses.field(default_factory=list)
    property_dependencies: dict[str, list[Any]] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class _StackArgs:
    resources: list[_PolicyResource]
    config: dict[str, Any]

    def get_config(self) -> dict[str, Any]:
        return self.config


def policy_resources(plan: Plan) -> list[_PolicyResource]:
    by_name: dict[str, _PolicyResource] = {}
    out = []
    for r in plan.resources:
        opts = plan.options.get((r.type, r.name), {})
        pr = _PolicyResource(
            r.type,
            dict(r.inputs),
            r.name,
            _Opts(bool(opts.get("protect")), list(opts.get("ignoreChanges") or [])),
        )
        by_name[r.name] = pr
        out.append(pr)
    for r, pr in zip(plan.resources, out, strict=True):
        pr.parent = by_name.get(r.parent or "")
        pr.dependencies = [by_name[n] for n in r.depends_on if n in by_name]
    return out


def test_crossguard_pack_runs_the_same_rules() -> None:
    from policies.budget_policies import POLICIES
    from policies.deploy_rules import deploy_rules

    assert deploy_rules in POLICIES
    stem = "p5e-capacity-block"
    plan, _ = preset(stem)
    cfg = {"spec": str(ROOT / "stacks" / f"{stem}.yaml")}
    reports: list[str] = []
    resources = policy_resources(plan)
    deploy_rules.validate(_StackArgs(resources, cfg), lambda m, urn=None: reports.append(m))
    assert reports == []
    ng = next(r for r in resources if r.resource_type == NG)
    ng.opts.ignore_changes = ["scalingConfig.desiredSize"]
    deploy_rules.validate(_StackArgs(resources, cfg), lambda m, urn=None: reports.append(m))
    assert len(reports) == 1 and ng.name in reports[0] and "terraform-aws-eks" in reports[0]
    assert "node-group-resize-accepted" in reports[0]
    deploy_rules.validate(
        _StackArgs(resources, {"spec": "nope.yaml"}), lambda m, urn=None: reports.append(m)
    )
    assert "cannot read the spec" in reports[-1]


def test_cli_plan_and_check_print_one_line_per_violation_and_exit_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    import json
    import shutil

    from accelstack.cli import main

    @deploy_rule("always-fails", "https://example.invalid/doc", "test")
    def _fails(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
        yield (f"stack '{plan.stack}'", "is refused for the test")

    monkeypatch.setattr(ruleset, "DEPLOY_RULES", DEPLOY_RULES.plus(_fails))

    spec = ROOT / "stacks" / "trn1-finetune.yaml"
    assert main(["plan", str(spec)]) == 1
    err = capsys.readouterr().err
    assert (
        "violation: stack 'trn1-finetune': is refused for the test "
        "[always-fails; https://example.invalid/doc]" in err
    )
    assert main(["plan", str(spec), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["violations"] == [
        {
            "rule": "always-fails",
            "resource": "stack 'trn1-finetune'",
            "message": "is refused for the test",
            "source": "https://example.invalid/doc",
        }
    ]
    shutil.copy(spec, tmp_path / spec.name)
    assert main(["check", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert "FAIL" in captured.out and "0 of 1 specs passed" in captured.out
    assert "[always-fails; https://example.invalid/doc]" in captured.err


def test_rules_hold_on_documents_without_dependencies() -> None:
    """Plans recorded before dependsOn existed (or a preview that lacks them): the rules find
    a node group's launch template, a role's attachments and FSx's rules by parent."""
    plan, stack = preset("llama3-70b-p5")
    bare = dataclasses.replace(
        plan, resources=[dataclasses.replace(r, depends_on=()) for r in plan.resources]
    )
    found = {v.rule for v in evaluate(bare, stack)}
    assert "fsx-after-security-group-rules" in found  # FSx no longer waits for anything
    lt = next(r for r in bare.of_type(LT) if r.name.endswith("-h100-lt"))
    md = {**lt.inputs["metadataOptions"], "httpPutResponseHopLimit": 2}
    v = only(evaluate(with_inputs(bare, lt, metadataOptions=md), stack), "imds-hop-limit-1")
    assert_line(v, lt.name)
    node = next(
        r
        for r in bare.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
        if "node-role" in r.name
    )
    bad = with_inputs(bare, node, policyArn="arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy")
    assert_line(only(evaluate(bad, stack), "cni-through-pod-identity"), node.name)


def test_kubernetes_objects_wait_for_the_deployers_access() -> None:
    plan, stack = preset("trn1-finetune")
    access = {
        r.name for r in plan.of_type("aws:eks/accessPolicyAssociation:AccessPolicyAssociation")
    }
    assert access
    ns = plan.get("kubernetes:core/v1:Namespace", "trn1-finetune-device-plugins-namespace")
    assert access <= set(ns.depends_on)
    racy = dataclasses.replace(
        plan,
        resources=[
            dataclasses.replace(r, depends_on=tuple(n for n in r.depends_on if n not in access))
            for r in plan.resources
        ],
    )
    racing = [v for v in evaluate(racy, stack) if v.rule == "kubernetes-after-cluster-access"]
    # the device plugins' objects and the checkpoint ConfigMap are named
    assert any("trn1-finetune-device-plugins" in v.line() for v in racing)
    assert any("trn1-finetune-checkpoint-config" in v.line() for v in racing)
    assert all("access-entries.html" in v.line() for v in racing)
