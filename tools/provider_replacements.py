"""Generate accelstack/catalog/provider_replacements.json: for every resource type the program
emits, the inputs whose change makes the pinned provider REPLACE the resource (delete and create)
rather than update it, read from the provider's own source.

    python tools/provider_replacements.py --source DIR [--write]

pulumi-aws is bridged from terraform-provider-aws: a schema attribute marked `ForceNew: true`
(SDKv2 resources) or given a `RequiresReplace()` plan modifier (Plugin Framework resources) is a
replacement in `pulumi preview`; a `CustomizeDiff` function that calls `d.ForceNew("x")` (or a
`RequiresReplaceIf` modifier, or a `ModifyPlan` that sets `RequiresReplace`) replaces only under
its condition. This tool reads every such attribute and call of the emitted types from a local
copy of the provider source, maps each Terraform name to the Pulumi input name of the pinned SDK
(accelstack/catalog/provider_inputs.json: camelCase, lists pluralised; a name the SDK lacks fails
the run), restates each conditional replacement as a named rule (CONDITIONS below; one the table
does not know fails the run, so a new rule is read by a person before it is used), and writes the
table with the source of every row (file:line). pulumi-kubernetes' own replacement fields
(`forceNew` in provider/pkg/provider/diff.go) are read from a checkout of pulumi-kubernetes.

The source DIR is an extract of lonegunmanb/terraform-provider-aws-index at the tag of the
upstream release (the repository holds, per terraform-provider-aws release tag, every function of
the provider's `internal/` tree as its own file, with the package's imports):

    git -C <index checkout> archive v6.58.0 index/terraform-provider-aws-index.json index/internal \\
        | tar -x -C DIR

and, for the Kubernetes rows, `--kubernetes GITDIR` a git checkout of pulumi/pulumi-kubernetes
(its commit is recorded). Nothing read is committed: the table holds names, lines and sources only.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools import gosource as go  # noqa: E402
from tools.provider_snapshot import requirement  # noqa: E402

OUT = ROOT / "accelstack" / "catalog" / "provider_replacements.json"
INDEX_REPO = "lonegunmanb/terraform-provider-aws-index"
UPSTREAM = "hashicorp/terraform-provider-aws"
PROVIDER_PKG = "github.com/hashicorp/terraform-provider-aws/"

#: Every pulumi-aws type the program emits (tests/golden/plan/*.json, the presets' plans and the
#: components' classes: tests/plan/test_updates_provider.py checks this list) -> its Terraform type.
TYPES: dict[str, str] = {
    "aws:autoscaling/tag:Tag": "aws_autoscaling_group_tag",
    "aws:ec2/eip:Eip": "aws_eip",
    "aws:ec2/fleet:Fleet": "aws_ec2_fleet",
    "aws:ec2/internetGateway:InternetGateway": "aws_internet_gateway",
    "aws:ec2/launchTemplate:LaunchTemplate": "aws_launch_template",
    "aws:ec2/natGateway:NatGateway": "aws_nat_gateway",
    "aws:ec2/placementGroup:PlacementGroup": "aws_placement_group",
    "aws:ec2/route:Route": "aws_route",
    "aws:ec2/routeTable:RouteTable": "aws_route_table",
    "aws:ec2/routeTableAssociation:RouteTableAssociation": "aws_route_table_association",
    "aws:ec2/securityGroup:SecurityGroup": "aws_security_group",
    "aws:ec2/subnet:Subnet": "aws_subnet",
    "aws:ec2/vpc:Vpc": "aws_vpc",
    "aws:ec2/vpcEndpoint:VpcEndpoint": "aws_vpc_endpoint",
    "aws:ec2/vpcIpv4CidrBlockAssociation:VpcIpv4CidrBlockAssociation": (
        "aws_vpc_ipv4_cidr_block_association"
    ),
    "aws:ecr/pullThroughCacheRule:PullThroughCacheRule": "aws_ecr_pull_through_cache_rule",
    "aws:eks/accessEntry:AccessEntry": "aws_eks_access_entry",
    "aws:eks/accessPolicyAssociation:AccessPolicyAssociation": (
        "aws_eks_access_policy_association"
    ),
    "aws:eks/addon:Addon": "aws_eks_addon",
    "aws:eks/cluster:Cluster": "aws_eks_cluster",
    "aws:eks/nodeGroup:NodeGroup": "aws_eks_node_group",
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": "aws_eks_pod_identity_association",
    "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation": (
        "aws_fsx_data_repository_association"
    ),
    "aws:fsx/lustreFileSystem:LustreFileSystem": "aws_fsx_lustre_file_system",
    "aws:iam/instanceProfile:InstanceProfile": "aws_iam_instance_profile",
    "aws:iam/role:Role": "aws_iam_role",
    "aws:iam/rolePolicy:RolePolicy": "aws_iam_role_policy",
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": "aws_iam_role_policy_attachment",
    "aws:kms/key:Key": "aws_kms_key",
    "aws:s3/bucket:Bucket": "aws_s3_bucket",
    "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration": (
        "aws_s3_bucket_lifecycle_configuration"
    ),
    "aws:s3/bucketOwnershipControls:BucketOwnershipControls": "aws_s3_bucket_ownership_controls",
    "aws:s3/bucketPolicy:BucketPolicy": "aws_s3_bucket_policy",
    "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock": "aws_s3_bucket_public_access_block",
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration": (
        "aws_s3_bucket_server_side_encryption_configuration"
    ),
    "aws:s3/bucketVersioning:BucketVersioning": "aws_s3_bucket_versioning",
    "aws:ssm/association:Association": "aws_ssm_association",
    "aws:ssm/document:Document": "aws_ssm_document",
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": "aws_vpc_security_group_egress_rule",
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": (
        "aws_vpc_security_group_ingress_rule"
    ),
}
#: Plugin Framework resources whose Schema method lives on a shared struct the index's registry
#: row does not name (both rule resources embed securityGroupRuleResource).
FRAMEWORK_STRUCTS = {
    "aws_vpc_security_group_egress_rule": "securityGroupRuleResource",
    "aws_vpc_security_group_ingress_rule": "securityGroupRuleResource",
}
#: The conditional replacements the provider's CustomizeDiff / ModifyPlan code makes, restated:
#: (Terraform type, attribute the code forces new) -> (rule in accelstack/plan/replacements.py,
#: the Terraform attribute whose change it watches, what it says). A conditional replacement not
#: listed here fails the run: read the cited code, add the row and its rule.
CONDITIONS: dict[tuple[str, str], tuple[str, str, str]] = {
    ("aws_fsx_lustre_file_system", "storage_capacity"): (
        "decrease_or_scratch1",
        "storage_capacity",
        "replaced when the storage capacity shrinks, or on any change of a SCRATCH_1 file system",
    ),
    ("aws_fsx_lustre_file_system", "file_system_type_version"): (
        "version_downgrade",
        "file_system_type_version",
        "replaced when the Lustre version goes down (an upgrade is in place)",
    ),
    ("aws_fsx_lustre_file_system", "metadata_configuration.0.iops"): (
        "metadata_iops_decrease",
        "metadata_configuration",
        "replaced when USER_PROVISIONED metadata IOPS go down",
    ),
    ("aws_eks_cluster", "encryption_config"): (
        "removed",
        "encryption_config",
        "replaced when secrets encryption is removed (it cannot be disabled in place)",
    ),
    ("aws_eks_cluster", "vpc_config.0.control_plane_egress_mode"): (
        "egress_customer_to_aws",
        "vpc_config",
        "replaced when the control-plane egress mode goes from CUSTOMER_ROUTED to AWS_MANAGED",
    ),
    ("aws_eks_cluster", "compute_config.0.node_role_arn"): (
        "auto_mode_role_changed",
        "compute_config",
        "replaced when EKS Auto Mode's node role changes from one role to another",
    ),
    ("aws_nat_gateway", "secondary_private_ip_address_count"): (
        "private_nat_count_changed",
        "secondary_private_ip_address_count",
        "replaced when a private NAT gateway's configured secondary address count changes",
    ),
    ("aws_nat_gateway", "regional_nat_gateway_auto_mode"): (
        "set_or_unset",
        "availability_zone_address",
        "replaced when a regional NAT gateway's zone addresses go from none to some or back",
    ),
    ("aws_subnet", "ipv6_cidr_block"): (
        "ipv6_reassigned",
        "ipv6_cidr_block",
        "replaced when the IPv6 block of a subnet created with assign_ipv6_address_on_creation "
        "changes",
    ),
    ("aws_vpc", "instance_tenancy"): (
        "tenancy_changed",
        "instance_tenancy",
        "replaced on a tenancy change other than dedicated -> default",
    ),
    ("aws_vpc", "cidr_block"): (
        "explicit_cidr_changed",
        "cidr_block",
        "replaced when an explicit (not IPAM-derived) IPv4 CIDR changes",
    ),
    ("aws_vpc_ipv4_cidr_block_association", "cidr_block"): (
        "explicit_cidr_changed",
        "cidr_block",
        "replaced when an explicit (not IPAM-derived) IPv4 CIDR changes",
    ),
    ("aws_s3_bucket_server_side_encryption_configuration", "expected_bucket_owner"): (
        "expected_owner_changed",
        "expected_bucket_owner",
        "replaced when the expected bucket owner changes (unset -> this account is in place)",
    ),
    ("aws_s3_bucket_versioning", "expected_bucket_owner"): (
        "expected_owner_changed",
        "expected_bucket_owner",
        "replaced when the expected bucket owner changes (unset -> this account is in place)",
    ),
    ("aws_vpc_endpoint", "private_dns_enabled"): (
        "not_interface_endpoint",
        "private_dns_enabled",
        "replaced when private DNS changes on a Gateway (not Interface) endpoint",
    ),
    ("aws_vpc_security_group_egress_rule", "(plan)"): (
        "rule_source_changed",
        "(plan)",
        "replaced when the rule's source type changes (CIDR, IPv6 CIDR, prefix list, group)",
    ),
    ("aws_vpc_security_group_ingress_rule", "(plan)"): (
        "rule_source_changed",
        "(plan)",
        "replaced when the rule's source type changes (CIDR, IPv6 CIDR, prefix list, group)",
    ),
}


@dataclass
class Attr:
    tf: str
    line: int
    where: str  # index path of the file the attribute is declared in
    force_new: bool = False
    is_list: bool = False
    max_one: bool = False
    input: bool = True  # Optional or Required (not computed only)
    children: list[Attr] = field(default_factory=list)
    conditional: list[tuple[str, int]] = field(default_factory=list)  # (where, line)


class SourceError(Exception):
    pass


# ------------------------------------------------------------------------------------------
# The source: an extract of the index at one release tag
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    root: Path  # DIR with index/terraform-provider-aws-index.json and index/internal/...

    def file(self, package: str, name: str) -> go.GoFile | None:
        """`func.<name>.goindex` (or a method `method.<recv>.<name>`) of an import path."""
        if not package.startswith(PROVIDER_PKG):
            return None
        path = self.root / "index" / package.removeprefix(PROVIDER_PKG) / f"{name}.goindex"
        return go.read(path) if path.exists() else None

    def rel(self, f: go.GoFile) -> str:
        return str(f.path.relative_to(self.root))

    def registry(self) -> dict[str, dict[str, Any]]:
        """Terraform type -> {package, kind, create, struct} from the index's master file."""
        data = json.loads((self.root / "index/terraform-provider-aws-index.json").read_text())
        out: dict[str, dict[str, Any]] = {}
        for s in data["services"]:
            for name, row in (s.get("resource_crud_methods") or {}).items():
                out.setdefault(name, {}).update(create=row.get("create_method"))
            for kind in ("aws_sdk_resources", "aws_framework_resources"):
                for name, row in (s.get(kind) or {}).items():
                    out.setdefault(name, {}).update(
                        package=s["package_path"],
                        kind=row["sdk_type"],
                        struct=row.get("struct_type"),
                    )
        return out


