"""Rules on the resolved stack: what needs derived values is checked on the facts `resolve`
computed, never re-derived from the raw spec.

Each rule is one small function decorated with `@stack_rule(name, summary)`: it receives the
resolved `Stack` and yields `(yaml_path, message)` pairs. The decorator registers nothing: the
rules are listed in `MODULE_RULES` at the end, and `STACK_RULES`, the ordered registry
(docs/spec.md lists it beside the spec rules), is built from it; `check_stack` runs every rule
and names the spec file in each `Problem`. `accelstack.resolve.resolve` runs them right after building the stack,
so every `Stack` the CLI, the policy pack or the Pulumi program holds has passed them. The spec
rules (accelstack/resolve/spec_rules.py and its siblings, `SPEC_RULES`) run before, on the same
stack: they vouch for the spec these rules derive from.

Derived facts read here: each pool's zone, running nodes (nodes + spare_nodes), EFA interfaces
and interface style, node-group parts; the system nodes, VPC CIDR and its address plan; the tag
set; the resource-name prefix (`Stack.name`: the deployment name when a Pulumi stack deploys
the spec under another name); the compile-cache bucket; the workload pool's memory fit.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterator

from accelstack import naming, rulebook
from accelstack.catalog import limits
from accelstack.catalog.ipbudget import (
    node_ips,
    per_node,
    private_subnet_cidr,
    usable_ips,
)
from accelstack.catalog.sizing import experts_overflow_note
from accelstack.errors import Problem, shown
from accelstack.resolve.k8snames import kubernetes_names
from accelstack.resolve.scale_rules import first_url
from accelstack.resolve.stack import MIN_CLUSTER_ZONES, ResolvedPool, Stack
from accelstack.resolve.upstream import KUEUE_DRA_TAS
from accelstack.spec.models import Workload

Finding = rulebook.Finding  # (YAML path, message)
Check = Callable[[Stack], Iterator[Finding]]
StackRule = rulebook.Rule[Stack]


def stack_rule(name: str, summary: str) -> Callable[[Check], StackRule]:
    """`@stack_rule(name, summary)`: the function becomes a stack rule; list it in
    `MODULE_RULES`."""
    return rulebook.rule(name, summary)


def check_stack(stack: Stack) -> list[Problem]:
    """Every finding of every stack rule, as problems naming the spec's file."""
    file = stack.spec.file
    return [Problem(file, path, msg) for path, msg in rulebook.findings(STACK_RULES, stack)]


def _indexed(stack: Stack) -> Iterator[tuple[str, ResolvedPool]]:
    """(YAML path, pool) of each pool, in the spec's order."""
    for pool in stack.pools:
        yield pool.at, pool


# ---------------------------------------------------------------------------------------
# Addresses and zones
# ---------------------------------------------------------------------------------------


def _zone_demand(stack: Stack) -> dict[str, list[tuple[str, int]]]:
    """Per zone of a standalone cluster's created VPC: (who, addresses its running nodes
    take), from each pool's resolved zone, EFA interfaces and interface style."""
    out: dict[str, list[tuple[str, int]]] = {}
    for at, p in _indexed(stack):
        per = node_ips(stack.catalog, p.instance, p.efa_interfaces, p.efa_interface_style, False)
        out.setdefault(p.zone_id, []).append((at, per * p.running_nodes))
    return out


@stack_rule(
    "subnet-ip-budget",
    "each zone's private subnet holds its standalone pools' node addresses (EKS: pool-addresses)",
)
def _subnet_ip_budget(stack: Stack) -> Iterator[Finding]:
    if stack.spec.network.mode != "create" or stack.spec.orchestration == "eks":
        return
    vpc = stack.vpc_cidr
    subnet = private_subnet_cidr(vpc)
    usable = usable_ips(stack.catalog, subnet)
    larger = "a larger vpc_cidr (up to /16), " if int(vpc.split("/")[1]) > 16 else ""
    with_ena = {at for at, p in _indexed(stack) if p.efa_interface_style == "efa"}
    for demand in _zone_demand(stack).values():
        need = sum(n for _, n in demand)
        if need > usable:
            parts = ", ".join(f"{at}: {n}" for at, n in demand)
            efa_only = (
                ", efa_interface_style 'efa-only'" if with_ena & {at for at, _ in demand} else ""
            )
            yield (
                demand[0][0] + ".nodes",
                f"the pools in this zone need {need} private addresses ({parts}; 'efa' "
                f"interfaces included) but network.vpc_cidr {vpc} gives each zone a "
                f"/{subnet.split('/')[1]} private subnet with {usable}: use {larger}fewer "
                f"nodes{efa_only} or pools in other zones",
            )


