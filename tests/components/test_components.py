"""Pure helpers of components/ (no Pulumi runtime): EFA wiring, AMIs, labels, taints, IAM and
bucket policies, subnet layout, device-plugin selection, kubeconfig."""

from __future__ import annotations

import ipaddress
import json
from typing import Any

import pytest

from accelstack.catalog import Catalog
from accelstack.components.cluster import kubeconfig
from accelstack.components.compile_cache import (
    bucket_policy_document,
    lifecycle_rules,
    pod_identity_policy,
    pod_identity_trust_policy,
)
from accelstack.components.device_plugins import plugin_releases
from accelstack.components.network import subnet_cidrs
from accelstack.components.nodegroup import (
    capacity_reservation,
    efa_network_interfaces,
    lnc_setup,
    market_options,
    node_taints,
    nodeadm_user_data,
)
from accelstack.inventory import node_labels, pool_node_groups
from accelstack.naming import EFA_LABEL, POOL_LABEL
from accelstack.resolve import ResolvedPool, Stack, resolve
from accelstack.resolve.plugins import device_plugins
from accelstack.spec import parse_spec


def small_spec(catalog: Catalog, instance_type: str, **pool: Any) -> dict[str, Any]:
    """A minimal valid spec for one pool of `instance_type` in a region that offers and
    prices it (on-demand preferred)."""
    option = pool.pop("option", None)
    for region in catalog.regions_offering(instance_type):
        for opt in [option] if option else ["on-demand", "spot", "capacity-block"]:
            if catalog.has_rate(region, instance_type, opt):
                purchase: dict[str, Any] = {"option": opt}
                if opt in ("capacity-block", "reservation"):
                    purchase["reservation_id"] = "cr-0123456789abcdef0"
                return {
                    "name": "t-" + instance_type.replace(".", "-"),
                    "region": region,
                    "cluster": {
                        "public_access_cidrs": ["203.0.113.0/24"],
                        "admin_principal_arns": ["arn:aws:iam::111122223333:role/deployer"],
                    },
                    "preview": catalog.instances[instance_type].preview,
                    "pools": [
                        {
                            "name": "p",
                            "instance_type": instance_type,
                            "nodes": 2,
                            "purchase": purchase,
                            **pool,
                        }
                    ],
                    "workload": {
                        "model": {"params_billion": 1},
                        "tokens_billion": 1,
                        "entrypoint": "train.py",
                        "image": "registry.example/train:1",  # TorchNeuron has no public one
                    },
                    # two nodes of the dearest type (p5en.48xlarge) stay well under this
                    "budget": {"max_hourly_usd": 500},
                }
    raise AssertionError(f"no priced offering for {instance_type}")


def stack_for(catalog: Catalog, instance_type: str, **pool: Any) -> Stack:
    return resolve(parse_spec(small_spec(catalog, instance_type, **pool), "<test>"), catalog)


def pool_for(catalog: Catalog, instance_type: str, **pool: Any) -> ResolvedPool:
    return stack_for(catalog, instance_type, **pool).pools[0]


EFA_COUNTS = {
    "trn1.32xlarge": 8,
    "trn1n.32xlarge": 16,
    "trn2.48xlarge": 16,
    "p5.48xlarge": 32,
    "p5en.48xlarge": 16,
}


@pytest.mark.parametrize(("itype", "count"), sorted(EFA_COUNTS.items()))
def test_efa_interfaces_one_per_network_card(catalog: Catalog, itype: str, count: int) -> None:
    nics = efa_network_interfaces(pool_for(catalog, itype))
    assert len(nics) == count == catalog.instances[itype].efa_interfaces
    assert [n["network_card_index"] for n in nics] == list(range(count))
    assert nics[0]["device_index"] == 0 and nics[0]["interface_type"] == "efa"
    assert {n["device_index"] for n in nics[1:]} == {1}


@pytest.mark.parametrize("style", ["efa", "efa-only"])
def test_efa_interface_style_applies_to_cards_after_zero(catalog: Catalog, style: str) -> None:
    nics = efa_network_interfaces(pool_for(catalog, "p5.48xlarge", efa_interface_style=style))
    assert nics[0]["interface_type"] == "efa"
    assert {n["interface_type"] for n in nics[1:]} == {style}
    assert all("subnet_id" not in n for n in nics)  # managed node groups own the subnet


def test_no_efa_means_no_interfaces_and_no_placement_group(catalog: Catalog) -> None:
    pool = pool_for(catalog, "trn1.2xlarge", efa=False)
    assert efa_network_interfaces(pool) == []
    assert not pool.placement_group
    assert EFA_LABEL not in node_labels(pool)


def test_ami_parameter_per_device_kind(catalog: Catalog) -> None:
    """The resolved pool names the EKS-optimized AL2023 AMI of its device kind's variant."""
    stack = stack_for(catalog, "trn2.48xlarge")
    trn, p5 = stack.pools[0], pool_for(catalog, "p5.48xlarge")
    version = stack.kubernetes_version
    assert trn.ami_parameter == (
        f"/aws/service/eks/optimized-ami/{version}/amazon-linux-2023/x86_64/neuron/recommended/"
        "image_id"
    )
    assert p5.ami_parameter is not None
    assert f"/amazon-linux-2023/x86_64/{p5.device.eks_ami_variant}/" in p5.ami_parameter