def resolve(name: str, f: go.GoFile, src: Source) -> go.GoFile | None:
    """The index file of a function or package variable a schema names: `helper` in the same
    package, `pkg.Helper` through the file's imports."""
    if "." in name:
        alias, ident = name.split(".", 1)
        package = f.imports.get(alias, "")
    else:
        package, ident = f.package, name
    return src.file(package, f"func.{ident}") or src.file(package, f"var.{ident}")


def returned(f: go.GoFile) -> list[go.Item]:
    """The items after the last top-level `return` of a function body."""
    items = f.body().items
    starts = [i for i, it in enumerate(items) if go.is_id(it, "return")]
    if not starts:
        raise SourceError(f"{f.path}: no return statement")
    return items[starts[-1] + 1 :]


def _assigned(f: go.GoFile, name: str) -> list[go.Item]:
    """The value a `var` file gives `name` (`name = value` or `var name = value`)."""
    items = f.items
    for i, it in enumerate(items[:-1]):
        if go.is_id(it, name) and go.is_op(items[i + 1], "="):
            return items[i + 2 :]
    raise SourceError(f"{f.path}: no value for {name}")


def value_of(items: list[go.Item], f: go.GoFile, src: Source, depth: int = 0) -> Value:
    """An expression reduced to what it denotes: through `&`, `sync.OnceValue(...)`, function
    literals, the provider's helper functions and package variables, to a composite literal
    (`T{...}`), a string or an unresolved call (an external package)."""
    if depth > 8 or not items:
        return Value(items, f)
    head = items[0]
    if go.is_op(head, "&"):
        return value_of(items[1:], f, src, depth + 1)
    if go.is_id(head, "func"):  # a function literal: what its body returns
        body = [g for g in items if isinstance(g, go.Group) and g.open == "{"][-1]
        starts = [i for i, it in enumerate(body.items) if go.is_id(it, "return")]
        return value_of(body.items[starts[-1] + 1 :], f, src, depth + 1)
    call = _call(items)
    if call in ("sync.OnceValue", "sync.OnceValues"):
        args = items[1]
        assert isinstance(args, go.Group)
        return value_of(args.items, f, src, depth + 1)
    name = call or (head.text if len(items) == 1 and isinstance(head, go.Tok) else None)
    target = resolve(name, f, src) if name and head.kind == "id" else None  # type: ignore[union-attr]
    if target is None:
        return Value(items, f)
    ident = (name or "").rsplit(".", 1)[-1]
    inner = returned(target) if target.path.name.startswith("func.") else _assigned(target, ident)
    return value_of(inner, target, src, depth + 1)


