"""Update semantics from the pinned providers: the replacement table is generated from the
provider source of the pinned versions (tools/provider_replacements.py) and fails when a pin
moves alone; every key is an input of the pinned SDK (a snapshot of its input names, tied to
pyproject's requirement); every type the program emits is in it; the conditional replacements
(CustomizeDiff) are restated as rules that decide like the provider's code; and the FSx
throughput tier is an in-place update, not a replacement of the protected file system."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from accelstack.plan.diff import diff_resources, replace_table
from accelstack.plan.replacements import RULES, provider_table
from accelstack.plan.updates import lustre_requests, operation, problems
from tests.conftest import ROOT
from tools import gosource, provider_replacements, provider_snapshot

SNAPSHOT = ROOT / "accelstack" / "catalog" / "provider_inputs.json"
GENERATED = ROOT / "accelstack" / "catalog" / "provider_replacements.json"
TABLE = ROOT / "accelstack" / "catalog" / "replacements.yaml"
LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"


def snapshot() -> dict[str, Any]:
    return json.loads(SNAPSHOT.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def generated() -> dict[str, Any]:
    return json.loads(GENERATED.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


@pytest.mark.slow
def test_the_snapshot_follows_the_pin_in_pyproject() -> None:
    """Moving `pulumi-aws` in pyproject.toml fails here until the snapshot is regenerated
    (python tools/provider_snapshot.py --write) and the tables re-checked against it."""
    snap = snapshot()
    assert snap["requirement"] == provider_snapshot.requirement()
    installed = importlib.metadata.version("pulumi_aws")
    if installed == snap["version"]:
        assert provider_snapshot.snapshot() == snap  # the checked-in file is what the SDK says


def test_the_replacement_table_was_generated_for_the_installed_pins() -> None:
    """A new pulumi-aws or pulumi-kubernetes (installed, or required by pyproject) fails here
    until tools/provider_replacements.py regenerates the table from that version's source."""
    data = generated()
    assert data["version"] == importlib.metadata.version("pulumi_aws")
    assert data["requirement"] == provider_snapshot.requirement("pulumi-aws")
    assert data["version"] == snapshot()["version"]
    k8s = data["kubernetes"]
    assert k8s["version"] == importlib.metadata.version("pulumi_kubernetes")
    assert k8s["requirement"] == provider_snapshot.requirement("pulumi-kubernetes")
    assert re.fullmatch(r"[0-9a-f]{40}", data["source"]["commit"])
    assert re.fullmatch(r"[0-9a-f]{40}", k8s["source"]["commit"])
    assert data["upstream"]["ref"] == data["source"]["ref"]


def test_every_table_key_is_an_input_of_the_pinned_provider() -> None:
    inputs = snapshot()["inputs"]
    missing = [
        (t, k)
        for t, row in generated()["types"].items()
        for k in [*row["replace"], *row["conditional"]]
        if k != "(plan)" and k not in inputs[t]
    ]
    table = yaml.safe_load(TABLE.read_text(encoding="utf-8"))
    for t, r in table["node_rolls"]["node_sources"].items():
        named = [*r["keys"], r["instance_type"], *([r["shrink"]] if r.get("shrink") else [])]
        named += [] if str(r["count"]).isdigit() else [r["count"]]
        missing += [(t, k) for k in named if k not in inputs[t]]
    for t, u in table["create_before_delete"]["unique"].items():
        missing += [(t, k) for k in [*u["within"], u["key"]] if k not in inputs[t]]
    assert missing == []


def test_every_force_new_input_of_the_source_is_in_the_pinned_sdk() -> None:
    """The generator maps every ForceNew attribute to a Pulumi input; one the SDK lacks (or an
    SDK input the source lacks, beyond the injected `region`) says the source and the pin
    differ. The EKS cluster's control-plane settings came after v6.58.0 (the source's tag)."""
    rows = generated()["types"]
    assert all(not r["force_new_not_in_sdk"] for r in rows.values())
    newer = {t: set(r["sdk_inputs_not_in_source"]) - {"region"} for t, r in rows.items()}
    assert {t: s for t, s in newer.items() if s} == {
        "aws:eks/cluster:Cluster": {
            "defaultAddonsToRemoves",  # a pulumi-aws patch, not upstream
            "kubeApiServerConfig",
            "kubeControllerManagerConfig",
            "kubeSchedulerConfig",
        }
    }


