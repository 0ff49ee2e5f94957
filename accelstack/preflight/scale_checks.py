"""What large pools need from the account, as plain data for the `limits` and `subnets` checks
(accelstack/preflight/checks.py asks AWS and judges): the EKS and VPC quotas the stack's node
groups and network use (catalog scale.yaml, with quota codes and sources), and the addresses
each zone's nodes take in an existing VPC's subnets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from accelstack.catalog.ipbudget import per_node, system_demand

if TYPE_CHECKING:
    from accelstack.catalog.scale import Limit
    from accelstack.resolve import Stack


@dataclass(frozen=True)
class LimitNeed:
    """One quota the stack needs at least `need` of, plus what the account already uses of it
    when `in_use` names a count (region-wide limits: clusters, VPCs, placement groups)."""

    name: str  # the scale.yaml limit
    limit: Limit
    need: int
    who: str  # what needs it
    in_use: str | None = None  # "clusters" | "vpcs": the account's existing ones count too

    @property
    def quota_code(self) -> str:
        assert self.limit.quota_code is not None
        return self.limit.quota_code


def limit_needs(stack: Stack) -> list[LimitNeed]:
    """The EKS node-group quotas (largest group, groups in the cluster), one more cluster and
    (created) VPC in the Region and, with a secondary CIDR, the IPv4 CIDR blocks per VPC."""
    if stack.orchestration != "eks":
        return []
    lim = stack.catalog.scale.limits
    parts = [(p.name, g) for p in stack.pools for g in p.node_groups]
    biggest = max(parts, key=lambda x: x[1].nodes, default=None)
    out: list[LimitNeed] = []
    if biggest is not None:
        name, part = biggest
        need = max(part.nodes, stack.system_nodes)
        out.append(
            LimitNeed("nodes_per_node_group", lim.nodes_per_node_group, need, f"pool {name}")
        )
    groups = ", ".join(f"{p.name}: {len(p.node_groups)}" for p in stack.pools)
    out.append(
        LimitNeed(
            "node_groups_per_cluster",
            lim.node_groups_per_cluster,
            len(parts) + 1,
            f"{groups}, system: 1",
        )
    )
    out.append(
        LimitNeed("clusters_per_region", lim.clusters_per_region, 1, "this cluster", "clusters")
    )
    if stack.network.mode == "create":
        out.append(LimitNeed("vpcs_per_region", lim.vpcs_per_region, 1, "this VPC", "vpcs"))
    blocks = stack.address_plan.secondary_subnets
    if blocks:
        out.append(
            LimitNeed(
                "ipv4_cidr_blocks_per_vpc",
                lim.ipv4_cidr_blocks_per_vpc,
                1 + len(blocks),
                f"the created VPC: {', '.join([stack.vpc_cidr, *sorted(blocks.values())])}",
            )
        )
    return out


def zone_address_needs(stack: Stack) -> dict[str, list[tuple[str, int]]]:
    """Existing VPC under EKS: zone id -> (who, addresses at the plan's VPC CNI settings: the
    defaults, or the compact ones when the spec's private_subnet_addresses asked for them) of
    the accelerator pools in the zone and the system nodes' share."""
    cat = stack.catalog
    compact = bool(stack.address_plan.cni_env)  # the plan's VPC CNI settings
    out: dict[str, list[tuple[str, int]]] = {}
    for p in stack.pools:
        each = per_node(cat, p.instance, p.efa_interfaces, p.efa_interface_style, compact)
        out.setdefault(p.zone_id, []).append((f"pool {p.name}", p.nodes * each))
    system = system_demand(
        cat, cat.instances.get(stack.system_instance_type), stack.system_nodes, tuple(out)
    )
    for zone, (default, small) in system.items():
        out[zone].append(("system nodes", small if compact else default))
    return out
