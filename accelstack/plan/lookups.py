"""Offline answers for the plan: provider lookups (invokes) and realistic resource outputs
for one stack. An unknown lookup fails the plan (mocks must never accept anything silently).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from accelstack.plan.document import _short, normalise

if TYPE_CHECKING:
    from accelstack.resolve import Stack

# ---------------------------------------------------------------------------------------

ACCOUNT_ID = "123456789012"


def _digest(*parts: str, n: int = 17) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:n]


def fake_ami(parameter: str) -> str:
    """A stable, realistic AMI id per SSM parameter name."""
    return f"ami-{_digest('ami', parameter)}"


def _zones(stack: Stack) -> dict[str, str]:
    return dict(stack.catalog.region(stack.region).zones)


class Answers:
    """Invoke answers and resource outputs for one stack. Unknown tokens raise."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.region = stack.region
        self.errors: list[str] = []
        self.lookups: set[str] = set()

    # -- invokes ------------------------------------------------------------------------
    def call(self, token: str, args: dict[str, Any]) -> dict[str, Any]:
        entry = json.dumps({"token": token, "args": normalise(args)}, sort_keys=True)
        self.lookups.add(entry)
        handler = self._calls().get(token)
        if handler is None:
            msg = f"no offline answer for lookup '{token}' (args: {_short(normalise(args), 120)})"
            self.errors.append(msg)
            raise LookupError(msg)
        return handler(args)

    def _calls(self) -> dict[str, Callable[[dict[str, Any]], dict[str, Any]]]:
        return {
            "aws:ssm/getParameter:getParameter": self._ssm,
            "aws:index/getCallerIdentity:getCallerIdentity": lambda a: {
                "accountId": ACCOUNT_ID,
                "arn": f"arn:aws:iam::{ACCOUNT_ID}:user/accelstack-plan",
                "userId": "AIDAACCELSTACKPLAN",
                "id": ACCOUNT_ID,
            },
            "aws:index/getPartition:getPartition": lambda a: {
                "partition": "aws",
                "dnsSuffix": "amazonaws.com",
                "reverseDnsPrefix": "com.amazonaws",
                "id": "aws",
            },
            "aws:index/getRegion:getRegion": lambda a: {
                "name": self.region,
                "region": self.region,
                "id": self.region,
                "endpoint": f"ec2.{self.region}.amazonaws.com",
                "description": self.region,
            },
            "aws:index/getAvailabilityZones:getAvailabilityZones": lambda a: {
                "names": sorted(_zones(self.stack)),
                "zoneIds": [_zones(self.stack)[z] for z in sorted(_zones(self.stack))],
                "id": self.region,
            },
            "aws:ec2/getSubnet:getSubnet": self._subnet,
            "aws:ec2/getVpc:getVpc": lambda a: {
                "id": a.get("id"),
                "cidrBlock": "10.0.0.0/16",
                "arn": f"arn:aws:ec2:{self.region}:{ACCOUNT_ID}:vpc/{a.get('id')}",
            },
        }

    def _ssm(self, args: dict[str, Any]) -> dict[str, Any]:
        name = str(args.get("name"))
        if not name.endswith("/image_id"):
            msg = f"no offline answer for SSM parameter '{name}'"
            self.errors.append(msg)
            raise LookupError(msg)
        ami = fake_ami(name)
        return {
            "name": name,
            "value": ami,
            "insecureValue": ami,
            "type": "String",
            "version": 1,
            "arn": f"arn:aws:ssm:{self.region}::parameter{name}",
            "id": name,
            "withDecryption": True,
        }

    def _subnet(self, args: dict[str, Any]) -> dict[str, Any]:
        sid = str(args.get("id"))
        net = self.stack.spec.network
        zone_ids = list(
            dict.fromkeys(
                [p.zone_id for p in self.stack.pools] + sorted(_zones(self.stack).values())
            )
        )
        ids = list(net.private_subnet_ids) + list(net.public_subnet_ids)
        zone = zone_ids[ids.index(sid) % len(zone_ids)] if sid in ids else zone_ids[0]
        return {
            "id": sid,
            "availabilityZoneId": zone,
            "vpcId": net.vpc_id or "vpc-0",
            "cidrBlock": "10.0.0.0/19",
        }

    # -- resources ----------------------------------------------------------------------
    def new_resource(
        self, typ: str, name: str, inputs: dict[str, Any]
    ) -> tuple[str, dict[str, Any]]:
        region, acct = self.region, ACCOUNT_ID
        rid = _digest(typ, name)
        out: dict[str, Any] = dict(inputs)
        short = typ.split(":")[-1]
        arn = f"arn:aws:{typ.split(':')[1].split('/')[0]}:{region}:{acct}:{short.lower()}/{name}"
        if typ == "aws:eks/cluster:Cluster":
            cname = inputs.get("name", name)
            rid = cname
            out.update(
                {
                    "arn": f"arn:aws:eks:{region}:{acct}:cluster/{cname}",
                    "endpoint": f"https://{_digest('eks', cname, n=32).upper()}.gr7.{region}.eks.amazonaws.com",
                    "certificateAuthority": {
                        "data": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1PQ0sKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="
                    },
                    "kubernetesNetworkConfig": {
                        "serviceIpv4Cidr": "172.20.0.0/16",
                        "ipFamily": "ipv4",
                    },
                    "vpcConfig": {
                        **inputs.get("vpcConfig", {}),
                        "clusterSecurityGroupId": f"sg-{_digest('cluster-sg', cname)}",
                        "vpcId": f"vpc-{_digest('vpc', self.stack.name)}",
                    },
                    "status": "ACTIVE",
                }
            )
        elif typ == "aws:s3/bucket:Bucket":
            b = inputs.get("bucket") or f"{name}-{rid[:7]}"
            rid = b
            out.update(
                {
                    "bucket": b,
                    "arn": f"arn:aws:s3:::{b}",
                    "bucketDomainName": f"{b}.s3.amazonaws.com",
                    "region": region,
                }
            )
        elif typ == "aws:iam/role:Role":
            out.update({"arn": f"arn:aws:iam::{acct}:role/{name}", "name": name})
            rid = name
        elif typ == "aws:kms/key:Key":
            rid = f"{_digest('kms', name, n=8)}-{_digest('k1', name, n=4)}-{_digest('k2', name, n=4)}-{_digest('k3', name, n=4)}-{_digest('k4', name, n=12)}"
            out.update({"arn": f"arn:aws:kms:{region}:{acct}:key/{rid}", "keyId": rid})
        elif typ == "aws:eks/nodeGroup:NodeGroup":
            out.update(
                {
                    "nodeGroupName": inputs.get("nodeGroupName", name),
                    "arn": f"arn:aws:eks:{region}:{acct}:nodegroup/{name}",
                }
            )
        elif typ == "aws:ec2/launchTemplate:LaunchTemplate":
            rid = f"lt-{rid}"
            out.update({"latestVersion": 1, "arn": arn})
        elif typ == "aws:ec2/placementGroup:PlacementGroup":
            out.update({"name": name, "arn": arn})
            rid = name
        elif typ == "aws:fsx/lustreFileSystem:LustreFileSystem":
            rid = f"fs-{rid}"
            out.update(
                {
                    "dnsName": f"{rid}.fsx.{region}.amazonaws.com",
                    "mountName": _digest("mount", name, n=8),
                    "arn": arn,
                }
            )
        elif typ == "aws:ec2/instance:Instance":
            rid = f"i-{rid}"
            h = int(_digest("ip", name, n=6), 16)
            out.update(
                {
                    "arn": arn,
                    "privateIp": f"10.42.{(h >> 8) % 32}.{h % 250 + 4}",
                    "privateDns": f"ip-{name}.{region}.compute.internal",
                }
            )
        elif typ.startswith("aws:ec2/") or typ.startswith("aws:vpc/"):
            prefix = {
                "vpc": "vpc",
                "subnet": "subnet",
                "securityGroup": "sg",
                "internetGateway": "igw",
                "natGateway": "nat",
                "eip": "eipalloc",
                "routeTable": "rtb",
            }.get(typ.split("/")[1].split(":")[0], "r")
            rid = f"{prefix}-{rid}"
            out.update({"arn": arn})
        elif typ.startswith("pulumi:providers:"):
            rid = _digest("provider", name, n=36)
        else:
            out.setdefault("arn", arn)
        out.setdefault("id", rid)
        return rid, out


# ---------------------------------------------------------------------------------------