def test_labels_and_taints_come_from_the_device_kind(catalog: Catalog) -> None:
    trn, p5 = pool_for(catalog, "trn1.32xlarge"), pool_for(catalog, "p5.48xlarge")
    assert node_labels(trn) == {
        POOL_LABEL: "p",
        "accelstack.io/accelerator": "neuron",
        EFA_LABEL: "true",
    }
    assert node_taints(trn) == [
        {"key": "aws.amazon.com/neuron", "value": "true", "effect": "NO_SCHEDULE"}
    ]
    assert node_taints(p5) == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}]


def capacity_type(stack: Stack) -> str:
    """The capacity type of the stack's first pool's node group, as the inventory declares it
    (what the component passes and the cost guard prices)."""
    (group,) = pool_node_groups(stack, stack.pools[0]).node_groups
    return str(group.args["capacity_type"])


def test_capacity_block_purchase_wiring(catalog: Catalog) -> None:
    stack = stack_for(catalog, "p5e.48xlarge", option="capacity-block")
    pool = stack.pools[0]
    assert capacity_type(stack) == "CAPACITY_BLOCK"
    assert market_options(pool) == {"market_type": "capacity-block"}
    assert capacity_reservation(pool) == {
        "capacity_reservation_target": {"capacity_reservation_id": "cr-0123456789abcdef0"}
    }
    assert not pool.placement_group
    od_stack = stack_for(catalog, "p5.48xlarge")
    od = od_stack.pools[0]
    assert capacity_type(od_stack) == "ON_DEMAND" and market_options(od) is None
    assert capacity_reservation(od) is None and od.placement_group


def test_user_data_registers_labels_and_taints(catalog: Catalog) -> None:
    pool = pool_for(catalog, "trn2.48xlarge")
    text = nodeadm_user_data(
        "c", "https://x", "Q0E=", "172.20.0.0/16", node_labels(pool), node_taints(pool)
    )
    assert "application/node.eks.aws" in text and "NodeConfig" in text
    assert "--register-with-taints=aws.amazon.com/neuron=true:NoSchedule" in text
    assert f"{POOL_LABEL}=p" in text


def test_a_non_default_lnc_is_written_on_eks_nodes(catalog: Catalog) -> None:
    """trn2 defaults to LNC 2; a pool at LNC 1 must set it on the node, where the Neuron
    device plugin reads it (the EKS device plugin needs the node-level setting)."""
    pool = pool_for(catalog, "trn2.48xlarge", logical_cores=1)
    setup = lnc_setup(pool)
    assert setup is not None
    text = nodeadm_user_data(
        "c", "https://x", "Q0E=", "172.20.0.0/16", node_labels(pool), [], setup
    )
    assert "Content-Type: text/x-shellscript" in text
    assert "echo NEURON_LOGICAL_NC_CONFIG=1 > /opt/aws/neuron/logical_nc_config" in text
    assert text.rstrip().endswith("--ACCELSTACK--")
    # the default LNC, and a GPU pool, leave the node alone
    assert lnc_setup(pool_for(catalog, "trn2.48xlarge")) is None
    assert lnc_setup(pool_for(catalog, "p5.48xlarge")) is None
    plain = nodeadm_user_data("c", "https://x", "Q0E=", "172.20.0.0/16", {}, [])
    assert "x-shellscript" not in plain