@dataclass(frozen=True)
class Value:
    items: list[go.Item]
    file: go.GoFile

    def literal(self) -> tuple[str, go.Group] | None:
        """(type name, `{...}` group) when the value is a composite literal."""
        for i, it in enumerate(self.items):
            if isinstance(it, go.Group) and it.open == "{":
                head = self.items[i - 1] if i else None
                return (head.text if isinstance(head, go.Tok) else ""), it
        return None


# ------------------------------------------------------------------------------------------
# Terraform names
# ------------------------------------------------------------------------------------------

_ACRONYMS = sorted(
    [
        "ARNs",
        "ARN",
        "IDs",
        "ID",
        "IPv4",
        "IPv6",
        "IPs",
        "IP",
        "KMS",
        "VPC",
        "CIDR",
        "DNS",
        "AMI",
        "EBS",
        "SSE",
        "S3",
        "IAM",
        "HTTPS",
        "HTTP",
        "URL",
        "URI",
        "JSON",
        "IOPS",
        "SNS",
        "SQS",
        "TLS",
        "SSL",
        "EKS",
        "EFS",
        "ECS",
        "ECR",
        "SSH",
        "CPU",
        "GPU",
        "AZ",
        "TTL",
        "API",
    ],
    key=len,
    reverse=True,
)


