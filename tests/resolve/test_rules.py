"""The rules on the resolved stack (accelstack/resolve/rules.py): each refuses through
`resolve` with the spec's file, the YAML path and its message; they read what resolve derived
(zones placed once, the deployment's resource-name prefix); `validate`, the Pulumi stack's
resolution and the policy pack report them as one line, exit 2."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from accelstack.catalog import Catalog
from accelstack.cli import main
from accelstack.errors import SpecError
from accelstack.resolve import SPEC_RULES, STACK_RULES, Stack, resolve, resolve_unchecked
from accelstack.spec import load_spec, read_yaml
from accelstack.stackconfig import resolve_deployment

from ..conftest import STACKS

Edit = Callable[[dict[str, Any]], None]


def spec_file(tmp_path: Path, base: str, edit: Edit, name: str | None = None) -> Path:
    """A preset edited by `edit`, written as tmp_path/<name>.yaml (name: the spec's)."""
    data = copy.deepcopy(read_yaml(STACKS / f"{base}.yaml"))
    edit(data)
    if name:
        data["name"] = name
    path = tmp_path / f"{data['name']}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def pools(**fields: Any) -> Edit:
    def edit(d: dict[str, Any]) -> None:
        d["pools"][0].update(fields)

    return edit


def network(**fields: Any) -> Edit:
    return lambda d: d.update(network=fields)


def both(*edits: Edit) -> Edit:
    def edit(d: dict[str, Any]) -> None:
        for e in edits:
            e(d)

    return edit


def workload(**fields: Any) -> Edit:
    return lambda d: d["workload"].update(fields)


def model(**fields: Any) -> Edit:
    return lambda d: d["workload"]["model"].update(fields)


def long_pool_name(d: dict[str, Any]) -> None:
    d["pools"][0]["name"] = "h" * 7
    d["workload"].pop("pool", None)


NO_EDIT: Edit = lambda d: None  # noqa: E731

#: rule -> (preset, edit, spec name or None, YAML path, a piece of the message)
TRN2U_BLOCK = {"option": "capacity-block", "reservation_id": "cr-0a1b2c3d4e5f67890"}


CASES: dict[str, tuple[str, Edit, str | None, str, str]] = {
    "subnet-ip-budget": (
        "trn1-standalone",
        both(network(vpc_cidr="10.0.0.0/20"), pools(nodes=70, efa_interface_style="efa")),
        None,
        "pools[0].nodes",
        "the pools in this zone need 560 private addresses (pools[0]: 560; 'efa' interfaces "
        "included) but network.vpc_cidr 10.0.0.0/20 gives each zone a /23 private subnet "
        "with 507",
    ),
    "pool-addresses": (
        "llama3-70b-p5",
        both(network(vpc_cidr="10.42.0.0/16"), pools(nodes=2048, efa_interface_style="efa")),
        None,
        "pools[0].nodes",
        "the node groups of this pool do not fit zone use2-az3",
    ),
    "existing-subnets-cover-zones": (
        "mixed-trn2-p5",
        network(
            mode="existing",
            vpc_id="vpc-0123456789abcdef0",
            private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1"],
        ),
        None,
        "network.private_subnet_ids",
        "lists 1 subnet(s) for pools in 2 zone(s) (use2-az1, use2-az2)",
    ),
    "generated-names": (
        "llama3-70b-p5",
        long_pool_name,
        "p" * 37 + "-x",
        "pools[0].name",
        "would be 65 characters; AWS allows 64 (botocore iam roleNameType): shorten the pool "
        "name by 1",
    ),
    "bucket-names": (
        "llama3-70b-p5",
        NO_EDIT,
        "sthree-demo",
        "name",
        "the checkpoint bucket 'sthree-demo-ckpt-123456789012' starts with the reserved prefix "
        "'sthree-'",
    ),
    "tag-count": (
        "trn1-standalone",
        lambda d: d.update(tags={f"k{i}": "v" for i in range(45)}),
        None,
        "tags",
        "45 tags; with the stack's own a resource would carry 51, AWS allows 50",
    ),
    "workload-memory-fit": (
        "trn1-finetune",
        model(params_billion=400),
        None,
        "pools[0].nodes",
        "cannot hold the workload: 400B parameters need",
    ),
    "moe-shape": (
        "llama3-70b-p5",
        model(experts=8, experts_per_token=2),
        None,
        "workload.model.experts",
        "describes experts, but workload.model.active_params_billion is not set",
    ),
    "kubernetes-names": (
        "llama3-70b-p5",
        NO_EDIT,
        "a" * 39,
        "name",
        "the fabric test's longest pod name",
    ),
    "neuron-allocation": (
        "llama3-70b-trn2",
        lambda d: (
            d.update(region="ap-south-2", availability_zone=None),
            d["pools"][0].update(
                nodes=8,
                instance_type="trn2u.48xlarge",
                purchase={"option": "capacity-block", "reservation_id": "cr-0a1b2c3d4e5f67890"},
            ),
            d["pools"].append({"name": "trn2b", "instance_type": "trn2.48xlarge", "nodes": 2}),
        ),
        None,
        "pools[1].instance_type",
        "UltraServer pool 'trn2' (trn2u.48xlarge) needs the DRA driver",
    ),
    "ultraserver-spares-whole": (
        "llama3-70b-trn2",
        lambda d: (
            d.update(region="ap-south-2", availability_zone=None),
            d["pools"][0].update(
                nodes=8,
                spare_nodes=2,
                instance_type="trn2u.48xlarge",
                purchase={**TRN2U_BLOCK, "instances": 12},
            ),
        ),
        None,
        "pools[0].spare_nodes",
        "make the pool run 10 nodes, 2.5 UltraServers of 4",
    ),
    "kueue-topology-dra": (
        "llama3-70b-trn2",
        lambda d: (
            d.update(region="ap-south-2", availability_zone=None),
            d["pools"][0].update(nodes=8, instance_type="trn2u.48xlarge", purchase=TRN2U_BLOCK),
            d.update(jobs={"kueue": True, "topology_aware": True}),
        ),
        None,
        "jobs.topology_aware",
        "lists no DRA with topology-aware scheduling",
    ),
    "workload-size": (
        "llama3-70b-p5",
        workload(args=["y" * 70_000]),
        None,
        "workload",
        "entrypoint, args and env add up to",
    ),
    "addon-versions-pinned": (
        "trn1-finetune",
        lambda d: d["cluster"].update(kubernetes_version="1.36"),
        None,
        "cluster.kubernetes_version",
        "the catalog pins no version of the add-on(s) eks-pod-identity-agent, vpc-cni, "
        "kube-proxy, coredns, eks-node-monitoring-agent, amazon-cloudwatch-observability for "
        "Kubernetes 1.36",
    ),
    "pool-pod-room": (
        "trn1-finetune",
        NO_EDIT,
        None,
        "pools[0].instance_type",
        "trn1.2xlarge: 1 vCPUs and 2 GiB leave no room for a training pod",
    ),
    "standalone-document-size": (
        "trn1-standalone",
        workload(args=["y" * 20_000]),
        None,
        "workload",
        "standalone nodes get the launch script through an SSM document (65,536 bytes)",
    ),
}


TRN2U_RATE = {
    "region": "ap-south-2",
    "type": "trn2u.48xlarge",
    "option": "capacity-block",
    "usd": 1.0,
    "as_of": "2026-11",
    "estimate": True,
    "source": "user-supplied rate (test overlay)",
}


#: rule -> the catalog overlay files its case reads (file name -> content): user-supplied rates
#: for types the bundled catalog has no price for (prices fail closed), or a type changed
CASE_OVERLAYS: dict[str, dict[str, dict[str, Any]]] = {
    **{
        rule: {"prices.yaml": {"instances": [TRN2U_RATE]}}
        for rule in ("ultraserver-spares-whole", "kueue-topology-dra")
    },
    "neuron-allocation": {
        "prices.yaml": {
            "instances": [
                {
                    "region": "ap-south-2",
                    "type": t,
                    "option": o,
                    "usd": 1.0,
                    "as_of": "2026-11",
                    "estimate": True,
                    "source": "user-supplied rate (test overlay)",
                }
                for t, o in (("trn2u.48xlarge", "capacity-block"), ("trn2.48xlarge", "on-demand"))
            ]
        }
    },
    # a type whose node leaves no room for a pod beside the kubelet and DaemonSet reserve
    "pool-pod-room": {
        "instances.yaml": {"instances": {"trn1.2xlarge": {"vcpus": 1, "memory_gib": 2}}}
    },
    # an overlay that adds a Kubernetes version and no add-on row for it
    "addon-versions-pinned": {
        "instances.yaml": {
            "defaults": {
                "eks_versions": {
                    "1.36": {
                        "standard_support_end": "2027-07-28",
                        "extended_support_end": "2028-07-28",
                    }
                }
            }
        }
    },
}


def test_every_stack_rule_has_a_case_and_no_name_is_in_both_registries() -> None:
    names = [r.name for r in STACK_RULES]
    assert sorted(names) == sorted(CASES)
    assert not set(names) & set(SPEC_RULES.names)


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
@pytest.mark.parametrize("rule", sorted(CASES))
def test_each_stack_rule_refuses_through_resolve_naming_the_file_and_path(
    rule: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, edit, name, path, message = CASES[rule]
    if rule in CASE_OVERLAYS:
        from accelstack.catalog.overlay import ENV

        overlay = tmp_path / "overlay"
        overlay.mkdir()
        for file_name, content in CASE_OVERLAYS[rule].items():
            (overlay / file_name).write_text(yaml.safe_dump(content))
        monkeypatch.setenv(ENV, str(overlay))
    f = spec_file(tmp_path, base, edit, name)
    spec = load_spec(f)  # the spec rules accept it: only the derived values are wrong
    with pytest.raises(SpecError) as err:
        resolve(spec)
    found = [p for p in err.value.problems if p.path == path and message in p.message]
    assert found, err.value.problems
    assert all(p.file == str(f) for p in err.value.problems)
    assert str(found[0]).startswith(f"{f}: {path}: ")
    # the named rule is the one that says it
    check = next(r for r in STACK_RULES if r.name == rule).check
    assert any(message in m for p, m in check(resolve_unchecked(spec)) if p == path)


def test_every_preset_passes_the_stack_rules() -> None:
    for f in sorted(STACKS.glob("*.yaml")):
        stack = resolve_unchecked(load_spec(f))
        assert [(r.name, x) for r in STACK_RULES for x in r.check(stack)] == [], f


def test_a_spec_built_in_code_is_named_after_its_stack() -> None:
    from accelstack.spec.models import Spec

    data = read_yaml(STACKS / "llama3-70b-p5.yaml")
    data["name"] = "sthree-demo"
    with pytest.raises(SpecError) as err:
        resolve(Spec.model_validate(data))
    assert str(err.value).startswith("sthree-demo.yaml: name: the checkpoint bucket")


def test_a_spec_keeps_its_file_through_model_copy_and_equals_its_twin(tmp_path: Path) -> None:
    from accelstack.spec.models import Spec

    f = spec_file(tmp_path, "trn1-finetune", NO_EDIT)
    spec = load_spec(f)
    assert spec.file == str(f)
    assert spec.model_copy(update={"tags": {}}).file == str(f)
    assert Spec.model_validate(spec.model_dump()) == spec  # the file is not a field


# ---- the deployment's resource-name prefix -----------------------------------------------


def test_a_deployment_name_that_overflows_a_generated_name_is_refused(tmp_path: Path) -> None:
    """A 30-character spec name fits (`<stack>-system-node-role` + 8 = 55); deployed as
    Pulumi stack 'staging01' its prefix is 40 characters, and that role name would be 65."""
    name = "a" * 30
    f = spec_file(tmp_path, "llama3-70b-p5", NO_EDIT, name)
    spec = load_spec(f)
    assert resolve(spec).name == name
    with pytest.raises(SpecError) as err:
        resolve_deployment(f, "staging01", {})
    role, pods = err.value.problems  # the fabric test's pod names overflow too
    assert "to at most 37 characters (now 40)" in pods.message
    problem = role
    assert (problem.file, problem.path) == (str(f), "name")
    assert f"'{name}-staging01-system-node-role-xxxxxxx'" in problem.message
    assert "would be 65 characters; AWS allows 64" in problem.message
    assert f"shorten the resource-name prefix '{name}-staging01'" in problem.message
    assert "the Pulumi stack name" in problem.message
    assert resolve_deployment(f, "dev", {}).name == f"{name}-dev"  # 34: fits


def test_the_policy_pack_reports_a_stack_rule_as_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pulumi

    from policies import budget_policies as bp

    from ..policypack.test_policies import StackArgs

    name = "a" * 30
    # no job controller: no fabric test, whose pod names would overflow too (kubernetes-names)
    spec_file(tmp_path, "llama3-70b-p5", lambda d: d.update(jobs={"controller": "none"}), name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PULUMI_STACK", "staging01")
    pulumi.runtime.set_all_config({"accelstack:spec": f"{name}.yaml"})
    msgs: list[str] = []
    try:
        bp.budget.validate(StackArgs([]), lambda m, *a: msgs.append(m))
    finally:
        pulumi.runtime.set_all_config({})
    (msg,) = msgs
    assert msg.startswith(f"cannot check this stack's budget, so it is refused: {name}.yaml: name:")
    assert "\n" not in msg and "system-node-role" in msg


# ---- zones are placed once, by resolve -----------------------------------------------------


def test_zones_are_placed_once_by_resolve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Loading the spec places no pool; resolve places each pool once; the rules place none."""
    calls: list[str] = []
    real = Catalog.pool_zone

    def counted(self: Catalog, region: str, instance_type: str, wanted: str | None) -> Any:
        calls.append(instance_type)
        return real(self, region, instance_type, wanted)

    monkeypatch.setattr(Catalog, "pool_zone", counted)
    f = spec_file(tmp_path, "mixed-trn2-p5", CASES["existing-subnets-cover-zones"][1])
    spec = load_spec(f)
    assert calls == []
    with pytest.raises(SpecError, match="lists 1 subnet"):
        resolve(spec)
    assert calls == [p.instance_type for p in spec.pools]


def _rule(name: str) -> Callable[[Stack], Any]:
    return next(r for r in STACK_RULES if r.name == name).check


def test_the_address_rules_read_the_resolved_zone(tmp_path: Path) -> None:
    """Move the resolved pools to other zones: the findings follow ResolvedPool.zone_id (a
    rule that placed the pools itself would still say use2-az1, use2-az2)."""
    f = spec_file(tmp_path, "mixed-trn2-p5", CASES["existing-subnets-cover-zones"][1])
    stack = resolve_unchecked(load_spec(f))
    assert [p.zone_id for p in stack.pools] == ["use2-az1", "use2-az2"]
    moved = replace(stack, pools=tuple(replace(p, zone_id="use2-az3") for p in stack.pools))
    ((_, msg),) = _rule("existing-subnets-cover-zones")(moved)
    assert "for pools in 1 zone(s) (use2-az3); EKS needs subnets in at least 2 zones" in msg
    # standalone: two pools that share a zone share its subnet's addresses
    g = spec_file(
        tmp_path,
        "trn1-standalone",
        both(network(vpc_cidr="10.0.0.0/20"), pools(nodes=40, efa_interface_style="efa")),
    )
    standalone = resolve(load_spec(g))  # 40 x 8 = 320 of 507: fits
    twin = replace(standalone.pools[0], name="twin")
    same_zone = replace(standalone, pools=(standalone.pools[0], twin))
    ((path, msg),) = _rule("subnet-ip-budget")(same_zone)
    assert path == "pools[0].nodes" and "need 640 private addresses" in msg
    elsewhere = replace(same_zone, pools=(standalone.pools[0], replace(twin, zone_id="usw2-az9")))
    assert list(_rule("subnet-ip-budget")(elsewhere)) == []


def test_the_subnet_budget_counts_running_nodes_and_resolved_interfaces(tmp_path: Path) -> None:
    """Spare nodes take addresses: 60 + 4 spare x 8 = 512 > 507 on a /20."""
    f = spec_file(
        tmp_path,
        "trn1-standalone",
        both(network(vpc_cidr="10.0.0.0/20"), pools(nodes=60, efa_interface_style="efa")),
    )
    stack = resolve(load_spec(f))  # 480: fits
    spared = replace(stack, pools=(replace(stack.pools[0], spare_nodes=4),))
    ((_, msg),) = _rule("subnet-ip-budget")(spared)
    assert "need 512 private addresses" in msg
    no_efa = replace(spared, pools=(replace(spared.pools[0], efa_interfaces=0),))
    assert list(_rule("subnet-ip-budget")(no_efa)) == []  # 64 x 1


# ---- validate resolves ---------------------------------------------------------------------


def test_validate_reports_a_derived_rule_as_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The spec rules accept it; the checkpoint bucket the stack would create is not a valid
    S3 name: validate says so in one line naming the file, no traceback."""
    f = spec_file(tmp_path, "llama3-70b-p5", NO_EDIT, "sthree-demo")
    code = main(["validate", str(f)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"error: {f}: name: the checkpoint bucket 'sthree-demo-ckpt-")
    ok = spec_file(tmp_path, "llama3-70b-p5", NO_EDIT, "demo")
    assert main(["validate", str(ok), "--format", "json"]) == 0
    capsys.readouterr()


@pytest.mark.parametrize("command", ["check", "price", "render"])
def test_every_command_that_resolves_reports_a_derived_rule_as_one_line(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = spec_file(tmp_path, "trn1-finetune", model(params_billion=400))
    argv = [command, str(f)] + (["-o", str(tmp_path / "out")] if command == "render" else [])
    code = main(argv)
    _, err = capsys.readouterr()
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{f}: pools[0].nodes: 1 x trn1.2xlarge cannot hold the workload" in err
    assert not (tmp_path / "out").exists()


def test_new_refuses_a_name_the_stack_rules_refuse_before_writing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = "p" * 38 + "-x"  # 40: `<stack>-system-node-role` + 8 would be 65
    code = main(["new", name, "--from", "llama3-70b-p5", "--dir", str(tmp_path)])
    _, err = capsys.readouterr()
    # two lines: the fabric test's pod names overflow too (kubernetes-names)
    assert code == 2 and err.count("\n") == 2
    assert "shorten the stack name to at most 37 characters (now 40)" in err
    assert (
        f"-> {name}: name: cannot retarget: the IAM role name '{name}-system-node-role-xxxxxxx'"
        in err
    )
    assert list(tmp_path.iterdir()) == []


def test_validate_judges_the_names_of_every_stack_that_deploys_the_spec(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`validate` passes the spec under its own name, and refuses it where the project's
    Pulumi.staging01.yaml deploys it under a prefix whose role name would not fit (as `check`
    and `pulumi up` would)."""
    name = "a" * 30
    (tmp_path / "Pulumi.yaml").write_text("name: p\nruntime: python\n")
    (tmp_path / "stacks").mkdir()
    f = spec_file(tmp_path / "stacks", "llama3-70b-p5", NO_EDIT, name)
    assert main(["validate", str(f)]) == 0
    capsys.readouterr()
    (tmp_path / "Pulumi.staging01.yaml").write_text(
        f"config:\n  accelstack:spec: stacks/{name}.yaml\n"
    )
    assert main(["validate", str(f)]) == 2
    # the role name, then the fabric test's pod names (kubernetes-names)
    line, pods = capsys.readouterr().err.strip().splitlines()
    assert "to at most 37 characters (now 40)" in pods
    assert line.startswith(f"error: {f}: name: the IAM role name '{name}-staging01-")
    assert f"shorten the resource-name prefix '{name}-staging01'" in line