@stack_rule(
    "pool-addresses",
    "a created VPC (EKS) holds every node group's addresses: default VPC CNI settings, else "
    "WARM_IP_TARGET/MINIMUM_IP_TARGET, else a secondary CIDR",
)
def _pool_addresses(stack: Stack) -> Iterator[Finding]:
    """What the stack's address plan (computed once by resolve) could not place."""
    cat, plan = stack.catalog, stack.address_plan
    pools = dict(_indexed(stack))
    space = cat.scale.address_space
    if stack.spec.network.mode != "create":
        for at, what in dict(plan.problems).items():
            yield (
                f"{at}.nodes",
                f"the existing VPC's private subnets cannot hold this pool even with "
                f"WARM_IP_TARGET/MINIMUM_IP_TARGET ({first_url(space.compact_cni.source)}): "
                f"{what} (network.private_subnet_addresses); add a larger private subnet in "
                "that zone, use fewer nodes, or network.mode 'create'",
            )
        return
    for at, what in dict(plan.problems).items():
        p = pools[at]
        zone_cidr = plan.secondary_subnets.get(p.zone_id, "")
        size = usable_ips(cat, zone_cidr) if zone_cidr else 0
        compact = per_node(cat, p.instance, p.efa_interfaces, p.efa_interface_style, True)
        efa = (
            "efa_interface_style 'efa-only', "
            if compact > 1 + space.compact_cni.addresses_per_node
            else ""
        )
        yield (
            f"{at}.nodes",
            f"the node groups of this pool do not fit zone {p.zone_id}: {what} beyond the "
            f"private subnet of network.vpc_cidr {shown(stack.vpc_cidr)} and the zone's "
            f"secondary CIDR block {zone_cidr} ({size} addresses; "
            f"{first_url(space.secondary_cidr_source)}): use {efa}fewer nodes, or split the "
            "pool into pools in other zones",
        )


@stack_rule(
    "existing-subnets-cover-zones",
    "an existing VPC lists a private subnet for each pool zone (two or more for EKS)",
)
def _existing_subnets(stack: Stack) -> Iterator[Finding]:
    """A spec names subnets by id only, so offline the check is on count: one private subnet
    per zone the pools use (the plan places subnet i in the i-th pool zone), and for EKS
    subnets in at least two zones, which the EKS control plane requires
    (https://docs.aws.amazon.com/eks/latest/userguide/network-reqs.html). `accelstack
    preflight` checks their real zones."""
    net, eks = stack.spec.network, stack.spec.orchestration == "eks"
    if net.mode != "existing" or not net.private_subnet_ids:
        return
    zones = list(dict.fromkeys(p.zone_id for p in stack.pools))
    need = max(len(zones), MIN_CLUSTER_ZONES if eks else 1)
    have = len(net.private_subnet_ids)
    if have < need:
        both = f"; EKS needs subnets in at least {MIN_CLUSTER_ZONES} zones" if eks else ""
        yield (
            "network.private_subnet_ids",
            f"lists {have} subnet(s) for pools in {len(zones)} zone(s) ({', '.join(zones)})"
            f"{both}; list at least {need}: one private subnet in each pool's zone, in pool "
            "order (`accelstack preflight` checks their real zones)",
        )


# ---------------------------------------------------------------------------------------
# Generated names, buckets, tags
# ---------------------------------------------------------------------------------------


def _shorten(stack: Stack, path: str) -> str:
    """What to shorten for a name too long at `path`: the pool name, else the resource-name
    prefix (the spec's name, or the spec and Pulumi stack names it joins)."""
    if path != "name":
        return "the pool name"
    if stack.deployment:
        return (
            f"the resource-name prefix {shown(stack.name)} (the spec name and the Pulumi "
            "stack name)"
        )
    return "the stack name"