def attr_const(name: str) -> str:
    """`names.AttrSubnetIDs` -> `subnet_ids` (the names package's generated constants: each is
    its snake_case value in Go casing, acronyms upper-cased)."""
    s = name.removeprefix("names.").removeprefix("Attr")
    words, i = [], 0
    while i < len(s):
        acro = next(
            (
                a
                for a in _ACRONYMS
                if s.startswith(a, i) and not s[i + len(a) : i + len(a) + 1].islower()
            ),
            None,
        )
        if acro:
            words.append(acro.lower())
            i += len(acro)
            continue
        m = re.match(r"[A-Z0-9][a-z0-9]*", s[i:])
        if m is None:
            raise SourceError(f"cannot read attribute constant {name}")
        words.append(m.group().lower())
        i += m.end()
    return "_".join(words)


def key_name(key: list[go.Item], f: go.GoFile, src: Source) -> str:
    if len(key) == 1:
        text = go.string_value(key[0])
        if text is not None:
            return text
        if go.is_id(key[0]) and isinstance(key[0], go.Tok) and key[0].text.startswith("names.Attr"):
            return attr_const(key[0].text)
        value = value_of(key, f, src).items
        text = go.string_value(value[0]) if len(value) == 1 else None
        if text is not None:
            return text
    raise SourceError(f"{src.rel(f)}:{go.first_line(key)}: cannot read the attribute name {key}")


# ------------------------------------------------------------------------------------------
# SDKv2 schemas
# ------------------------------------------------------------------------------------------


def _map_literal(items: list[go.Item], f: go.GoFile, src: Source) -> tuple[go.GoFile, go.Group]:
    """The `map[string]*schema.Schema{...}` a `Schema:` / `SchemaFunc:` value denotes."""
    value = value_of(items, f, src)
    found = value.literal()
    if found is None or not go.is_id(value.items[0], "map"):
        raise SourceError(f"{src.rel(f)}:{go.first_line(items)}: no schema map in {items[:4]}")
    return value.file, found[1]


def _call(items: list[go.Item]) -> str | None:
    if len(items) >= 2 and go.is_id(items[0]) and isinstance(items[1], go.Group):
        tok = items[0]
        assert isinstance(tok, go.Tok)
        return tok.text if items[1].open == "(" else None
    return None


def sdk_attrs(items: list[go.Item], f: go.GoFile, src: Source) -> list[Attr]:
    where, group = _map_literal(items, f, src)
    out = []
    for element in go.split(group.items):
        key, value = go.key_value(element)
        name = key_name(key, where, src)
        target = value_of(value, where, src)
        found = target.literal()
        if found is None:
            raise SourceError(f"{src.rel(where)}:{go.first_line(key)}: cannot resolve {value[:3]}")
        out.append(_sdk_attr(name, go.first_line(key), found[1], target.file, src))
    return out


def _sdk_attr(name: str, line: int, struct: go.Group, f: go.GoFile, src: Source) -> Attr:
    fl = go.fields(struct)

    def flag(key: str) -> bool:
        return [getattr(t, "text", None) for t in fl.get(key, [])] == ["true"]

    kind = "".join(getattr(t, "text", "") for t in fl.get("Type", []))
    max_items = "".join(getattr(t, "text", "") for t in fl.get("MaxItems", []))
    attr = Attr(
        tf=name,
        line=line,
        where=src.rel(f),
        force_new=flag("ForceNew"),
        is_list=kind.endswith(("TypeList", "TypeSet")),
        max_one=max_items == "1",
        input=flag("Optional") or flag("Required"),
    )
    elem = value_of(fl.get("Elem") or [], f, src)
    found = elem.literal()
    if found is not None and found[0] == "schema.Resource":
        attr.children = _resource_attrs(found[1], elem.file, src)
    return attr


