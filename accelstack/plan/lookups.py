"""Offline answers for the plan: provider lookups (invokes) and realistic resource outputs
for one stack. An unknown lookup fails the plan (mocks must never accept anything silently).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from accelstack import tokens
from accelstack.plan.document import compact_json, normalise

if TYPE_CHECKING:
    from accelstack.resolve import Stack

# ---------------------------------------------------------------------------------------

ACCOUNT_ID = "123456789012"


def _digest(*parts: str, n: int = 17) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:n]


def fake_ami(parameter: str) -> str:
    """A stable, realistic AMI id per SSM parameter name."""
    return f"ami-{_digest('ami', parameter)}"


def _eks_ami_version(parameter: str) -> str | None:
    """The Kubernetes version in an EKS-optimized AMI parameter name, else None."""
    prefix = "/aws/service/eks/optimized-ami/"
    if not parameter.startswith(prefix):
        return None
    return parameter[len(prefix) :].split("/", 1)[0]


#: Public SSM parameters that hold an AMI id: the EKS-optimized and Neuron DLAMI ones end in
#: `/image_id`, the GPU DLAMI ones in `/ami-id`
#: (/aws/service/deeplearning/ami/x86_64/<name>/latest/ami-id).
AMI_PARAMETER_SUFFIXES = ("/image_id", "/ami-id")
#: `Stack.amis_source` of a stack whose pins the offline plan simulated.
SIMULATED_PINS = "simulated by the offline plan (accelstack:amis)"


def with_offline_ami_pins(stack: Stack) -> Stack:
    """The stack as `pulumi up` sees it after `accelstack amis pin`: every pool's AMI parameter
    pinned (to the same stable fake id the SSM lookup would answer). A stack whose pins were
    read from a stack config (or deliberately left empty) is returned unchanged."""
    if stack.amis_source is not None:
        return stack
    pins = {p: fake_ami(p) for p in stack.ami_parameters}
    return stack.with_ami_pins(pins, allow_unpinned=False, source=SIMULATED_PINS)


def _zones(stack: Stack) -> dict[str, str]:
    return dict(stack.catalog.region(stack.region).zones)


class Answers:
    """Invoke answers and resource outputs for one stack. Unknown tokens raise.

    A refused lookup is recorded in `errors` (in the order they happened). It is also in
    `input_errors` when the value that made it impossible is one the spec itself wrote (the
    plan then fails as bad input, exit 2); otherwise the program asked for something the
    offline answers do not model (a bug, exit 1)."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.region = stack.region
        self.errors: list[str] = []
        self.input_errors: list[str] = []
        self.lookups: set[str] = set()

    def refuse(self, msg: str, *, input_caused: bool = False) -> LookupError:
        self.errors.append(msg)
        if input_caused:
            self.input_errors.append(msg)
        return LookupError(msg)

    # -- invokes ------------------------------------------------------------------------
    def call(self, token: str, args: dict[str, Any]) -> dict[str, Any]:
        entry = json.dumps({"token": token, "args": normalise(args)}, sort_keys=True)
        self.lookups.add(entry)
        handler = self._calls().get(token)
        if handler is None:
            msg = f"no offline answer for lookup '{token}' (args: {compact_json(normalise(args), 120)})"
            raise self.refuse(msg)
        return handler(args)

    def _calls(self) -> dict[str, Callable[[dict[str, Any]], dict[str, Any]]]:
        return {
            tokens.SSM_PARAMETER_LOOKUP: self._ssm,
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
        catalog = self.stack.catalog
        known = {k.standalone_ami_parameter for k in catalog.device_kinds.values()}
        if not name.endswith(AMI_PARAMETER_SUFFIXES) and name not in known:
            raise self.refuse(f"no offline answer for SSM parameter '{name}'")
        version = _eks_ami_version(name)
        if version is not None and version not in catalog.defaults.eks_versions:
            raise self.refuse(
                f"no EKS-optimized AMI for Kubernetes {version} (SSM parameter '{name}'); "
                f"known versions: {', '.join(sorted(catalog.defaults.eks_versions))}",
                input_caused=version == self.stack.cluster.kubernetes_version,
            )
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
        net = self.stack.network
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
        return planned_outputs(typ, name, inputs, self.region, self.stack.name)


def planned_outputs(
    typ: str, name: str, inputs: dict[str, Any], region: str, stack_name: str
) -> tuple[str, dict[str, Any]]:
    """The physical id and the outputs the offline plan gives a resource: its inputs, what the
    provider computes (ids, ARNs, endpoints) and `id`. Pure: `diff` recomputes them from a plan
    document to find which input of a resource carries another resource's output."""
    res = _NewResource.of(typ, name, inputs, region, stack_name)
    build = _OUTPUT_BUILDERS.get(typ) or _builder_by_prefix(typ)
    out: dict[str, Any] = dict(inputs)
    if build is None:
        rid = res.rid
        out.setdefault("arn", res.arn)
    else:
        rid, extra = build(res)
        out.update(extra)
    out.setdefault("id", rid)
    return rid, out


# -- resource outputs -------------------------------------------------------------------


@dataclass(frozen=True)
class _NewResource:
    """What an output builder knows about the resource being created."""

    typ: str
    name: str
    inputs: dict[str, Any]
    region: str
    stack_name: str
    rid: str  # the default physical id: a digest of type and name
    arn: str  # the generic ARN: service from the type token, resource from its short name

    @classmethod
    def of(
        cls, typ: str, name: str, inputs: dict[str, Any], region: str, stack_name: str
    ) -> _NewResource:
        short = typ.split(":")[-1]
        service = typ.split(":")[1].split("/")[0]
        arn = f"arn:aws:{service}:{region}:{ACCOUNT_ID}:{short.lower()}/{name}"
        return cls(typ, name, inputs, region, stack_name, _digest(typ, name), arn)


#: A builder returns the resource's physical id and the outputs to add to its inputs.
_OutputBuilder = Callable[[_NewResource], tuple[str, dict[str, Any]]]


def _eks_cluster(r: _NewResource) -> tuple[str, dict[str, Any]]:
    region, acct = r.region, ACCOUNT_ID
    cname = r.inputs.get("name", r.name)
    return cname, {
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
            **r.inputs.get("vpcConfig", {}),
            "clusterSecurityGroupId": f"sg-{_digest('cluster-sg', cname)}",
            "vpcId": f"vpc-{_digest('vpc', r.stack_name)}",
        },
        "status": "ACTIVE",
    }