def _role_names(stack: Stack) -> Iterator[tuple[str, str]]:
    """(YAML path, name) of each IAM role the components autoname for this stack."""
    for pattern, orchestration, needs_cache in naming.ROLE_PATTERNS:
        if orchestration != stack.spec.orchestration:
            continue
        if needs_cache and not stack.compile_cache_enabled:
            continue
        if "{pool}" not in pattern:
            yield "name", pattern.format(stack=stack.name)
            continue
        for at, p in _indexed(stack):
            yield f"{at}.name", pattern.format(stack=stack.name, pool=p.name)


def _node_group_names(stack: Stack) -> Iterator[tuple[str, str]]:
    """(YAML path, name) of each EKS managed node group: every part resolve split each pool
    into (`ng`, `ng-2`, ...), then the system group."""
    if stack.spec.orchestration != "eks":
        return
    for at, p in _indexed(stack):
        for part in p.node_groups:
            yield f"{at}.name", naming.pool_node_group(stack.name, p.name, part.role)
    yield "name", naming.system_node_group(stack.name)


def _generated(stack: Stack) -> Iterator[tuple[str, str, str, int, str]]:
    """(YAML path, kind, generated name with its autoname suffix, limit, limit source)."""
    role_max, _ = limits.iam_role_name()
    suffix = "-" + "x" * (limits.AUTONAME_SUFFIX - 1)
    for path, name in _role_names(stack):
        yield (path, "IAM role", name + suffix, role_max, "botocore iam roleNameType")
    for path, name in _node_group_names(stack):
        yield (path, "EKS node group", name + suffix, limits.NODEGROUP_NAME_MAX, "EKS API")


@stack_rule("generated-names", "names generated from the stack and pool names fit AWS limits")
def _generated_names(stack: Stack) -> Iterator[Finding]:
    seen: set[str] = set()
    for path, kind, name, limit, source in _generated(stack):
        if len(name) > limit and path not in seen:
            seen.add(path)
            yield (
                path,
                f"the {kind} name '{name}' (with Pulumi's autoname suffix) would be "
                f"{len(name)} characters; AWS allows {limit} ({source}): shorten "
                f"{_shorten(stack, path)} by {len(name) - limit}",
            )


@stack_rule(
    "kubernetes-names",
    "the job layer's generated names fit their limits at the most nodes each job runs on: "
    "JobSet pod and Job names, PyTorchJob pods and Services, Services and hostnames (DNS-1035 "
    "labels) and label values at most 63 characters; the Kueue ClusterQueue, ResourceFlavor "
    "and Topology names (DNS-1123 subdomains) at most 253 characters",
)
def _kubernetes_names(stack: Stack) -> Iterator[Finding]:
    """One finding for the name furthest over its limit, with the longest stack name that
    makes every name fit (each holds the resource-name prefix once)."""
    over = [n for n in kubernetes_names(stack) if n.excess > 0]
    if not over:
        return
    worst = max(over, key=lambda n: n.excess)
    allowed = len(stack.name) - worst.excess
    yield (
        "name",
        f"{worst.what} '{worst.name}' would be {len(worst.name)} characters; {worst.rule} "
        f"allows at most {worst.limit}: shorten {_shorten(stack, 'name')} to at most {allowed} "
        f"characters (now {len(stack.name)})",
    )


@stack_rule(
    "neuron-allocation",
    "UltraServer pools (Neuron DRA driver) and other Neuron pools (device plugin) are not "
    "mixed: the Neuron chart refuses both in one release",
)
def _neuron_allocation(stack: Stack) -> Iterator[Finding]:
    """The pinned Neuron chart fails its own config check when `draDriver.enabled` and
    `devicePlugin.enabled` are both true (catalog charts.neuron config_checks, with its
    source), and the stack installs one release of it."""
    ultra = {p.device.name: p for p in stack.ultraserver_pools}
    for at, p in _indexed(stack):
        other = ultra.get(p.device.name)
        if other is None or p.ultraserver is not None:
            continue
        yield (
            f"{at}.instance_type",
            f"{p.instance_type} gets its {p.device.name} devices from the device plugin, but "
            f"UltraServer pool '{other.name}' ({other.instance_type}) needs the DRA driver, and "
            "the Neuron chart refuses both in one release: put this pool in another stack, or "
            f"make it an UltraServer pool ({other.instance_type})",
        )


#: The longest AWS account id: generated bucket names are checked at their longest.
LONGEST_ACCOUNT = "123456789012"