def _resource_attrs(resource: go.Group, f: go.GoFile, src: Source) -> list[Attr]:
    fl = go.fields(resource)
    value = fl.get("Schema") or fl.get("SchemaFunc")
    if value is None:
        raise SourceError(f"{src.rel(f)}:{resource.line}: a schema.Resource without Schema")
    return sdk_attrs(value, f, src)


def sdk_resource(func: str, package: str, src: Source) -> tuple[go.GoFile, go.Group]:
    f = src.file(package, f"func.{func}")
    if f is None:
        raise SourceError(f"no function {func} in {package}")
    back = returned(f)
    group = next((g for g in back if isinstance(g, go.Group) and g.open == "{"), None)
    if group is None:
        raise SourceError(f"{src.rel(f)}: {func} returns no schema.Resource literal")
    return f, group


# ------------------------------------------------------------------------------------------
# Conditional replacement: CustomizeDiff (SDKv2), RequiresReplaceIf / ModifyPlan (framework)
# ------------------------------------------------------------------------------------------

_FORCE_CALL = re.compile(r"(^|\.)(ForceNew|ForceNewIf|ForceNewIfChange)$")


def force_calls(
    items: list[go.Item], f: go.GoFile, src: Source, depth: int = 0
) -> list[tuple[str, str, int]]:
    """(attribute, file, line) of every `ForceNew("x")` / `customdiff.ForceNewIf*("x", ...)` in
    the items and in the provider functions they name (two levels down)."""
    out = []
    for name, args in go.calls(items):
        if _FORCE_CALL.search(name.text) and args.items:
            first = args.items[0]
            attr = go.string_value(first)
            if attr is None and isinstance(first, go.Tok) and first.text.startswith("names.Attr"):
                attr = attr_const(first.text)
            if attr is not None:
                out.append((attr, src.rel(f), name.line))
    if depth >= 2:
        return out
    seen: set[str] = set()
    for it in go.walk(items):
        if isinstance(it, go.Tok) and it.kind == "id" and it.text not in seen:
            seen.add(it.text)
            target = resolve(it.text, f, src)
            if (
                target is not None
                and target.path != f.path
                and target.path.name.startswith("func.")
            ):
                out += force_calls(target.body().items, target, src, depth + 1)
    return out


def modify_plan_replaces(struct: str, package: str, src: Source) -> list[tuple[str, int]]:
    f = src.file(package, f"method.{struct}.ModifyPlan")
    if f is None:
        return []
    return [
        (src.rel(f), it.line)
        for it in go.walk(f.body().items)
        if isinstance(it, go.Tok) and it.text.endswith("RequiresReplace")
    ]


# ------------------------------------------------------------------------------------------
# Plugin Framework schemas
# ------------------------------------------------------------------------------------------


def fw_attrs(schema: go.Group, f: go.GoFile, src: Source) -> list[Attr]:
    fl = go.fields(schema)
    out = []
    for key in ("Attributes", "Blocks"):
        value = fl.get(key)
        if not value:
            continue
        group = next(g for g in value if isinstance(g, go.Group) and g.open == "{")
        for element in go.split(group.items):
            k, v = go.key_value(element)
            out.append(_fw_attr(key_name(k, f, src), go.first_line(k), v, f, src))
    return out


#: Framework helpers from outside the provider (terraform-plugin-framework-timeouts): the
#: `timeouts` block configures the provider's waits, never the resource.
EXTERNAL_BLOCKS = ("timeouts.Block", "timeouts.BlockAll", "timeouts.Attributes")


def _fw_attr(name: str, line: int, value: list[go.Item], f: go.GoFile, src: Source) -> Attr:
    target = value_of(value, f, src)
    found = target.literal()
    if found is None:
        if _call(target.items) in EXTERNAL_BLOCKS:
            return Attr(tf=name, line=line, where=src.rel(f), input=False)
        raise SourceError(f"{src.rel(f)}:{line}: cannot resolve {value[:3]}")
    kind, struct = found
    owner = target.file
    fl = go.fields(struct)
    flag = lambda k: [getattr(t, "text", None) for t in fl.get(k, [])] == ["true"]  # noqa: E731
    mods = go.calls(fl.get("PlanModifiers", []))
    sizes = [a for n, a in go.calls(fl.get("Validators", [])) if n.text.endswith("SizeAtMost")]
    attr = Attr(
        tf=name,
        line=line,
        where=src.rel(owner),
        force_new=any(n.text.endswith(".RequiresReplace") for n, _ in mods),
        is_list=any(w in kind for w in ("List", "Set")),
        max_one="Single" in kind or any(_is_one(a) for a in sizes),
        input=flag("Optional") or flag("Required") or "Block" in kind,
        conditional=[(src.rel(owner), n.line) for n, _ in mods if ".RequiresReplaceIf" in n.text],
    )
    nested = fl.get("NestedObject")
    if nested:
        inner = value_of(nested, owner, src).literal()
        if inner is not None:
            attr.children = fw_attrs(inner[1], owner, src)
    return attr