def test_pod_identity_policy_names_only_the_bucket_and_prefix() -> None:
    arn = "arn:aws:s3:::cache-bkt"
    doc = pod_identity_policy(arn, "neuron-cache/")
    resources = [s["Resource"] for s in doc["Statement"]]
    assert resources == [arn, f"{arn}/neuron-cache/*"]
    listing, objects = doc["Statement"]
    assert listing["Action"] == "s3:ListBucket"
    assert listing["Condition"]["StringLike"]["s3:prefix"] == ["neuron-cache/", "neuron-cache/*"]
    assert sorted(objects["Action"]) == ["s3:DeleteObject", "s3:GetObject", "s3:PutObject"]
    assert "*" not in json.dumps(doc).replace("neuron-cache/*", "")
    cluster = "arn:aws:eks:us-east-1:123456789012:cluster/c"
    trust = pod_identity_trust_policy("123456789012", cluster, "training", "sa")["Statement"][0]
    assert trust["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert sorted(trust["Action"]) == ["sts:AssumeRole", "sts:TagSession"]
    cond = trust["Condition"]
    assert cond["StringEqualsIfExists"] == {"aws:SourceAccount": "123456789012"}
    assert cond["ArnEqualsIfExists"] == {"aws:SourceArn": cluster}
    assert cond["StringEquals"]["aws:RequestTag/kubernetes-service-account"] == "sa"


def test_bucket_policy_denies_plain_http() -> None:
    st = bucket_policy_document("arn:aws:s3:::b")["Statement"][0]
    assert st["Effect"] == "Deny" and st["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert st["Resource"] == ["arn:aws:s3:::b", "arn:aws:s3:::b/*"]
    rule = lifecycle_rules("p/", 30)[0]
    assert rule["noncurrent_version_expiration"] == {"noncurrent_days": 30}
    assert rule["expiration"] == {"days": 30}


def test_subnet_layout_is_disjoint_and_inside_the_vpc() -> None:
    slots = {"use2-az1": 0, "use2-az2": 1, "use2-az3": 2}
    cidrs = subnet_cidrs("10.42.0.0/16", slots)
    nets = [ipaddress.ip_network(c) for pair in cidrs.values() for c in pair]
    vpc = ipaddress.ip_network("10.42.0.0/16")
    assert all(n.subnet_of(vpc) for n in nets)
    assert not any(a.overlaps(b) for i, a in enumerate(nets) for b in nets[i + 1 :])
    # a zone's subnets depend on its slot alone: removing another zone moves nothing
    assert subnet_cidrs("10.42.0.0/16", {"use2-az3": 2})["use2-az3"] == cidrs["use2-az3"]
    with pytest.raises(ValueError, match="do not fit"):
        subnet_cidrs("10.42.0.0/16", {"use2-az1": 7})
    with pytest.raises(ValueError, match="do not fit"):
        subnet_cidrs("10.42.0.0/16", {"use2-az1": 1, "use2-az2": 1})


def test_network_spans_pool_zones_plus_a_second_for_the_control_plane(catalog: Catalog) -> None:
    stack = stack_for(catalog, "trn1.32xlarge")
    zones = stack.network_zone_ids
    assert zones[0] == stack.pools[0].zone_id and len(zones) == 2


def test_device_plugins_follow_the_pools(catalog: Catalog) -> None:
    charts = catalog.charts
    trn = stack_for(catalog, "trn1.32xlarge")
    rel = plugin_releases(device_plugins(trn))
    assert set(rel) == {"neuron", "efa"}
    assert rel["neuron"][0] == charts["neuron"] and rel["efa"][0] == charts["efa"]
    neuron_values = rel["neuron"][1]
    assert neuron_values["devicePlugin"]["nodeSelector"] == {"accelstack.io/accelerator": "neuron"}
    # the instance lists name the stack's own pool types only: a catalog row added for
    # another type leaves every deployed stack's chart values as they are
    assert neuron_values["neuronInstances"] == [p.instance_type for p in trn.pools]
    assert rel["efa"][1]["supportedInstanceLabels"]["values"] == [trn.pools[0].instance_type]
    assert rel["efa"][1]["nodeSelector"] == {EFA_LABEL: "true"}
    assert rel["efa"][1]["tolerations"][0]["key"] == "aws.amazon.com/neuron"
    p5 = plugin_releases(device_plugins(stack_for(catalog, "p5.48xlarge")))
    assert set(p5) == {"nvidia", "efa"} and p5["nvidia"][0] == charts["nvidia"]
    assert p5["nvidia"][1]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    ]
    solo = plugin_releases(device_plugins(stack_for(catalog, "trn1.2xlarge", efa=False)))
    assert set(solo) == {"neuron"}
    for chart in charts.values():
        assert chart.version and "@" in chart.source and "@" in chart.values_source


def test_kubeconfig_uses_exec_auth_not_static_credentials() -> None:
    doc = json.loads(kubeconfig("c1", "https://e", "Q0E=", "us-east-2"))
    user = doc["users"][0]["user"]
    assert set(user) == {"exec"}
    assert user["exec"]["args"][:4] == ["eks", "get-token", "--cluster-name", "c1"]
    assert doc["clusters"][0]["cluster"]["certificate-authority-data"] == "Q0E="


def test_efa_wiring_holds_for_every_efa_type_and_style(catalog: Catalog) -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    efa_types = sorted(
        n
        for n, i in catalog.instances.items()
        if i.efa_supported
        and not i.preview
        and any(
            catalog.has_rate(r, n, o)
            for r in catalog.regions_offering(n)
            for o in ("on-demand", "spot", "capacity-block")
        )
    )
    assert set(EFA_COUNTS) <= set(efa_types)
    pools = {t: pool_for(catalog, t) for t in efa_types}

    @settings(max_examples=40, deadline=None)
    @given(st.sampled_from(efa_types), st.sampled_from(["efa", "efa-only"]))
    def check(itype: str, style: str) -> None:
        from dataclasses import replace

        pool = replace(pools[itype], efa_interface_style=style)
        nics = efa_network_interfaces(pool)
        assert len(nics) == catalog.instances[itype].efa_interfaces
        assert nics[0] == {
            "network_card_index": 0,
            "device_index": 0,
            "interface_type": "efa",
            "delete_on_termination": "true",
        }
        for card, nic in enumerate(nics[1:], start=1):
            assert (nic["network_card_index"], nic["device_index"]) == (card, 1)
            assert nic["interface_type"] == style

    check()


@pytest.mark.slow
def test_accelstack_imports_without_pulumi() -> None:
    import subprocess
    import sys

    code = (
        "import sys, accelstack.plan, accelstack.cli, accelstack.cli.plan_cmds;"
        "sys.exit('pulumi' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