def _s3_bucket(r: _NewResource) -> tuple[str, dict[str, Any]]:
    b = r.inputs.get("bucket") or f"{r.name}-{r.rid[:7]}"
    return b, {
        "bucket": b,
        "arn": f"arn:aws:s3:::{b}",
        "bucketDomainName": f"{b}.s3.amazonaws.com",
        "region": r.region,
    }


def _iam_role(r: _NewResource) -> tuple[str, dict[str, Any]]:
    return r.name, {"arn": f"arn:aws:iam::{ACCOUNT_ID}:role/{r.name}", "name": r.name}


def _kms_key(r: _NewResource) -> tuple[str, dict[str, Any]]:
    n = r.name
    rid = f"{_digest('kms', n, n=8)}-{_digest('k1', n, n=4)}-{_digest('k2', n, n=4)}-{_digest('k3', n, n=4)}-{_digest('k4', n, n=12)}"
    return rid, {"arn": f"arn:aws:kms:{r.region}:{ACCOUNT_ID}:key/{rid}", "keyId": rid}


def _eks_node_group(r: _NewResource) -> tuple[str, dict[str, Any]]:
    """EKS names the group's Auto Scaling group eks-<node group>-<uuid>."""
    return r.rid, {
        "nodeGroupName": r.inputs.get("nodeGroupName", r.name),
        "arn": f"arn:aws:eks:{r.region}:{ACCOUNT_ID}:nodegroup/{r.name}",
        "resources": [{"autoscalingGroups": [{"name": f"eks-{r.name}-{r.rid[:8]}"}]}],
    }


def _launch_template(r: _NewResource) -> tuple[str, dict[str, Any]]:
    return f"lt-{r.rid}", {"latestVersion": 1, "arn": r.arn}


def _placement_group(r: _NewResource) -> tuple[str, dict[str, Any]]:
    return r.name, {"name": r.name, "arn": r.arn}


def _lustre_file_system(r: _NewResource) -> tuple[str, dict[str, Any]]:
    rid = f"fs-{r.rid}"
    return rid, {
        "dnsName": f"{rid}.fsx.{r.region}.amazonaws.com",
        "mountName": _digest("mount", r.name, n=8),
        "arn": r.arn,
    }