def _is_one(args: go.Group) -> bool:
    return [getattr(t, "text", None) for t in args.items] == ["1"]


def fw_resource(struct: str, package: str, src: Source) -> tuple[go.GoFile, list[Attr]]:
    f = src.file(package, f"method.{struct}.Schema")
    if f is None:
        raise SourceError(f"no Schema method of {struct} in {package}")
    items = f.body().items
    for i, it in enumerate(items[:-1]):
        nxt = items[i + 1]
        if go.is_id(it, "schema.Schema") and isinstance(nxt, go.Group) and nxt.open == "{":
            return f, fw_attrs(nxt, f, src)
    raise SourceError(f"{src.rel(f)}: no schema.Schema literal")


# ------------------------------------------------------------------------------------------
# One resource type
# ------------------------------------------------------------------------------------------


@dataclass
class ReadType:
    tf: str
    schema: str  # index path of the schema function
    function: str  # the upstream function (SDKv2 factory or framework Schema method)
    package: str
    attrs: list[Attr]
    conditional: list[tuple[str, str, int]]  # (attribute, file, line)


def read_type(tf: str, registry: dict[str, dict[str, Any]], src: Source) -> ReadType:
    row = registry.get(tf)
    if row is None or "package" not in row:
        raise SourceError(f"{tf}: not in the index's registry")
    package = row["package"]
    if row["kind"] == "framework":
        struct = FRAMEWORK_STRUCTS.get(tf) or row.get("struct") or ""
        f, attrs = fw_resource(struct, package, src)
        cond = [(a.tf, w, line) for a in _flat(attrs) for w, line in a.conditional]
        cond += [("(plan)", w, line) for w, line in modify_plan_replaces(struct, package, src)]
        return ReadType(tf, src.rel(f), f"{struct}.Schema", package, attrs, cond)
    func = re.sub(r"(Create|Put)$", "", row.get("create") or "")
    f, resource = sdk_resource(func, package, src)
    attrs = _resource_attrs(resource, f, src)
    diff = go.fields(resource).get("CustomizeDiff") or []
    return ReadType(tf, src.rel(f), func, package, attrs, force_calls(diff, f, src))


def _flat(attrs: list[Attr]) -> list[Attr]:
    out = []
    for a in attrs:
        out.append(a)
        out += _flat(a.children)
    return out


# ------------------------------------------------------------------------------------------
# Terraform names -> the pinned SDK's Pulumi input names
# ------------------------------------------------------------------------------------------


def camel(tf: str) -> str:
    first, *rest = tf.split("_")
    return first + "".join(p[:1].upper() + p[1:] for p in rest)


def _candidates(a: Attr) -> list[str]:
    c = camel(a.tf)
    if not a.is_list or a.max_one:
        return [c]
    plural = [c + "s", c + "es"] + ([c[:-1] + "ies"] if c.endswith("y") else [])
    return [c, *plural]


def pulumi_key(a: Attr, prefix: str, inputs: set[str]) -> str | None:
    return next((prefix + c for c in _candidates(a) if prefix + c in inputs), None)


def mapped(attrs: list[Attr], inputs: set[str], prefix: str = "") -> list[tuple[str | None, Attr]]:
    """(Pulumi input path or None, attribute) for every attribute, nested ones included."""
    out: list[tuple[str | None, Attr]] = []
    for a in attrs:
        key = pulumi_key(a, prefix, inputs)
        out.append((key, a))
        if key is not None:
            out += mapped(a.children, inputs, key + ".")
    return out


def _tf_path(attrs: list[Attr], path: str, inputs: set[str]) -> str | None:
    """The Pulumi key of a Terraform path (`vpc_config.0.x` reads as `vpc_config.x`)."""
    parts = [p for p in path.split(".") if not p.isdigit()]
    prefix, level = "", attrs
    for part in parts:
        a = next((x for x in level if x.tf == part), None)
        key = pulumi_key(a, prefix, inputs) if a else None
        if a is None or key is None:
            return None
        prefix, level = key + ".", a.children
    return prefix[:-1]


