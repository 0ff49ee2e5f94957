"""The catalog: integrity, and a cross-check of every row against moto's DescribeInstanceTypes
data, so the table cannot drift silently."""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest
import yaml
from moto import mock_aws

from accelstack.catalog import CATALOG_DIR, PURCHASE_OPTIONS, Catalog, load_catalog
from accelstack.errors import CatalogError, MissingPrice, UnknownInstanceType


@pytest.fixture(scope="module")
def described() -> dict[str, dict]:
    """DescribeInstanceTypes for every catalog type moto knows (through the boto3 API)."""
    catalog = load_catalog()
    with mock_aws():
        ec2 = boto3.client("ec2", region_name="us-east-1")
        out: dict[str, dict] = {}
        for name in catalog.instances:
            try:
                resp = ec2.describe_instance_types(InstanceTypes=[name])
            except ec2.exceptions.ClientError:
                continue
            for row in resp["InstanceTypes"]:
                out[row["InstanceType"]] = row
    return out


@pytest.mark.slow
def test_moto_knows_the_core_types(described):
    assert {
        "trn1.2xlarge",
        "trn1.32xlarge",
        "trn1n.32xlarge",
        "trn2.48xlarge",
        "p5.48xlarge",
        "p5e.48xlarge",
        "p5en.48xlarge",
        "m6i.xlarge",
    } <= set(described)
    assert "trn3.48xlarge" not in described  # preview: estimated, not in DIT


def _dit_facts(row: dict) -> dict[str, float]:
    net = row["NetworkInfo"]
    facts: dict[str, float] = {
        "vcpus": row["VCpuInfo"]["DefaultVCpus"],
        "memory_gib": row["MemoryInfo"]["SizeInMiB"] / 1024,
        "network_cards": net.get("MaximumNetworkCards", 1),
        "ipv4_per_interface": net["Ipv4AddressesPerInterface"],
        "efa_interfaces": net.get("EfaInfo", {}).get("MaximumEfaInterfaces", 0)
        if net.get("EfaSupported")
        else 0,
    }
    neuron, gpu = row.get("NeuronInfo"), row.get("GpuInfo")
    if neuron:
        facts["chips"] = sum(d["Count"] for d in neuron["NeuronDevices"])
        facts["physical_cores_per_chip"] = neuron["NeuronDevices"][0]["CoreInfo"]["Count"]
        facts["accelerator_memory_gib"] = neuron["TotalNeuronDeviceMemoryInMiB"] / 1024
    elif gpu:
        facts["chips"] = sum(g["Count"] for g in gpu["Gpus"])
        facts["accelerator_memory_gib"] = gpu["TotalGpuMemoryInMiB"] / 1024
    else:
        facts["chips"] = 0
        facts["accelerator_memory_gib"] = 0
    return facts


@pytest.mark.slow
def test_catalog_matches_describe_instance_types(described, catalog):
    """vCPU, memory, accelerator count and memory, network cards and EFA, for every type moto
    knows. A deliberate difference must be named in the row's dit_exceptions with a reason."""
    checked = 0
    mismatches = []
    for name, row in described.items():
        inst = catalog.instances[name]
        for field, dit_value in _dit_facts(row).items():
            if field in inst.dit_exceptions:
                continue
            ours = getattr(inst, field)
            if abs(float(ours) - float(dit_value)) > 0.51:  # GiB rounding (141 vs 141.0)
                mismatches.append(f"{name}.{field}: catalog {ours}, DIT {dit_value}")
            checked += 1
        # EFA support flag itself
        assert inst.efa_supported == bool(row["NetworkInfo"].get("EfaSupported")), name
    assert not mismatches, mismatches
    assert checked >= 60


@pytest.mark.slow
def test_dit_exceptions_are_real_differences(described, catalog):
    """An exception that no longer differs from DIT is stale and must be removed."""
    for name, inst in catalog.instances.items():
        if name not in described:
            continue
        facts = _dit_facts(described[name])
        for field in inst.dit_exceptions:
            assert field in facts, f"{name}: exception on unchecked field {field}"
            assert abs(float(getattr(inst, field)) - float(facts[field])) > 0.51, (
                f"{name}.{field}: listed as a DIT exception but agrees with DIT"
            )


@pytest.mark.slow
def test_offerings_match_moto(catalog):
    """The generated offerings file equals moto's DescribeInstanceTypeOfferings answers."""
    with mock_aws():
        for region in ("us-east-1", "us-east-2", "us-west-2"):
            ec2 = boto3.client("ec2", region_name=region)
            for itype in ("trn1.32xlarge", "trn2.48xlarge", "p5.48xlarge", "p5en.48xlarge"):
                resp = ec2.describe_instance_type_offerings(
                    LocationType="availability-zone-id",
                    Filters=[{"Name": "instance-type", "Values": [itype]}],
                )
                live = sorted(o["Location"] for o in resp["InstanceTypeOfferings"])
                assert list(catalog.zones_offering(region, itype)) == live, (region, itype)


def test_every_row_has_a_source(catalog):
    for name, inst in catalog.instances.items():
        assert inst.source.strip(), name
    for rate in (*catalog.instance_rates, *catalog.service_rates):
        assert rate.source.strip() and rate.as_of.strip(), rate
    for fam in catalog.families.values():
        assert fam.peak_source and fam.peak_as_of
    for curve in catalog.throughput.curves:
        assert curve.reason and (curve.records or curve.from_curve)
    for rec in catalog.records:
        assert rec.source.strip() and rec.kind in ("steady_state", "whole_run"), rec.id
    assert catalog.capacity_blocks.source and catalog.capacity_blocks.as_of