def _emitted_types() -> set[str]:
    """Every resource type of the plan goldens, and every provider class the components
    construct (some only for some specs)."""
    import pulumi_aws
    import pulumi_kubernetes

    found = set()
    for path in (ROOT / "tests" / "golden" / "plan").rglob("*.json"):
        found |= {r["type"] for r in json.loads(path.read_text(encoding="utf-8"))["resources"]}
    for path in (ROOT / "components").glob("*.py"):
        text = path.read_text(encoding="utf-8")
        for pkg, mod, name in re.findall(r"\b(aws|k8s)\.([a-z0-9_.]+)\.([A-Z]\w+)\(", text):
            root = pulumi_aws if pkg == "aws" else pulumi_kubernetes
            cls: Any = root
            for part in [*mod.split("."), name]:
                cls = getattr(cls, part, None)
            token = getattr(cls, "pulumi_type", None)
            if isinstance(token, str):
                found.add(token)
    return found


def test_every_type_the_program_emits_is_in_the_generated_table() -> None:
    table = provider_table()
    not_bridged = ("accelstack:", "pulumi:providers:", "kubernetes:kustomize")
    missing = sorted(
        t for t in _emitted_types() if not t.startswith(not_bridged) and table.row(t) is None
    )
    assert missing == []
    assert set(provider_replacements.TYPES) <= set(table.rows)


def test_the_known_replacements_come_from_the_source() -> None:
    """The hand table's rows, now read from the provider: the ones it had, the ones it missed
    (a VPC CIDR, an FSx data-repository association's paths), and the conditional ones."""
    t = provider_table()
    assert {"subnetIds", "launchTemplate.id", "instanceTypes", "amiType"} <= set(
        t.keys("aws:eks/nodeGroup:NodeGroup")
    )
    assert "launchTemplate.version" not in t.keys("aws:eks/nodeGroup:NodeGroup")
    assert "cidrBlock" in t.keys("aws:ec2/vpc:Vpc")
    assert {"vpcId", "cidrBlock", "availabilityZoneId"} <= set(t.keys("aws:ec2/subnet:Subnet"))
    dra = "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation"
    assert {"fileSystemPath", "dataRepositoryPath", "fileSystemId"} <= set(t.keys(dra))
    assert "vpcConfig.subnetIds" not in t.keys("aws:eks/cluster:Cluster")  # in place
    assert t.rows[LUSTRE].conditional["storageCapacity"].rule == "decrease_or_scratch1"
    assert "perUnitStorageThroughput" not in t.keys(LUSTRE)
    assert {"metadata.name", "spec.csi"} <= set(t.keys("kubernetes:core/v1:PersistentVolume"))
    assert "data" in t.keys("kubernetes:core/v1:ConfigMap")  # immutable unless configured
    assert t.keys("kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue") == (
        "metadata.name",
        "metadata.namespace",
    )
    assert set(RULES) == {c.rule for r in t.rows.values() for c in r.conditional.values()}


@pytest.mark.parametrize(
    ("old", "new", "replaced"),
    [
        (
            {"storageCapacity": 4800, "deploymentType": "PERSISTENT_2"},
            {"storageCapacity": 2400},
            True,
        ),
        (
            {"storageCapacity": 2400, "deploymentType": "PERSISTENT_2"},
            {"storageCapacity": 4800},
            False,
        ),
        ({"storageCapacity": 1200, "deploymentType": "SCRATCH_1"}, {"storageCapacity": 2400}, True),
        ({"fileSystemTypeVersion": "2.15"}, {"fileSystemTypeVersion": "2.12"}, True),
        ({"fileSystemTypeVersion": "2.12"}, {"fileSystemTypeVersion": "2.15"}, False),
    ],
)
def test_fsx_conditional_replacements_decide_like_the_provider(
    old: dict[str, Any], new: dict[str, Any], replaced: bool
) -> None:
    """terraform-provider-aws: resourceLustreFileSystemStorageCapacityCustomizeDiff (shrink or
    SCRATCH_1) and resourceLustreFileSystemTypeVersionCustomizeDiff (downgrade)."""
    head = {**old, **new}
    assert bool(provider_table().forcing(LUSTRE, old, head)) is replaced