def type_row(token: str, read: ReadType, inputs: set[str], ref: str) -> dict[str, Any]:
    """The generated row of one resource type."""
    pairs = mapped(read.attrs, inputs)
    replace = {k: f"{a.where}:{a.line}" for k, a in pairs if k and a.force_new and a.input}
    missing = sorted(a.tf for k, a in pairs if k is None and a.force_new and a.input)
    top = {k.split(".")[0] for k, _ in pairs if k}
    return {
        "terraform": read.tf,
        "schema": read.schema,
        "upstream": f"{UPSTREAM}@{ref} {read.package.removeprefix(PROVIDER_PKG)} "
        f"func {read.function}",
        "replace": dict(sorted(replace.items())),
        "conditional": _conditional(read, inputs),
        "force_new_not_in_sdk": missing,
        "sdk_inputs_not_in_source": sorted(i for i in inputs - top if "." not in i),
    }


def _conditional(read: ReadType, inputs: set[str]) -> dict[str, dict[str, str]]:
    out = {}
    for attr, where, line in read.conditional:
        row = CONDITIONS.get((read.tf, attr))
        if row is None:
            raise SourceError(
                f"{read.tf}: {where}:{line} forces a replacement of {attr} under a condition "
                "tools/provider_replacements.py does not restate (CONDITIONS)"
            )
        rule, watch, why = row
        key = watch if watch == "(plan)" else _tf_path(read.attrs, watch, inputs)
        if key is None:
            raise SourceError(f"{read.tf}: {watch} is not an input of the pinned SDK")
        out[key] = {"rule": rule, "why": why, "at": f"{where}:{line}"}
    return dict(sorted(out.items()))


# ------------------------------------------------------------------------------------------
# pulumi-kubernetes: provider/pkg/provider/diff.go (forceNew) and helm_release.go
# ------------------------------------------------------------------------------------------

K8S_DIFF = "provider/pkg/provider/diff.go"
K8S_HELM = "provider/pkg/provider/helm_release.go"
K8S_PROVIDER = "provider/pkg/provider/provider.go"
#: The Kubernetes kinds the program emits (core/v1), and the Helm release.
K8S_KINDS = (
    "ConfigMap",
    "Namespace",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "ServiceAccount",
)