def test_state_bytes_follow_the_memory_fit(catalog):
    from accelstack.catalog.sizing import training_state_bytes

    assert training_state_bytes(catalog, 70, "bf16") == 70e9 * 16


def test_estimates_are_marked(catalog):
    preview = catalog.instance("trn3.48xlarge")
    assert preview.preview and "efa_interfaces" in preview.estimated_fields
    rate = catalog.instance_rate("us-east-2", "trn3.48xlarge", "on-demand")
    assert rate.estimate is True
    derived = [r for r in catalog.instance_rates if r.note and r.note.startswith("derived")]
    assert derived and all(r.estimate for r in derived)


def test_efa_counts_equal_network_cards_for_accelerated_types(catalog):
    expected = {
        "trn1.32xlarge": 8,
        "trn1n.32xlarge": 16,
        "trn2.48xlarge": 16,
        "p5.48xlarge": 32,
        "p5en.48xlarge": 16,
        "trn1.2xlarge": 0,
    }
    for name, count in expected.items():
        assert catalog.instance(name).efa_interfaces == count


def test_neuron_cores_follow_logical_core_setting(catalog):
    assert catalog.neuron_cores("trn1.32xlarge") == 32
    assert catalog.neuron_cores("trn2.48xlarge") == 64  # LNC=2 default
    assert catalog.neuron_cores("trn2.48xlarge", 1) == 128
    assert catalog.neuron_cores("p5.48xlarge") == 8
    with pytest.raises(CatalogError, match="does not divide"):
        catalog.neuron_cores("trn1.32xlarge", 4)


def test_unknown_type_and_missing_price_fail_closed(catalog):
    with pytest.raises(UnknownInstanceType, match="did you mean 'p5.48xlarge'"):
        catalog.instance("p5.48xl")
    with pytest.raises(MissingPrice, match="no on-demand price for p5e.48xlarge in us-east-2"):
        catalog.instance_rate("us-east-2", "p5e.48xlarge", "on-demand")
    with pytest.raises(MissingPrice, match="no price for 'nope' in us-east-1"):
        catalog.service_rate("us-east-1", "nope")


def test_price_options_are_known(catalog):
    assert {r.option for r in catalog.instance_rates} <= set(PURCHASE_OPTIONS)


def test_broken_catalog_does_not_load(tmp_path: Path):
    for f in CATALOG_DIR.glob("*.yaml"):
        (tmp_path / f.name).write_text(f.read_text())
    inst = yaml.safe_load((tmp_path / "instances.yaml").read_text())
    inst["instances"]["p5.48xlarge"]["family"] = "h1000"
    (tmp_path / "instances.yaml").write_text(yaml.safe_dump(inst))
    with pytest.raises(CatalogError, match=r"instances.p5.48xlarge.family: unknown 'h1000'"):
        load_catalog(tmp_path)


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_duplicate_price_row_rejected(tmp_path: Path):
    for f in CATALOG_DIR.glob("*.yaml"):
        (tmp_path / f.name).write_text(f.read_text())
    prices = yaml.safe_load((tmp_path / "prices.yaml").read_text())
    prices["instances"].append(dict(prices["instances"][0]))
    (tmp_path / "prices.yaml").write_text(yaml.safe_dump(prices))
    with pytest.raises(CatalogError, match="duplicate row"):
        load_catalog(tmp_path)


def test_pool_zone_is_the_one_placement_rule(catalog: Catalog) -> None:
    """The zone asked for (name or id), else the first zone offering the type, else None;
    resolve places every pool with it, once (the stack rules read ResolvedPool.zone_id)."""
    region = "us-east-2"
    offered = catalog.zones_offering(region, "trn2.48xlarge")
    name, zid = next((n, z) for n, z in catalog.region(region).zones.items() if z in offered)
    assert catalog.pool_zone(region, "trn2.48xlarge", name) == zid
    assert catalog.pool_zone(region, "trn2.48xlarge", zid) == zid
    assert catalog.pool_zone(region, "trn2.48xlarge", None) == offered[0]
    assert catalog.pool_zone(region, "trn2.48xlarge", "nowhere-1z") == offered[0]
    not_here = next(t for t in catalog.instances if not catalog.zones_offering(region, t))
    assert catalog.pool_zone(region, not_here, None) is None


def test_missing_facts_say_which_overlay_file_and_key_add_them(catalog):
    hint = "add it to your catalog overlay (--catalog DIR or ACCELSTACK_CATALOG_DIR): "
    with pytest.raises(UnknownInstanceType) as unknown:
        catalog.instance("x9z.metal")
    assert hint + "instances.yaml, under `instances:`, e.g. {x9z.metal: " in str(unknown.value)
    with pytest.raises(CatalogError) as region:
        catalog.region("mars-north-1")
    assert hint + "offerings_extra.yaml, under `regions:`" in str(region.value)
    with pytest.raises(CatalogError) as curve:
        catalog.mfu_curve("h100", "fp4")
    assert "set budget.mfu, or " + hint + "throughput.yaml, under `curves:`" in str(curve.value)
    assert "{family: h100, precisions: [fp4]," in str(curve.value)
