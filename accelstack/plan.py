"""Offline plan: run the Pulumi program (`components.program.build`) under Pulumi's mock
runtime and record every resource it registers, with its inputs.

No network, no AWS credentials: every provider lookup (invoke) is answered here with realistic
values, and an unknown lookup fails the plan. Pulumi is imported lazily inside functions so
that `accelstack` imports without it.

Shape (the cost guard and policies read it; see docs/plan.md):
`Plan.resources`: sorted `PlannedResource(type, name, parent, inputs)`; inputs are camelCase as
the provider receives them, whole numbers as ints. `Plan.outputs`: the program's exports.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import json
import logging
import os
import sys
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from accelstack.errors import AccelstackError, VerdictError

if TYPE_CHECKING:
    from accelstack.resolve import Stack

PROJECT = "accelstack"
SECRET_MARK = "[secret]"
#: The Pulumi secret sentinel key in deserialized values.
_SECRET_SIG = "4dabf18193072939515e22adb298388d"
_LOCK = threading.Lock()  # the Pulumi runtime settings are process-global


class PlanError(AccelstackError):
    """The program could not be planned (a lookup with no answer, duplicate names, a raise)."""

    exit_code = VerdictError.exit_code


@dataclass(frozen=True)
class PlannedResource:
    type: str
    name: str
    parent: str | None  # the parent's logical name; None for top-level resources
    inputs: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "name": self.name, "parent": self.parent, "inputs": self.inputs}


@dataclass(frozen=True)
class Plan:
    stack: str
    region: str
    resources: list[PlannedResource]
    outputs: dict[str, Any] = field(default_factory=dict)
    #: resource options that matter for review, keyed by (type, name): protect, retainOnDelete
    options: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    #: every provider lookup the program made: {"token": ..., "args": {...}}, sorted, unique
    lookups: list[dict[str, Any]] = field(default_factory=list)

    def option(self, type_: str, name: str, key: str) -> Any:
        return self.options.get((type_, name), {}).get(key)

    def of_type(self, type_: str) -> list[PlannedResource]:
        return [r for r in self.resources if r.type == type_]

    def get(self, type_: str, name: str) -> PlannedResource:
        for r in self.resources:
            if r.type == type_ and r.name == name:
                return r
        raise KeyError((type_, name))

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.resources:
            out[r.type] = out.get(r.type, 0) + 1
        return dict(sorted(out.items()))

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": 1,
            "stack": self.stack,
            "region": self.region,
            "summary": {"resources": len(self.resources), "byType": self.counts()},
            "resources": [
                {
                    **r.to_dict(),
                    **(
                        {"options": self.options[(r.type, r.name)]}
                        if (r.type, r.name) in self.options
                        else {}
                    ),
                }
                for r in self.resources
            ],
            "lookups": self.lookups,
            "outputs": self.outputs,
        }

    def to_json(self) -> str:
        """Stable document: sorted keys, resources sorted by (type, name), 2-space indent."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def to_text(self) -> str:
        return render_tree(self)


# ---------------------------------------------------------------------------------------
# Normalisation and presentation (pure)
# ---------------------------------------------------------------------------------------