def _git_show(gitdir: Path, ref: str, path: str) -> str:
    return subprocess.run(
        ["git", "-C", str(gitdir), "show", f"{ref}:{path}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def _strings(group: go.Group) -> list[tuple[str, int]]:
    return [
        (text, it.line)
        for it in go.walk(group.items)
        if isinstance(it, go.Tok) and (text := go.string_value(it)) is not None
    ]


def _prefixed(items: list[go.Item], funcs: dict[str, go.Group]) -> list[tuple[str, int]]:
    """Strings of a `properties{...}` literal and of the `helper(".prefix")...` calls beside it."""
    out = []
    for name, args in go.calls(items):
        if name.text in funcs and args.items:
            prefix = go.string_value(args.items[0]) or ""
            out += [(prefix + s, line) for s, line in _strings(funcs[name.text])]
    for it in items:
        if isinstance(it, go.Group) and it.open == "{":
            out += _strings(it)
    return out


def kubernetes_rows(gitdir: Path, ref: str) -> dict[str, dict[str, Any]]:
    """{token: {replace: {input path: file:line}}} for the kinds the program emits."""
    items = go.nest(go.tokens(_git_show(gitdir, ref, K8S_DIFF)))
    funcs = {}
    for i, it in enumerate(items[:-3]):
        if go.is_id(it, "func") and go.is_id(items[i + 1]):
            body = next(g for g in items[i + 2 :] if isinstance(g, go.Group) and g.open == "{")
            funcs[items[i + 1].text] = body  # type: ignore[union-attr]
    meta = [(s, line) for s, line in _strings(funcs["metadataForceNewProperties"])]
    core = next(
        items[i + 3]
        for i, it in enumerate(items[:-3])
        if go.is_id(it, "core") and go.is_op(items[i + 1], "=")
    )
    assert isinstance(core, go.Group)
    kinds = go.fields(next(g for g in go.walk(core.items) if isinstance(g, go.Group)))
    out: dict[str, dict[str, Any]] = {}
    for kind in K8S_KINDS:
        props = [(".metadata" + s, line) for s, line in meta]
        props += _prefixed(kinds.get(f'"{kind}"', []), funcs)
        if kind == "ConfigMap":
            props += _configmap(items)
        out[f"kubernetes:core/v1:{kind}"] = {
            "replace": {_path(p): f"{K8S_DIFF}:{line}" for p, line in props}
        }
    out["kubernetes:helm.sh/v3:Release"] = {"replace": _helm(gitdir, ref)}
    # any other kind (a custom resource): its identity only
    out["(any other kind)"] = {
        "replace": {_path(".metadata" + s): f"{K8S_DIFF}:{line}" for s, line in meta}
    }
    return out


def _configmap(items: list[go.Item]) -> list[tuple[str, int]]:
    """A ConfigMap's data replaces it unless the provider enables mutable ConfigMaps."""
    flat = go.walk(items)
    for i, it in enumerate(flat):
        if isinstance(it, go.Tok) and it.text == "clients.IsConfigMap":
            group = next(g for g in flat[i:] if isinstance(g, go.Group) and g.open == "{")
            return _strings(group)
    raise SourceError(f"{K8S_DIFF}: no ConfigMap branch")


def _helm(gitdir: Path, ref: str) -> dict[str, str]:
    items = go.walk(go.nest(go.tokens(_git_show(gitdir, ref, K8S_HELM))))
    for i, it in enumerate(items):
        if go.is_id(it, "forceNewFields") and go.is_op(items[i + 1], ":="):
            group = next(g for g in items[i:] if isinstance(g, go.Group) and g.open == "{")
            return {_path(s): f"{K8S_HELM}:{line}" for s, line in _strings(group)}
    raise SourceError(f"{K8S_HELM}: no forceNewFields")


def _path(prop: str) -> str:
    return prop.lstrip(".").replace("[*]", "")


# ------------------------------------------------------------------------------------------
# The document
# ------------------------------------------------------------------------------------------


def _rev(gitdir: Path, ref: str) -> str:
    return subprocess.run(
        ["git", "-C", str(gitdir), "rev-parse", f"{ref}^{{commit}}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def aws_rows(src: Source, ref: str) -> dict[str, dict[str, Any]]:
    from tools.provider_snapshot import sdk_inputs

    registry = src.registry()
    reads = {token: read_type(tf, registry, src) for token, tf in sorted(TYPES.items())}
    found = {(r.tf, attr) for r in reads.values() for attr, _, _ in r.conditional}
    stale = sorted(set(CONDITIONS) - found)
    if stale:  # a rule the source no longer has: the table would replace on a stale condition
        raise SourceError(f"CONDITIONS rows the source does not have: {stale}")
    return {token: type_row(token, r, set(sdk_inputs(token)), ref) for token, r in reads.items()}


def document(index: Path, ref: str, kubernetes: Path, k8s_ref: str, work: Path) -> dict[str, Any]:
    extract = subprocess.run(
        [
            "git",
            "-C",
            str(index),
            "archive",
            ref,
            "index/terraform-provider-aws-index.json",
            "index/internal",
        ],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(work)], input=extract, check=True)
    return {
        "generated_by": "tools/provider_replacements.py",
        "provider": "pulumi-aws",
        "version": importlib.metadata.version("pulumi_aws"),
        "requirement": requirement("pulumi-aws"),
        "upstream": {"repository": UPSTREAM, "ref": ref, "embedded": EMBEDDED},
        "source": {"repository": INDEX_REPO, "ref": ref, "commit": _rev(index, ref)},
        "types": aws_rows(Source(work), ref),
        "kubernetes": {
            "provider": "pulumi-kubernetes",
            "version": importlib.metadata.version("pulumi_kubernetes"),
            "requirement": requirement("pulumi-kubernetes"),
            "source": {
                "repository": "pulumi/pulumi-kubernetes",
                "commit": _rev(kubernetes, k8s_ref),
                "note": KUBERNETES_NOTE,
            },
            "delete_before_replace": f"{K8S_PROVIDER} (Diff: a replaced object that keeps its "
            "metadata.name and namespace is deleted before it is created)",
            "types": kubernetes_rows(kubernetes, k8s_ref),
        },
    }


#: What is known of the upstream the pin embeds (see docs/day2.md, "Replacement tables").
EMBEDDED = (
    "pulumi-aws 7.51.1 embeds terraform-provider-aws v6.58.0 or later: every resource the "
    "provider added up to v6.58.0 is in the pinned SDK; the upstream submodule commit of the "
    "v7.51.1 tag could not be read here (the pulumi/pulumi-aws snapshot is over the fetch limit, "
    "the file index keeps no gitlinks), and v6.58.0 is the newest release whose source the "
    "index holds. Each row lists the SDK inputs the source lacks (sdk_inputs_not_in_source) so "
    "a newer upstream shows"
)
KUBERNETES_NOTE = (
    "the newest pulumi-kubernetes snapshot available here (after v4.32.0); the pin installs "
    "4.34.2, whose tag the snapshot lacks"
)


def main(argv: list[str]) -> int:
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True, help=f"a git checkout of {INDEX_REPO}")
    parser.add_argument("--ref", default="v6.58.0", help="the upstream release tag")
    parser.add_argument("--kubernetes", type=Path, required=True, help="pulumi-kubernetes git dir")
    parser.add_argument("--kubernetes-ref", default="HEAD")
    parser.add_argument("--write", action="store_true", help=f"write {OUT.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as work:
        doc = document(args.index, args.ref, args.kubernetes, args.kubernetes_ref, Path(work))
    text = json.dumps(doc, indent=1, sort_keys=True) + "\n"
    if args.write:
        OUT.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