def _ec2_instance(r: _NewResource) -> tuple[str, dict[str, Any]]:
    h = int(_digest("ip", r.name, n=6), 16)
    return f"i-{r.rid}", {
        "arn": r.arn,
        "privateIp": f"10.42.{(h >> 8) % 32}.{h % 250 + 4}",
        "privateDns": f"ip-{r.name}.{r.region}.compute.internal",
    }


def _ec2_fleet(r: _NewResource) -> tuple[str, dict[str, Any]]:
    """An instant fleet answers with the instances it launched (all of them: the offline plan
    assumes the capacity is there)."""
    n = int((r.inputs.get("targetCapacitySpecification") or {}).get("totalTargetCapacity") or 0)
    ids = [f"i-{_digest('fleet', r.name, str(i))}" for i in range(n)]
    itype = None
    for cfg in r.inputs.get("launchTemplateConfigs") or []:
        for o in cfg.get("overrides") or []:
            itype = itype or o.get("instanceType")
    return f"fleet-{r.rid[:8]}-{_digest('f2', r.name, n=4)}-{_digest('f3', r.name, n=4)}", {
        "fleetInstanceSets": [
            {"instanceIds": ids, "instanceType": itype, "lifecycle": "on-demand"}
        ],
        "arn": r.arn,
    }


def _ssm_document(r: _NewResource) -> tuple[str, dict[str, Any]]:
    name = r.inputs.get("name") or f"{r.name}-{r.rid[:7]}"
    return name, {"name": name, "latestVersion": "1", "defaultVersion": "1", "arn": r.arn}


#: Id prefix per EC2/VPC resource kind (the part between `/` and `:` of the type token).
_EC2_ID_PREFIX = {
    "vpc": "vpc",
    "subnet": "subnet",
    "securityGroup": "sg",
    "internetGateway": "igw",
    "natGateway": "nat",
    "eip": "eipalloc",
    "routeTable": "rtb",
}


def planned_ec2_id(typ: str, name: str) -> str:
    """The physical id the offline plan gives an EC2/VPC resource (deploy rules match the
    ids other resources' inputs carry, e.g. a node group's subnetIds, against it)."""
    prefix = _EC2_ID_PREFIX.get(typ.split("/")[1].split(":")[0], "r")
    return f"{prefix}-{_digest(typ, name)}"


def _ec2_generic(r: _NewResource) -> tuple[str, dict[str, Any]]:
    prefix = _EC2_ID_PREFIX.get(r.typ.split("/")[1].split(":")[0], "r")
    return f"{prefix}-{r.rid}", {"arn": r.arn}


def _provider(r: _NewResource) -> tuple[str, dict[str, Any]]:
    return _digest("provider", r.name, n=36), {}


#: Output builders keyed on the exact Pulumi type token.
_OUTPUT_BUILDERS: dict[str, _OutputBuilder] = {
    "aws:eks/cluster:Cluster": _eks_cluster,
    "aws:s3/bucket:Bucket": _s3_bucket,
    "aws:iam/role:Role": _iam_role,
    "aws:kms/key:Key": _kms_key,
    "aws:eks/nodeGroup:NodeGroup": _eks_node_group,
    "aws:ec2/launchTemplate:LaunchTemplate": _launch_template,
    "aws:ec2/placementGroup:PlacementGroup": _placement_group,
    "aws:fsx/lustreFileSystem:LustreFileSystem": _lustre_file_system,
    "aws:ec2/instance:Instance": _ec2_instance,
    "aws:ec2/fleet:Fleet": _ec2_fleet,
    "aws:ssm/document:Document": _ssm_document,
}

#: Output builders for the types no exact token matches, by token prefix (first match wins).
_PREFIX_BUILDERS: tuple[tuple[str, _OutputBuilder], ...] = (
    ("aws:ec2/", _ec2_generic),
    ("aws:vpc/", _ec2_generic),
    ("pulumi:providers:", _provider),
)


def _builder_by_prefix(typ: str) -> _OutputBuilder | None:
    """The prefix builder for `typ`; None: only a generic ARN is added."""
    return next((b for p, b in _PREFIX_BUILDERS if typ.startswith(p)), None)


# ---------------------------------------------------------------------------------------
