"""Private-subnet IP budget: how many VPC addresses a pool's nodes hold

Per node: the primary ENI's addresses, plus (EKS) the VPC CNI's warm ENI, plus one address per
extra EFA interface of style 'efa' (EFA with ENA); 'efa-only' interfaces take none. Facts come
from the catalog (instances.*.ipv4_per_interface, defaults.vpc_cni_warm_enis,
defaults.subnet_reserved_ips), where their sources are cited.
"""

from __future__ import annotations

import ipaddress

from accelstack.catalog import Catalog, InstanceType


def node_ips(
    catalog: Catalog, inst: InstanceType, efa_interfaces: int, style: str, kubernetes: bool
) -> int:
    """Addresses one node takes from its subnet."""
    enis = 1 + (catalog.defaults.vpc_cni_warm_enis if kubernetes else 0)
    per_eni = inst.ipv4_per_interface if kubernetes else 1
    extra_efa = max(efa_interfaces - 1, 0) if style == "efa" else 0
    return enis * per_eni + extra_efa


def usable_ips(catalog: Catalog, cidr: str) -> int:
    """Addresses a subnet offers to instances (AWS keeps 5 of every subnet)."""
    return ipaddress.IPv4Network(cidr).num_addresses - catalog.defaults.subnet_reserved_ips


def private_subnet_cidr(vpc_cidr: str) -> str:
    """The private subnet size the created network cuts per zone: an eighth of the VPC
    (components/network.py `subnet_cidrs`)."""
    return str(next(ipaddress.IPv4Network(vpc_cidr).subnets(prefixlen_diff=3)))