def test_other_conditional_rules() -> None:
    t = provider_table()
    cluster, vpc = "aws:eks/cluster:Cluster", "aws:ec2/vpc:Vpc"
    key = {"encryptionConfig": {"resources": ["secrets"]}}
    assert t.forcing(cluster, key, {}) == ["encryptionConfig"]  # removed: irreversible
    assert t.forcing(cluster, {}, key) == []  # added in place
    rule = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
    by_group, by_cidr = {"referencedSecurityGroupId": "sg-1"}, {"cidrIpv4": "10.0.0.0/8"}
    assert t.forcing(rule, by_group, by_cidr) == ["(plan)"]
    assert t.forcing(rule, by_group, {"referencedSecurityGroupId": "sg-2"}) == []
    assert t.forcing(vpc, {"instanceTenancy": "dedicated"}, {"instanceTenancy": "default"}) == []
    assert t.forcing(vpc, {"instanceTenancy": "default"}, {"instanceTenancy": "dedicated"}) == [
        "instanceTenancy"
    ]


def test_an_fsx_throughput_tier_change_is_an_update_eks_and_fsx_accept() -> None:
    """Fails on the old table, which listed perUnitStorageThroughput as replace-forcing."""
    old: dict[str, Any] = {
        "deploymentType": "PERSISTENT_2",
        "storageCapacity": 4800,
        "perUnitStorageThroughput": 125,
    }
    new = {**old, "perUnitStorageThroughput": 250}
    base = {
        "resources": [{"type": LUSTRE, "name": "fs", "inputs": old, "options": {"protect": True}}]
    }
    head = {
        "resources": [{"type": LUSTRE, "name": "fs", "inputs": new, "options": {"protect": True}}]
    }
    res = diff_resources(base, head)
    assert res["replaced"] == [] and [r["name"] for r in res["changed"]] == ["fs"]
    keys = replace_table().keys[LUSTRE]
    assert operation(old, new, replace_keys=keys) == "update"
    assert operation(old, new, rtype=LUSTRE) == "update"
    (req,) = lustre_requests(old, new)
    assert req.operation == "UpdateFileSystem"
    assert req.params["LustreConfiguration"] == {"PerUnitStorageThroughput": 250}
    assert problems(req, stored=old) == []
    bad = lustre_requests(old, {**new, "perUnitStorageThroughput": 200})[0]
    assert problems(bad, stored=old) != []  # 200 is a PERSISTENT_1 tier


def test_fsx_storage_grows_in_steps_and_never_shrinks_in_place() -> None:
    old = {"deploymentType": "PERSISTENT_2", "storageCapacity": 4800, "storageType": "SSD"}
    grow = lustre_requests(old, {**old, "storageCapacity": 7200})[0]
    assert problems(grow, stored=old) == []
    odd = lustre_requests(old, {**old, "storageCapacity": 6000})[0]
    assert any("multiple of 2400" in p for p in problems(odd, stored=old))
    assert operation(old, {**old, "storageCapacity": 2400}, rtype=LUSTRE) == "replace"


# ------------------------------------------------------------------------------------------
# The generator's reading of Go source
# ------------------------------------------------------------------------------------------

_SDK = """package github.com/hashicorp/terraform-provider-aws/internal/service/x
import (
	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"
	"github.com/hashicorp/terraform-provider-aws/names"
)
func resourceThing() *schema.Resource {
	return &schema.Resource{
		SchemaFunc: func() map[string]*schema.Schema {
			return map[string]*schema.Schema{
				names.AttrSubnetIDs: {
					Type:     schema.TypeSet,
					Required: true,
					ForceNew: true,
				},
				"launch_template": {
					Type:     schema.TypeList,
					MaxItems: 1,
					Optional: true,
					Elem: &schema.Resource{
						Schema: map[string]*schema.Schema{
							names.AttrID: {Type: schema.TypeString, Optional: true, ForceNew: true},
							names.AttrVersion: {Type: schema.TypeString, Required: true},
						},
					},
				},
			}
		},
		CustomizeDiff: customdiff.ForceNewIfChange("size", func(_ context.Context, o, n, m any) bool {
			return n.(int) < o.(int)
		}),
	}
}
"""