def _buckets(stack: Stack) -> Iterator[tuple[str, str, str]]:
    """(YAML path, what, name) of each bucket the stack uses: an existing one under its own
    path, one the stack creates (named after the resource-name prefix, at the longest account
    id) under `name`."""
    if stack.compile_cache_bucket:
        yield "compile_cache.bucket", "", stack.compile_cache_bucket
    elif stack.compile_cache_enabled:
        generated = naming.cache_bucket(stack.name, LONGEST_ACCOUNT)
        yield "name", "the compile-cache bucket ", generated
    ckpt = stack.checkpoint
    if ckpt is not None and ckpt.bucket:
        yield "checkpoint.bucket", "", ckpt.bucket
    elif ckpt is not None:
        yield (
            "name",
            "the checkpoint bucket ",
            naming.checkpoint_bucket(stack.name, LONGEST_ACCOUNT),
        )


@stack_rule(
    "bucket-names",
    "the buckets the stack uses or creates (compile cache, checkpoints) have valid S3 names",
)
def _bucket_names(stack: Stack) -> Iterator[Finding]:
    for path, what, name in _buckets(stack):
        problem = limits.bucket_name_problem(name)
        if problem:
            yield (path, f"{what}'{name}' {problem} (S3 bucket naming rules)")


#: The most tags any one resource adds on top of the stack's identity tags (naming.py): Name,
#: kubernetes.io/cluster/<name>, kubernetes.io/role/..., the pool tag; the tag-count deploy
#: rule checks the real merge.
RESOURCE_TAG_KEYS = 4


@stack_rule("tag-count", "spec tags plus the stack's own fit the 50-tags-per-resource limit")
def _tag_count(stack: Stack) -> Iterator[Finding]:
    limit = limits.max_tags()
    carried = len(stack.tags) + RESOURCE_TAG_KEYS
    if carried > limit:
        own = len(set(stack.tags) - set(stack.spec.tags))
        yield (
            "tags",
            f"{len(stack.spec.tags)} tags; with the stack's own a resource would carry "
            f"{carried}, AWS allows {limit} (botocore iam tagListType, eks TagMap): keep at "
            f"most {limit - RESOURCE_TAG_KEYS - own}",
        )


# ---------------------------------------------------------------------------------------
# The workload: memory fit, launch document sizes
# ---------------------------------------------------------------------------------------


@stack_rule("workload-memory-fit", "the workload pool's memory holds the model's training state")
def _workload_fit(stack: Stack) -> Iterator[Finding]:
    pool, wl = stack.workload_pool, stack.spec.workload
    fit = stack.workload_memory_fit
    if fit is None or fit.fits(pool.nodes):
        return
    if fit.experts_overflow:  # no node count helps: the expert-parallel degree must grow
        yield "workload.expert_parallel", experts_overflow_note(fit)
        return
    at = pool.at
    yield (
        f"{at}.nodes",
        f"{pool.nodes} x {pool.instance_type} cannot hold the workload: "
        f"{wl.model.params_billion:g}B parameters need {fit.required_gib:,.0f} GiB of "
        f"training state at {fit.bytes_per_param:g} bytes/parameter, {pool.nodes} node(s) "
        f"give {pool.nodes * fit.usable_gib_per_node:,.0f} GiB usable; use at least "
        f"{fit.min_nodes} nodes",
    )


def _utf8(text: str) -> int:
    return len(text.encode("utf-8"))


def workload_text_bytes(wl: Workload) -> int:
    """Bytes of user text the launch script carries: entrypoint, args, env names and values."""
    return (
        _utf8(wl.entrypoint)
        + sum(_utf8(a) for a in wl.args)
        + sum(_utf8(k) + _utf8(v) for k, v in wl.env.items())
    )


def quoted_workload_bytes(wl: Workload) -> int:
    """The same text as the node script writes it (shell-quoted, one line each)."""
    return (
        _utf8(f"entrypoint={shlex.quote(wl.entrypoint)}\n")
        + sum(_utf8(f"  {shlex.quote(a)}\n") for a in wl.args)
        + sum(_utf8(f"export {k}={shlex.quote(v)}\n") for k, v in wl.env.items())
    )


#: The launch ConfigMap holds the node script once, written as a YAML string: quoting for the
#: shell and then for YAML can grow user text up to 7 times ("'" -> '"'"' -> '\"'\"'),
#: so user text is bounded at 1/16 of the ConfigMap limit (under half of it after growth).
CONFIGMAP_SHARE = 16