def normalise(value: Any) -> Any:
    """Whole floats back to ints, secrets marked, unknowns named, keys sorted."""
    if isinstance(value, bool) or value is None or isinstance(value, str | int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if isinstance(value, dict):
        if value.get(_SECRET_SIG) == "1b47061264138c4ac30d75fd1eb44270":
            return SECRET_MARK
        return {str(k): normalise(v) for k, v in sorted(value.items())}
    if isinstance(value, list | tuple):
        return [normalise(v) for v in value]
    return str(value)


#: The inputs the text tree shows per type (everything is in --format json).
KEY_INPUTS: dict[str, tuple[str, ...]] = {
    "aws:ec2/vpc:Vpc": ("cidrBlock",),
    "aws:ec2/subnet:Subnet": ("availabilityZoneId", "cidrBlock"),
    "aws:eks/cluster:Cluster": ("name", "version", "enabledClusterLogTypes"),
    "aws:eks/nodeGroup:NodeGroup": ("instanceTypes", "capacityType", "scalingConfig", "taints"),
    "aws:ec2/launchTemplate:LaunchTemplate": (
        "imageId",
        "placement",
        "capacityReservationSpecification",
        "instanceMarketOptions",
    ),
    "aws:ec2/placementGroup:PlacementGroup": ("strategy",),
    "aws:eks/addon:Addon": ("addonName",),
    "aws:s3/bucket:Bucket": ("bucket",),
    "aws:fsx/lustreFileSystem:LustreFileSystem": (
        "storageCapacity",
        "deploymentType",
        "perUnitStorageThroughput",
    ),
    "kubernetes:helm.sh/v3:Release": ("chart", "version"),
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": ("namespace", "serviceAccount"),
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": ("policyArn",),
}


def _short(value: Any, limit: int = 90) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _summary(r: PlannedResource) -> str:
    keys = KEY_INPUTS.get(r.type, ())
    parts = [f"{k}={_short(r.inputs[k])}" for k in keys if r.inputs.get(k) is not None]
    if r.type == "aws:ec2/launchTemplate:LaunchTemplate":
        nics = r.inputs.get("networkInterfaces") or []
        if nics:
            parts.append(f"efaInterfaces={len(nics)}")
        bdm = r.inputs.get("blockDeviceMappings") or []
        if bdm:
            parts.append(f"rootGiB={bdm[0].get('ebs', {}).get('volumeSize')}")
        parts.append(f"httpTokens={(r.inputs.get('metadataOptions') or {}).get('httpTokens')}")
    return "  ".join(parts)


def render_tree(plan: Plan) -> str:
    """Indented tree: type, logical name, key inputs; children under their parent."""
    children: dict[str | None, list[PlannedResource]] = {}
    names = {r.name for r in plan.resources}
    for r in plan.resources:
        parent = r.parent if r.parent in names else None
        children.setdefault(parent, []).append(r)
    lines = [f"plan for stack {plan.stack} ({plan.region}): {len(plan.resources)} resources"]

    def walk(parent: str | None, depth: int) -> None:
        for r in sorted(children.get(parent, []), key=lambda x: (x.name, x.type)):
            summary = _summary(r)
            pad = "  " * depth
            lines.append(f"{pad}{r.type}  {r.name}" + (f"  [{summary}]" if summary else ""))
            walk(r.name, depth + 1)

    walk(None, 1)
    if plan.outputs:
        lines.append("outputs:")
        for k, v in sorted(plan.outputs.items()):
            lines.append(f"  {k}: {_short(v, 120)}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------
# Realistic answers
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
# The cost-guard hook
# ---------------------------------------------------------------------------------------


def load_guard() -> Any | None:
    """The cost module's `accelstack.guard`, or None while it is not installed. Only a missing
    module is tolerated; the guard's own import errors propagate."""
    guard = sys.modules.get("accelstack.guard")
    if guard is None:
        if importlib.util.find_spec("accelstack.guard") is None:
            return None
        guard = importlib.import_module("accelstack.guard")
    return guard


def enforce_guard(stack: Stack, resources: list[PlannedResource] | None = None) -> None:
    """Call `accelstack.guard.enforce` when the cost module is installed; it raises
    VerdictError on an over-budget stack. Without `resources` it prices the spec (before any
    resource exists); with them it prices the plan."""
    guard = load_guard()
    if guard is None:
        return
    if resources is None:
        guard.enforce(stack)
        return
    if "resources" in inspect.signature(guard.enforce).parameters:
        guard.enforce(stack, resources=resources)


# ---------------------------------------------------------------------------------------
# Running the program under mocks
# ---------------------------------------------------------------------------------------


def _quiet_logger() -> logging.Logger:
    """Pulumi's engine log (program errors with tracebacks) is summarised in PlanError."""
    logger = logging.getLogger("accelstack.plan.engine")
    logger.propagate = False
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
    return logger


def _drain(loop: Any) -> None:
    """Cancel whatever a failed program left pending, so the next plan starts clean."""
    import asyncio

    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    # Worker threads made event loops of their own (Pulumi's mock monitor does); stop them now
    # so those loops are collected while the interpreter is still whole.
    loop.run_until_complete(loop.shutdown_default_executor())


def run_plan(
    stack: Stack, build: Callable[[Stack], dict[str, Any]] | None = None, guard: bool = True
) -> Plan:
    """Plan `stack` offline. `build` defaults to `components.program.build` (tests pass their
    own to exercise failures). Raises PlanError with one line on any failure."""
    with _LOCK:
        return _run_plan(stack, build, guard)


def _run_plan(stack: Stack, build: Callable[[Stack], dict[str, Any]] | None, guard: bool) -> Plan:
    import asyncio

    import pulumi
    from pulumi.runtime import mocks, settings
    from pulumi.runtime.stack import run_pulumi_func
    from pulumi.runtime.sync_await import _sync_await

    answers = Answers(stack)
    records: dict[tuple[str, str], PlannedResource] = {}
    duplicates: list[str] = []
    options: dict[tuple[str, str], dict[str, Any]] = {}
    urn_names: dict[str, str] = {}
    record_lock = threading.Lock()

    class _Mocks(pulumi.runtime.Mocks):
        def call(self, args: mocks.MockCallArgs) -> Any:
            return answers.call(args.token, dict(args.args))

        def new_resource(self, args: mocks.MockResourceArgs) -> tuple[str, dict[str, Any]]:
            return answers.new_resource(args.typ, args.name, dict(args.inputs))

    class _Monitor(mocks.MockMonitor):
        def RegisterResource(self, request: Any) -> Any:
            # Called from Pulumi's worker threads: one registration at a time.
            if request.type != "pulumi:pulumi:Stack":
                self._record(request)
            resp = super().RegisterResource(request)  # type: ignore[no-untyped-call]
            if request.type != "pulumi:pulumi:Stack":
                with record_lock:
                    urn_names[resp.urn] = request.name
            _note_thread_loop()
            return resp

        def Invoke(self, request: Any) -> Any:
            try:
                return super().Invoke(request)  # type: ignore[no-untyped-call]
            finally:
                _note_thread_loop()

        def _record(self, request: Any) -> None:
            key = (request.type, request.name)
            inputs = normalise(_deserialize(request.object))
            with record_lock:
                if key in records:
                    duplicates.append(f"{request.type} '{request.name}'")
                parent = urn_names.get(request.parent) if request.parent else None
                records[key] = PlannedResource(request.type, request.name, parent, inputs)
                opts = {
                    k: True
                    for k, v in (
                        ("protect", request.protect),
                        ("retainOnDelete", request.retainOnDelete),
                    )
                    if v
                }
                if opts:
                    options[key] = opts

        def ReadResource(self, request: Any) -> Any:
            resp = super().ReadResource(request)  # type: ignore[no-untyped-call]
            with record_lock:
                urn_names[resp.urn] = request.name
            _note_thread_loop()
            return resp

    thread_loops: set[Any] = set()

    def _note_thread_loop() -> None:
        """Pulumi's mock monitor gives each worker thread an event loop; remember them so they
        are closed with the plan (no ResourceWarning, no leak across plans)."""
        try:
            thread_loop = asyncio.get_event_loop_policy().get_event_loop()
        except RuntimeError:
            return
        if thread_loop is not loop:
            with record_lock:
                thread_loops.add(thread_loop)

    def _deserialize(obj: Any) -> dict[str, Any]:
        from pulumi.runtime import rpc

        return dict(rpc.deserialize_properties(obj, keep_unknowns=True))

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    settings.ROOT.set(None)  # a fresh root stack resource per plan
    the_mocks = _Mocks()
    monitor = _Monitor(the_mocks)
    pulumi.runtime.set_mocks(
        the_mocks,
        project=PROJECT,
        stack=stack.name,
        preview=False,
        monitor=monitor,
        logger=_quiet_logger(),
    )
    settings.SETTINGS.rpc_manager.clear()
    settings.SETTINGS.outputs.clear()
    if build is None:
        with warnings.catch_warnings():  # pulumi_aws deprecates its S3 *V2 classes on import
            warnings.simplefilter("ignore", DeprecationWarning)
            # by name: the program lives outside the accelstack package (and its type check)
            program_build = importlib.import_module("components.program").build

        build = program_build
    resolved: dict[str, Any] = {}
    exported: dict[str, Any] = {}

    def keep(key: str) -> Callable[[Any], None]:
        def store(value: Any) -> None:
            resolved[key] = value

        return store

    def program() -> None:
        if guard:
            enforce_guard(stack)
        assert build is not None
        for key, value in build(stack).items():
            out = pulumi.Output.from_input(value)
            out.apply(keep(key))
            exported[key] = out

    try:
        _sync_await(run_pulumi_func(program))
        secrets = {k: _sync_await(o.is_secret()) for k, o in exported.items()}
    except AccelstackError:
        raise
    except Exception as exc:  # program raised, or a lookup had no answer
        if os.environ.get("ACCELSTACK_PLAN_DEBUG"):
            raise
        if answers.errors:
            raise PlanError(f"{stack.name}: {answers.errors[0]}") from None
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise PlanError(
            f"{stack.name}: the program failed: {type(exc).__name__}: {first}"
        ) from None
    finally:
        _drain(loop)
        for thread_loop in thread_loops:
            if not thread_loop.is_running():
                thread_loop.close()
        settings.SETTINGS.rpc_manager.clear()
        settings.SETTINGS.outputs.clear()
        settings.ROOT.set(None)
        asyncio.set_event_loop(None)
        loop.close()
    if answers.errors:
        raise PlanError(f"{stack.name}: {answers.errors[0]}")
    if duplicates:
        raise PlanError(
            f"{stack.name}: two resources share the name {duplicates[0]}; "
            "logical names must be unique per type"
        )
    outputs = {
        k: SECRET_MARK if secrets.get(k) else normalise(v) for k, v in sorted(resolved.items())
    }
    resources = sorted(records.values(), key=lambda r: (r.type, r.name))
    if guard:  # the same verdict, priced from what the program actually declared
        enforce_guard(stack, resources)
    lookups = [json.loads(x) for x in sorted(answers.lookups)]
    return Plan(
        stack=stack.name,
        region=stack.region,
        resources=resources,
        outputs=outputs,
        options=dict(sorted(options.items())),
        lookups=lookups,
    )
