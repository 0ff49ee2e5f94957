"""Spec validation: every rule has a test that asserts its one-line message."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from accelstack.errors import SpecError
from accelstack.resolve import resolve
from accelstack.spec import load_spec, parse_spec

from ..conftest import PRESETS, preset_ids
from ..factories import eks_spec

BASE: dict[str, Any] = eks_spec()  # trn2.48xlarge x 2, no budget


def validated(data: dict[str, Any], file: str = "stacks/demo.yaml") -> Any:
    """What `accelstack validate` accepts: the spec rules, then the rules on the resolved
    stack (`resolve`)."""
    return resolve(parse_spec(data, file))


def problems(mutate: Any = None, file: str = "stacks/demo.yaml") -> list[str]:
    data = copy.deepcopy(BASE)
    if mutate:
        mutate(data)
    with pytest.raises(SpecError) as info:
        validated(data, file)
    return [str(p) for p in info.value.problems]


def one(mutate: Any) -> str:
    found = problems(mutate)
    assert len(found) == 1, found
    return found[0]


def test_eks_needs_an_admin_and_a_reachable_endpoint():
    msg = one(lambda d: d["cluster"].pop("admin_principal_arns"))
    assert "cluster.admin_principal_arns: is empty and creator_admin is false" in msg
    assert problems_none(lambda d: d["cluster"].update(admin_principal_arns=[], creator_admin=True))
    msg = one(lambda d: d["cluster"].update(endpoint_public_access=False))
    assert "cluster.endpoint_public_access: is false" in msg
    # standalone clusters have no API endpoint
    assert problems_none(lambda d: d.update(orchestration="ec2", cluster={}))


def problems_none(mutate: Any) -> bool:
    data = copy.deepcopy(BASE)
    mutate(data)
    validated(data)
    return True


def test_base_spec_is_valid(catalog):
    spec = parse_spec(copy.deepcopy(BASE), "stacks/demo.yaml")
    stack = resolve(spec, catalog)
    pool = stack.pools[0]
    assert pool.efa is True and pool.efa_interfaces == 16  # default: on where supported
    assert stack.framework == "torchneuron"  # the trn2 default path (catalog)
    assert stack.image == BASE["workload"]["image"]
    assert stack.compile_cache_enabled
    assert stack.kubernetes_version == catalog.defaults.kubernetes_version


@pytest.mark.parametrize("path", PRESETS, ids=preset_ids())
def test_every_preset_validates_and_resolves(path: Path, catalog):
    spec = load_spec(path)
    stack = resolve(spec, catalog)
    assert spec.name == path.stem
    assert path.read_text().startswith("# yaml-language-server"), "schema hint first"
    assert "# For:" in path.read_text() or "# PREVIEW" in path.read_text(), "header says who"
    for pool in stack.pools:
        assert pool.zone_id in catalog.zones_offering(spec.region, pool.instance_type)
        assert pool.procs_per_node > 0


def test_presets_cover_the_required_shapes(catalog):
    specs = [load_spec(p) for p in PRESETS]
    types = {pool.instance_type for s in specs for pool in s.pools}
    assert {"trn1.2xlarge", "trn1.32xlarge", "trn2.48xlarge", "p5.48xlarge"} <= types
    assert types & {"p5e.48xlarge", "p5en.48xlarge"}
    assert any(catalog.instance(t).preview for t in types)
    assert any(p.purchase.option == "capacity-block" for s in specs for p in s.pools)
    assert any(
        {catalog.device_kind_of(p.instance_type).name for p in s.pools} == {"neuron", "nvidia"}
        for s in specs
    )
    single = next(s for s in specs if s.pools[0].instance_type == "trn1.2xlarge")
    assert resolve(single).pools[0].efa is False


# ---- shape errors ---------------------------------------------------------------------


def test_unknown_key_with_did_you_mean():
    msg = one(lambda d: d["pools"][0].update(efaa=True))
    assert msg.startswith(
        "stacks/demo.yaml: pools[0].efaa: unknown key 'efaa'; did you mean 'efa'?"
    )
    assert "allowed: name, instance_type" in msg


def test_unknown_top_level_key():
    msg = one(lambda d: d.update(regoin="us-east-1"))
    assert "regoin: unknown key 'regoin'; did you mean 'region'?" in msg


def test_missing_required_field():
    msg = one(lambda d: d["workload"].pop("entrypoint"))
    assert msg == "stacks/demo.yaml: workload.entrypoint: is required"


def test_wrong_type():
    msg = one(lambda d: d["pools"][0].update(nodes="two"))
    assert msg == "stacks/demo.yaml: pools[0].nodes: expected a whole number, found 'two'"


def test_out_of_range_number():
    msg = one(lambda d: d["pools"][0].update(nodes=0))
    assert msg == "stacks/demo.yaml: pools[0].nodes: 0 is out of range; must be at least 1"


def test_literal_with_did_you_mean():
    msg = one(lambda d: d["workload"].update(precision="bf61"))
    assert "workload.precision: 'bf61' is not allowed; did you mean 'bf16'?" in msg


def test_purchase_option_literal():
    msg = one(lambda d: d["pools"][0].update(purchase={"option": "spott"}))
    assert "pools[0].purchase.option: 'spott' is not allowed; did you mean 'spot'?" in msg


def test_empty_pools():
    msg = one(lambda d: d.update(pools=[]))
    assert msg == "stacks/demo.yaml: pools: must not be empty"


def test_bad_reservation_id_pattern():
    msg = one(
        lambda d: d["pools"][0].update(
            purchase={"option": "reservation", "reservation_id": "res-123"}
        )
    )
    assert "pools[0].purchase.reservation_id: 'res-123' does not match" in msg


def test_fsx_size_rule():
    msg = one(lambda d: d.update(storage={"fsx_lustre_gib": 2000}))
    assert "storage.fsx_lustre_gib: 2000: must be 1200 or a multiple of 2400" in msg


def test_bad_tag_key():
    msg = one(lambda d: d.update(tags={"aws:owner": "x"}))
    assert "tags: " in msg and "not 'aws:...'" in msg


# ---- catalog rules --------------------------------------------------------------------


def test_unknown_instance_type_did_you_mean():
    msg = one(lambda d: d["pools"][0].update(instance_type="trn2.48xl"))
    assert msg.startswith(
        "stacks/demo.yaml: pools[0].instance_type: 'trn2.48xl' is not a supported instance type; "
        "did you mean 'trn2.48xlarge'?"
    )


def test_cpu_type_is_not_a_pool_type():
    msg = one(lambda d: d["pools"][0].update(instance_type="m6i.xlarge"))
    assert (
        "pools[0].instance_type: 'm6i.xlarge' is a CPU type; pools need an accelerated type" in msg
    )


def test_efa_on_type_without_it():
    def mut(d: dict[str, Any]) -> None:
        d["region"] = "us-east-1"
        d["pools"][0].update(instance_type="trn1.2xlarge", nodes=1, efa=True)
        d["workload"]["model"]["params_billion"] = 1

    msg = one(mut)
    assert "pools[0].efa: EFA is not supported on trn1.2xlarge" in msg
    assert "trn1.32xlarge" in msg


def test_region_not_offering_type():
    msg = one(lambda d: d.update(region="us-west-2"))
    assert (
        "pools[0].instance_type: trn2.48xlarge is not offered in us-west-2 per the catalog" in msg
    )
    assert "us-east-2" in msg


def test_unknown_region_did_you_mean():
    msg = problems(lambda d: d.update(region="us-east-22"))[0]
    assert "region: 'us-east-22' has no accelerated offerings in the catalog; did you mean" in msg


def test_zone_not_offering_type():
    def mut(d: dict[str, Any]) -> None:
        d["region"] = "us-east-1"
        d["availability_zone"] = "use1-az1"
        d["pools"][0].update(instance_type="trn1.32xlarge")

    msg = one(mut)
    assert "availability_zone: zone 'use1-az1' (use1-az1) does not offer trn1.32xlarge" in msg
    assert "use1-az4, use1-az5, use1-az6" in msg


def test_zone_of_another_region():
    msg = one(lambda d: d.update(availability_zone="us-west-2a"))
    assert "availability_zone: 'us-west-2a' is not a zone of us-east-2" in msg


def test_zone_name_resolves_to_id(catalog):
    data = copy.deepcopy(BASE)
    data["availability_zone"] = "us-east-2c"
    stack = resolve(parse_spec(data, "x.yaml"), catalog)
    assert stack.pools[0].zone_id == catalog.zone_id("us-east-2", "us-east-2c")


def test_capacity_block_without_reservation_id():
    msg = one(
        lambda d: d["pools"][0].update(
            instance_type="p5.48xlarge", purchase={"option": "capacity-block"}
        )
    )
    assert (
        "pools[0].purchase.reservation_id: is required for purchase option 'capacity-block'" in msg
    )


def test_reservation_id_with_on_demand():
    msg = one(lambda d: d["pools"][0].update(purchase={"reservation_id": "cr-0123456789abcdef0"}))
    assert "reservation_id: is only allowed with capacity-block or reservation" in msg


def test_missing_price_fails_closed():
    msg = one(
        lambda d: d["pools"][0].update(
            instance_type="trn1n.32xlarge",
            purchase={"option": "capacity-block", "reservation_id": "cr-0123456789abcdef0"},
        )
    )
    assert (
        "pools[0].purchase.option: no capacity-block price for trn1n.32xlarge in us-east-2" in msg
    )


def test_reservation_is_billed_on_demand(catalog):
    data = copy.deepcopy(BASE)
    data["pools"][0]["purchase"] = {
        "option": "reservation",
        "reservation_id": "cr-0123456789abcdef0",
    }
    stack = resolve(parse_spec(data, "x.yaml"), catalog)
    assert stack.pools[0].placement_group is False  # never cap a reservation
    assert catalog.instance_rate("us-east-2", "trn2.48xlarge", "reservation").usd == pytest.approx(
        catalog.instance_rate("us-east-2", "trn2.48xlarge", "on-demand").usd
    )


def test_compile_cache_on_non_neuron_pool():
    def mut(d: dict[str, Any]) -> None:
        d["pools"][0].update(instance_type="p5.48xlarge", compile_cache=True)

    msg = one(mut)
    assert "pools[0].compile_cache: a compile cache is for Neuron pools only" in msg


def test_compile_cache_section_without_neuron_pool():
    def mut(d: dict[str, Any]) -> None:
        d["pools"][0].update(instance_type="p5.48xlarge")
        d["compile_cache"] = {"prefix": "x/"}

    msg = one(mut)
    assert msg == (
        "stacks/demo.yaml: compile_cache: is set but no pool is a Neuron pool "
        "(the Neuron compile cache serves trn pools only)"
    )


def test_workload_points_at_missing_pool():
    msg = one(lambda d: d["workload"].update(pool="trn3"))
    assert "workload.pool: 'trn3' is not a pool of this stack; did you mean 'trn2'?" in msg


def test_workload_pool_required_with_two_pools():
    def mut(d: dict[str, Any]) -> None:
        d["pools"].append({"name": "h100", "instance_type": "p5.48xlarge", "nodes": 1})

    msg = one(mut)
    assert "workload.pool: is required when there are several pools (one of: trn2, h100)" in msg


def test_duplicate_pool_names():
    def mut(d: dict[str, Any]) -> None:
        d["pools"].append(dict(d["pools"][0]))
        d["workload"]["pool"] = "trn2"

    msg = one(mut)
    assert "pools[1].name: 'trn2' is used by pools[0] already" in msg


def test_framework_mismatch():
    msg = one(lambda d: d["workload"].update(framework="torch-cuda"))
    assert "workload.framework: 'torch-cuda' cannot run on trn2.48xlarge" in msg
    assert "allowed there: torchneuron, xla" in msg


def test_preview_type_needs_ack():
    def mut(d: dict[str, Any]) -> None:
        d["pools"][0]["instance_type"] = "trn3.48xlarge"

    msg = one(mut)
    assert "set 'preview: true'" in msg


def test_memory_fit_rule():
    msg = one(lambda d: d["workload"]["model"].update(params_billion=200))
    assert msg.startswith("stacks/demo.yaml: pools[0].nodes: 2 x trn2.48xlarge cannot hold")
    assert "use at least 3 nodes" in msg


def test_logical_cores_on_gpu():
    msg = one(lambda d: d["pools"][0].update(instance_type="p5.48xlarge", logical_cores=2))
    assert "pools[0].logical_cores: applies to Neuron pools only" in msg


def test_precompile_on_gpu():
    def mut(d: dict[str, Any]) -> None:
        d["pools"][0]["instance_type"] = "p5.48xlarge"
        d["workload"]["precompile_steps"] = 5

    msg = one(mut)
    assert "workload.precompile_steps: pre-compilation is a Neuron step" in msg


def test_secret_like_env_refused():
    msg = one(lambda d: d["workload"].update(env={"HF_TOKEN": "abc"}))
    assert "workload.env.HF_TOKEN: looks like a secret" in msg


def test_open_cidr_refused():
    def mut(d: dict[str, Any]) -> None:
        d["cluster"] = {**d["cluster"], "public_access_cidrs": ["0.0.0.0/0"]}

    msg = one(mut)
    assert "cluster.public_access_cidrs[0]: '0.0.0.0/0' opens the port to the whole internet" in msg


def test_public_endpoint_needs_cidrs():
    msg = one(lambda d: d["cluster"].pop("public_access_cidrs"))
    assert "cluster.public_access_cidrs: must list the CIDRs" in msg


def test_existing_network_needs_ids():
    found = problems(lambda d: d.update(network={"mode": "existing"}))
    assert any("network.vpc_id: is required when network.mode is 'existing'" in p for p in found)
    assert any("network.private_subnet_ids: is required" in p for p in found)


def test_vpc_cidr_must_be_private():
    msg = one(lambda d: d.update(network={"vpc_cidr": "8.8.0.0/16"}))
    assert "network.vpc_cidr: '8.8.0.0/16' must be a private /16 to /20" in msg


def test_unsupported_kubernetes_version():
    msg = one(lambda d: d.update(cluster={**d["cluster"], **{"kubernetes_version": "1.3"}}))
    assert "cluster.kubernetes_version: '1.3' is not supported" in msg


def test_system_nodes_must_be_cpu():
    msg = one(
        lambda d: d.update(
            cluster={**d["cluster"], **{"system_nodes": {"instance_type": "p5.48xlarge"}}}
        )
    )
    assert "cluster.system_nodes.instance_type: 'p5.48xlarge' is an accelerated type" in msg


def test_standalone_section_on_eks():
    msg = one(lambda d: d.update(standalone={"install_slurm": True}))
    assert "standalone: applies only when orchestration is 'ec2'" in msg


def test_ssh_cidr_needs_key():
    def mut(d: dict[str, Any]) -> None:
        d["orchestration"] = "ec2"
        d["standalone"] = {"ssh_cidrs": ["10.0.0.0/8"]}

    msg = one(mut)
    assert "standalone.ssh_cidrs: needs standalone.ssh_key_name" in msg


def test_layers_and_hidden_size_together():
    msg = one(lambda d: d["workload"]["model"].update(layers=32))
    assert "workload.model: layers and hidden_size go together" in msg


def test_all_problems_reported_at_once():
    def mut(d: dict[str, Any]) -> None:
        d["workload"]["pool"] = "nope"
        d["pools"][0]["efa_interface_style"] = "efa-only"
        d["pools"][0]["efa"] = False

    assert len(problems(mut)) == 2


# ---- file-level errors ----------------------------------------------------------------


def test_yaml_syntax_error(tmp_path: Path):
    f = tmp_path / "x.yaml"
    f.write_text("name: [\n")
    with pytest.raises(SpecError) as info:
        load_spec(f)
    assert str(info.value).startswith(f"{f}: YAML syntax error at line 2, column 1")


def test_empty_file(tmp_path: Path):
    f = tmp_path / "x.yaml"
    f.write_text("# nothing\n")
    with pytest.raises(SpecError, match=r"x.yaml: is empty; a spec is a mapping"):
        load_spec(f)


def test_non_mapping_file(tmp_path: Path):
    f = tmp_path / "x.yaml"
    f.write_text("- a\n- b\n")
    with pytest.raises(SpecError, match=r"x.yaml: must be a mapping of keys, found a list"):
        load_spec(f)


def test_missing_file(tmp_path: Path):
    with pytest.raises(SpecError, match=r"nope.yaml: no such file"):
        load_spec(tmp_path / "nope.yaml")


def test_name_must_match_file(tmp_path: Path):
    import yaml

    f = tmp_path / "other.yaml"
    f.write_text(yaml.safe_dump(BASE))
    spec = load_spec(f)  # the shape: the name is held to the file when it is resolved
    with pytest.raises(SpecError) as info:
        resolve(spec)
    assert str(info.value) == (
        f"{f}: name: 'demo' does not match the file name 'other' (the stack name); "
        "rename one so they agree"
    )


def test_entrypoint_starting_with_dash():
    msg = one(lambda d: d["workload"].update(entrypoint="-m"))
    assert "workload.entrypoint: '-m' starts with '-': torchrun would read it as an option" in msg


def test_reserved_env_names():
    msg = one(lambda d: d["workload"].update(env={"nnodes": "3"}))
    assert "workload.env.nnodes: the launch script uses this variable itself" in msg
    msg = one(lambda d: d["workload"].update(env={"PATH": "/tmp"}))
    assert "workload.env.PATH: the launch script uses this variable itself" in msg


def test_kubernetes_version_past_extended_support(monkeypatch):
    monkeypatch.setenv("ACCELSTACK_TODAY", "2027-04-01")
    msg = one(lambda d: d.update(cluster={**d["cluster"], **{"kubernetes_version": "1.32"}}))
    assert "cluster.kubernetes_version: '1.32' reached the end of EKS extended support on " in msg
    assert "2027-03-23; use one of 1.33, 1.34, 1.35" in msg


def test_extended_support_warning_and_price(tmp_path, monkeypatch, capsys, catalog):
    import yaml

    from accelstack.cli import main
    from accelstack.cost.pricing import price_stack

    data = copy.deepcopy(BASE)
    data["cluster"] = {**data["cluster"], "kubernetes_version": "1.33"}
    data["budget"] = {"unlimited": True, "reason": "the support window is under test"}
    f = tmp_path / "demo.yaml"
    f.write_text(yaml.safe_dump(data))
    assert main(["validate", str(f)]) == 0
    out = capsys.readouterr().out
    assert "Kubernetes 1.33 left EKS standard support on 2026-07-29" in out
    old = price_stack(resolve(load_spec(f), catalog))
    (eks,) = [i for i in old.items if i.category == "control-plane"]
    assert eks.unit_usd == catalog.service_rate("us-east-2", "eks-cluster-extended").usd
    data["cluster"] = {**data["cluster"], "kubernetes_version": "1.35"}
    f.write_text(yaml.safe_dump(data))
    new = price_stack(resolve(load_spec(f), catalog))
    (eks,) = [i for i in new.items if i.category == "control-plane"]
    assert eks.unit_usd == catalog.service_rate("us-east-2", "eks-cluster").usd
    assert "standard support until 2027-03-27" in (eks.assumption or "")


# ---- training paths (frameworks), images, LNC per family ------------------------------------


def test_retired_framework_name_says_did_you_mean():
    msg = one(lambda d: d["workload"].update(framework="torch-neuronx"))
    assert msg.startswith(
        "stacks/demo.yaml: workload.framework: 'torch-neuronx' is the pip package"
    )
    assert "did you mean 'xla'" in msg


def test_framework_must_run_on_the_family():
    def trn1(d: dict[str, Any]) -> None:
        d["region"] = "us-west-2"
        d["pools"][0]["instance_type"] = "trn1.32xlarge"
        d["workload"]["framework"] = "torchneuron"

    msg = one(trn1)
    assert msg == (
        "stacks/demo.yaml: workload.framework: 'torchneuron' does not run on trn1.32xlarge "
        "(AWS Trainium); allowed there: xla"
    )


def test_xla_stays_allowed_on_trn2(catalog):
    data = copy.deepcopy(BASE)
    data["workload"].update(framework="xla", image=None, precompile_steps=3)
    stack = resolve(parse_spec(data, "stacks/demo.yaml"), catalog)
    assert stack.framework == "xla"
    assert stack.image.endswith("-sdk2.30.0-ubuntu24.04")  # the last XLA training image
    assert stack.workload_pool.procs_per_node == 64


def test_native_path_needs_an_image():
    msg = one(lambda d: d["workload"].pop("image"))
    assert msg.startswith(
        "stacks/demo.yaml: workload.image: is required for framework 'torchneuron': no public"
    )


def test_image_sdk_older_than_trn3_needs():
    def trn3(d: dict[str, Any]) -> None:
        d["preview"] = True
        d["pools"][0]["instance_type"] = "trn3.48xlarge"
        d["workload"]["image"] = "registry.example/tn:2.14-sdk2.26.1"

    found = problems(trn3)
    assert (
        "stacks/demo.yaml: workload.image: 'registry.example/tn:2.14-sdk2.26.1' carries Neuron "
        "SDK 2.26.1; AWS Trainium3 needs SDK 2.27.0 or newer"
    ) in found
    assert any("framework 'torchneuron' needs SDK 2.33.0 or newer" in p for p in found)


def test_xla_image_newer_than_the_last_xla_sdk():
    def xla(d: dict[str, Any]) -> None:
        d["workload"].update(framework="xla", image="registry.example/x:2.9-sdk2.32.0")

    msg = one(xla)
    assert "carries Neuron SDK 2.32.0; framework 'xla' is not in SDKs after 2.31" in msg


def test_image_without_sdk_tag_is_not_judged(catalog):
    data = copy.deepcopy(BASE)
    data["workload"]["image"] = "registry.example/tn@sha256:" + "a" * 64
    assert parse_spec(data, "stacks/demo.yaml").workload.image == data["workload"]["image"]


def test_trn1_accepts_only_lnc_1():
    def trn1(d: dict[str, Any]) -> None:
        d["region"] = "us-west-2"
        d["pools"][0].update(instance_type="trn1.32xlarge", logical_cores=2)
        d["workload"]["image"] = None

    msg = one(trn1)
    assert msg == (
        "stacks/demo.yaml: pools[0].logical_cores: 2 is not an LNC setting of AWS Trainium "
        "(allowed: 1)"
    )


def test_non_default_lnc_on_trn2_is_a_node_setting(catalog):
    data = copy.deepcopy(BASE)
    data["pools"][0]["logical_cores"] = 1
    pool = resolve(parse_spec(data, "stacks/demo.yaml"), catalog).pools[0]
    assert pool.node_lnc_setting == "NEURON_LOGICAL_NC_CONFIG=1"
    assert pool.device.node_lnc_file == "/opt/aws/neuron/logical_nc_config"
    assert pool.procs_per_node == 128  # one rank per logical NeuronCore
    default = resolve(parse_spec(copy.deepcopy(BASE), "stacks/demo.yaml"), catalog).pools[0]
    assert default.node_lnc_setting is None and default.procs_per_node == 64


def test_precompile_is_an_xla_phase():
    msg = one(lambda d: d["workload"].update(precompile_steps=5))
    assert msg.startswith(
        "stacks/demo.yaml: workload.precompile_steps: framework 'torchneuron' has no pre-compile"
    )
    msg = one(lambda d: d["workload"].update(framework="xla", image=None, precompile_args=["-x"]))
    assert (
        msg
        == "stacks/demo.yaml: workload.precompile_args: apply only with precompile_steps above 0"
    )


#: How a missing-fact message tells the user to add the fact to their catalog overlay.
OVERLAY_HINT = "add it to your catalog overlay (--catalog DIR or ACCELSTACK_CATALOG_DIR): "


def test_a_missing_price_says_once_where_to_add_it():
    msg = one(
        lambda d: d["pools"][0].update(
            instance_type="trn1n.32xlarge",
            purchase={"option": "capacity-block", "reservation_id": "cr-0123456789abcdef0"},
        )
    )
    assert msg.count(OVERLAY_HINT) == 1 and msg.count("prices.yaml") == 1
    assert "prices.yaml, under `instances:`" in msg


def test_an_unknown_region_says_how_to_add_one_and_a_typo_only_what_was_meant():
    msg = problems(lambda d: d.update(region="mars-north-1"))[0]
    assert OVERLAY_HINT + "offerings_extra.yaml, under `regions:`, e.g. {mars-north-1: " in msg
    assert OVERLAY_HINT not in problems(lambda d: d.update(region="us-east-22"))[0]


def test_an_unknown_instance_type_says_how_to_add_one_and_a_typo_only_what_was_meant():
    msg = problems(lambda d: d["pools"][0].update(instance_type="x9z.metal"))[0]
    assert "pools[0].instance_type: 'x9z.metal' is not a supported instance type" in msg
    assert OVERLAY_HINT + "instances.yaml, under `instances:`, e.g. {x9z.metal: " in msg
    typo = problems(lambda d: d["pools"][0].update(instance_type="trn2.48xl"))[0]
    assert "did you mean 'trn2.48xlarge'?" in typo and OVERLAY_HINT not in typo