@stack_rule("workload-size", "entrypoint, args and env fit far below the 1 MiB ConfigMap limit")
def _workload_size(stack: Stack) -> Iterator[Finding]:
    limit = stack.catalog.defaults.configmap_limit_bytes // CONFIGMAP_SHARE
    size = workload_text_bytes(stack.spec.workload)
    if size > limit:
        yield (
            "workload",
            f"entrypoint, args and env add up to {size:,} bytes; at most {limit:,} are allowed "
            "(the launch ConfigMap is limited to 1 MiB): pass a config file instead",
        )


#: Bytes of a standalone pool's SSM launch document besides workload.entrypoint/args/env: the
#: install script (env file, run wrapper, node script's fixed text, FSx mount) as JSON, for the
#: longest stack, pool and compile-cache names the spec allows, plus a margin.
#: tests/spec/test_loader_reliability.py renders that worst case and checks it.
DOCUMENT_FIXED_BYTES = 20 * 1024  # measured worst case 16.3 KiB with the fabric self-check
#: JSON (ensure_ascii) grows the shell-quoted user text at most 3 times: '"' and '\\' double,
#: non-ASCII characters become \uXXXX (6 bytes for 2-3 UTF-8 bytes, 12 for 4).
DOCUMENT_JSON_GROWTH = 3


@stack_rule(
    "standalone-document-size", "orchestration ec2: the launch document stays under SSM's limit"
)
def _standalone_document_size(stack: Stack) -> Iterator[Finding]:
    if stack.spec.orchestration != "ec2":
        return
    limit = stack.catalog.defaults.ssm_document_limit_bytes
    room = (limit - DOCUMENT_FIXED_BYTES) // DOCUMENT_JSON_GROWTH
    size = quoted_workload_bytes(stack.spec.workload)
    if size > room:
        yield (
            "workload",
            f"entrypoint, args and env take {size:,} bytes shell-quoted; standalone nodes get "
            f"the launch script through an SSM document ({limit:,} bytes), which leaves "
            f"{room:,} for them once JSON-escaped: pass a config file instead",
        )


@stack_rule(
    "moe-shape",
    "the experts' shape (experts, experts_per_token, expert_hidden_size) belongs to a mixture "
    "of experts and routes no more experts per token than it has",
)
def _moe_shape(stack: Stack) -> Iterator[Finding]:
    m = stack.workload.model
    given = [
        k
        for k in ("experts", "experts_per_token", "expert_hidden_size", "moe_layers")
        if getattr(m, k) is not None
    ]
    if given and m.active_params_billion is None:
        yield (
            f"workload.model.{given[0]}",
            f"{getattr(m, given[0])} describes experts, but workload.model.active_params_billion "
            "is not set: a dense model has none (set the active parameters per token, or remove "
            f"{', '.join(given)})",
        )
        return
    if m.experts and m.experts_per_token and m.experts_per_token > m.experts:
        yield (
            "workload.model.experts_per_token",
            f"{m.experts_per_token} is more than experts {m.experts}: a token is routed to at "
            "most every expert",
        )
    if m.moe_layers is not None and m.layers is not None and m.moe_layers > m.layers:
        yield (
            "workload.model.moe_layers",
            f"{m.moe_layers} is more than layers {m.layers}",
        )


# ---------------------------------------------------------------------------------------
# UltraServer pools: whole servers; upstream limits (accelstack/resolve/upstream.py)
# ---------------------------------------------------------------------------------------


def _whole(count: int, size: int, least: int = 0) -> str:
    """The whole-server counts nearest `count`, at least `least`: '0 or 4', '4 or 8'."""
    lower = count - count % size
    return " or ".join(str(n) for n in (lower, lower + size) if n >= least)