def test_the_generator_reads_sdkv2_schemas_nested_blocks_and_customize_diff(
    tmp_path: Path,
) -> None:
    path = tmp_path / "index/internal/service/x/func.resourceThing.goindex"
    path.parent.mkdir(parents=True)
    path.write_text(_SDK, encoding="utf-8")
    src = provider_replacements.Source(tmp_path)
    package = "github.com/hashicorp/terraform-provider-aws/internal/service/x"
    f, resource = provider_replacements.sdk_resource("resourceThing", package, src)
    attrs = provider_replacements._resource_attrs(resource, f, src)
    assert [(a.tf, a.force_new, a.is_list, a.max_one) for a in attrs] == [
        ("subnet_ids", True, True, False),
        ("launch_template", False, True, True),
    ]
    assert [(c.tf, c.force_new) for c in attrs[1].children] == [("id", True), ("version", False)]
    diff = gosource.fields(resource)["CustomizeDiff"]
    line = next(i for i, text in enumerate(_SDK.splitlines(), 1) if "ForceNewIfChange" in text)
    assert provider_replacements.force_calls(diff, f, src) == [
        ("size", "index/internal/service/x/func.resourceThing.goindex", line)
    ]
    inputs = {"subnetIds", "launchTemplate", "launchTemplate.id", "launchTemplate.version"}
    keys = [k for k, a in provider_replacements.mapped(attrs, inputs) if a.force_new]
    assert keys == ["subnetIds", "launchTemplate.id"]


def test_attribute_constants_read_as_their_names() -> None:
    cases = {
        "names.AttrSubnetIDs": "subnet_ids",
        "names.AttrKMSKeyID": "kms_key_id",
        "names.AttrIPv6CIDRBlock": "ipv6_cidr_block",
        "names.AttrS3Bucket": "s3_bucket",
        "names.AttrARNs": "arns",
        "names.AttrIdentifier": "identifier",
    }
    assert {k: provider_replacements.attr_const(k) for k in cases} == cases


@pytest.mark.slow
@pytest.mark.skipif(
    not (os.environ.get("ACCELSTACK_PROVIDER_INDEX") and os.environ.get("ACCELSTACK_PULUMI_K8S")),
    reason="needs the provider sources: ACCELSTACK_PROVIDER_INDEX (a git checkout of "
    "lonegunmanb/terraform-provider-aws-index) and ACCELSTACK_PULUMI_K8S (pulumi-kubernetes)",
)
def test_the_generator_reproduces_the_committed_table() -> None:
    data = generated()
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tools" / "provider_replacements.py"),
            *("--index", os.environ["ACCELSTACK_PROVIDER_INDEX"], "--ref", data["source"]["ref"]),
            *("--kubernetes", os.environ["ACCELSTACK_PULUMI_K8S"]),
            *("--kubernetes-ref", data["kubernetes"]["source"]["commit"]),
        ],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    ).stdout
    assert json.loads(out) == data


def test_a_statically_bound_claim_does_not_grow_so_the_program_keeps_its_request() -> None:
    """Kubernetes refuses to grow a claim no StorageClass provisioned; the FSx claim ignores
    changes to its request (components/filesystem.py), so a grown FSx sends no claim patch."""
    from accelstack.plan.updates import claim_requests, sent_inputs

    stored = {"spec": {"resources": {"requests": {"storage": "4800Gi"}}, "storageClassName": ""}}
    grown = {"spec": {"resources": {"requests": {"storage": "7200Gi"}}, "storageClassName": ""}}
    (patch,) = claim_requests(stored, sent_inputs(stored, grown))
    assert problems(patch) == [
        "only dynamically provisioned pvc can be resized and the storageclass that provisions "
        "the pvc must support resize"
    ]
    kept = sent_inputs(stored, grown, ["spec.resources.requests.storage"])
    assert claim_requests(stored, kept) == []