@stack_rule(
    "ultraserver-spares-whole",
    "an UltraServer pool's spare nodes, and the capacity its single reservation holds, are "
    "whole UltraServers",
)
def _ultraserver_spares(stack: Stack) -> Iterator[Finding]:
    """8 nodes + 2 spares of trn2u.48xlarge would run 2.5 UltraServers: no Capacity Block
    sells half a server (catalog scale.yaml ultraservers), and a spare that is not a whole
    server cannot replace one a job uses whole (its UltraServerConfig takes every node of each
    server). The spec rule pool-ultraserver holds `nodes` and each listed reservation."""
    for at, p in _indexed(stack):
        if p.ultraserver is None:
            continue
        size = p.ultraserver.instances
        if p.spare_nodes % size:
            yield (
                f"{at}.spare_nodes",
                f"{p.spare_nodes} spare {p.instance_type} node(s) make the pool run "
                f"{p.running_nodes} nodes, {p.running_nodes / size:g} UltraServers of {size} "
                "(catalog scale.yaml ultraservers): a Capacity Block sells whole UltraServers "
                f"and a job takes every node of each one it uses; use "
                f"{_whole(p.spare_nodes, size)} spare nodes",
            )
        held = p.held_instances
        if held is not None and held % size:
            yield (
                f"{at}.purchase.instances",
                f"{held} {p.instance_type} instances is not a whole number of UltraServers "
                f"({size} instances each): a Capacity Block for UltraServers holds whole ones; "
                f"use {_whole(held, size, least=1)}",
            )


@stack_rule(
    "kueue-topology-dra",
    "Kueue topology-aware scheduling is not used on a stack whose pools get devices through a "
    "DRA driver (Kueue does not count DRA devices in its topology capacity)",
)
def _kueue_topology_dra(stack: Stack) -> Iterator[Finding]:
    if not stack.topology_levels:
        return
    dra = [p for p in stack.ultraserver_pools if p.ultraserver and p.ultraserver.dra]
    if not dra:
        return
    limit = KUEUE_DRA_TAS
    row = stack.catalog.charts.get(limit.project)
    pools = ", ".join(f"'{p.name}' ({p.instance_type})" for p in dra)
    yield (
        "jobs.topology_aware",
        f"Kueue {row.version if row else ''} lists {limit.what} ({limit.source}); pool(s) "
        f"{pools} get their devices through the Neuron DRA driver: set "
        "jobs.topology_aware: false (UltraServer jobs are placed by the UltraServer label "
        "instead), or move those pools to another stack",
    )


#: This module's rules, in report order (the kind's RuleSet lists this tuple).
@stack_rule(
    "pool-pod-room",
    "a node of the pool's type has room for a training pod beside the kubelet and DaemonSet "
    "reserve (catalog launch.yaml pods)",
)
def _pod_room(stack: Stack) -> Iterator[Finding]:
    for at, p in _indexed(stack):
        if p.pod_room is None:
            inst = p.instance
            yield (
                f"{at}.instance_type",
                f"{inst.name}: {inst.vcpus} vCPUs and {inst.memory_gib:g} GiB leave no room for "
                "a training pod after the kubelet and DaemonSet reserve (catalog launch.yaml "
                "pods); use a larger instance type",
            )


@stack_rule(
    "addon-versions-pinned",
    "every EKS add-on the stack installs has the catalog's pinned version for its Kubernetes "
    "version (instances.yaml eks_addon_versions): none floats to EKS's newest at deploy time",
)
def _addon_versions_pinned(stack: Stack) -> Iterator[Finding]:
    pins = stack.addon_versions
    missing = [a for a in stack.addon_names if not pins.get(a)]
    if missing:
        k8s = stack.kubernetes_version
        yield (
            "cluster.kubernetes_version",
            f"{shown(k8s)}: the catalog pins no version of the add-on(s) {', '.join(missing)} "
            f"for Kubernetes {k8s} (instances.yaml defaults.eks_addon_versions); pin them from "
            f"EKS: `accelstack --catalog DIR addons refresh --kubernetes-version {k8s}` (writes "
            "the overlay's instances.yaml), or choose a version the catalog pins: "
            f"{', '.join(sorted(stack.defaults.eks_addon_versions))}",
        )


MODULE_RULES: tuple[StackRule, ...] = (
    _subnet_ip_budget,
    _pool_addresses,
    _existing_subnets,
    _generated_names,
    _kubernetes_names,
    _neuron_allocation,
    _bucket_names,
    _tag_count,
    _workload_fit,
    _moe_shape,
    _workload_size,
    _standalone_document_size,
    _pod_room,
    _ultraserver_spares,
    _kueue_topology_dra,
    _addon_versions_pinned,
)

#: The rules on the resolved stack, in report order (docs/spec.md lists them)
STACK_RULES: rulebook.RuleSet[StackRule] = rulebook.RuleSet("stack", MODULE_RULES)
