"""FileSystem: FSx for Lustre (PERSISTENT_2) in the workload pool's subnet, reachable only from
the node security groups on the Lustre ports (988, 1018-1023). Stateful: protected."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from accelstack.components.addons import addon_version
from accelstack.components.common import check_children, stable_tags
from accelstack.inventory import Billable, file_system
from accelstack.resolve import Stack

#: Lustre ports (AWS FSx for Lustre file-system access control).
LUSTRE_PORTS = ((988, 988), (1018, 1023))


@dataclass(frozen=True)
class FileSystemArgs:
    #: The file system as the inventory declares it: name, size, deployment type and
    #: throughput tier (what the cost guard prices)
    declared: Billable
    subnet_id: pulumi.Input[str]
    vpc_id: pulumi.Input[str]
    client_security_group_ids: list[pulumi.Input[str]]
    tags: dict[str, str] = field(default_factory=dict)
    #: (create, update) minutes `pulumi up` waits for the file system (resilience.yaml
    #: fsx_timeouts); None: the provider's defaults
    timeouts: tuple[int, int] | None = None

    @property
    def storage_gib(self) -> int:
        return int(self.declared.args["storage_capacity"])

    @classmethod
    def from_stack(
        cls,
        stack: Stack,
        subnet_id: pulumi.Input[str],
        vpc_id: pulumi.Input[str],
        client_security_group_ids: list[pulumi.Input[str]],
    ) -> FileSystemArgs | None:
        declared = file_system(stack)
        if declared is None:
            return None
        return cls(
            declared=declared,
            subnet_id=subnet_id,
            vpc_id=vpc_id,
            client_security_group_ids=client_security_group_ids,
            tags=stable_tags(stack.tags),
            timeouts=stack.fsx_timeouts,
        )


def _lustre_rules(
    name: str,
    sg: aws.ec2.SecurityGroup,
    clients: list[pulumi.Input[str]],
    child: pulumi.ResourceOptions,
) -> list[pulumi.Resource]:
    """The file system's security-group rules: Lustre ports from itself (the servers talk to
    each other) and from each client group, and egress to itself. FSx checks them when it
    creates the file system (InvalidNetworkSettings otherwise), so it waits for every one."""
    sources: list[tuple[str, pulumi.Input[str]]] = [("self", sg.id)] + [
        (f"nodes{i}", sid) for i, sid in enumerate(clients)
    ]
    rules: list[pulumi.Resource] = []
    for label, source in sources:
        for lo, hi in LUSTRE_PORTS:
            rules.append(
                aws.vpc.SecurityGroupIngressRule(
                    f"{name}-{label}-{lo}",
                    security_group_id=sg.id,
                    ip_protocol="tcp",
                    from_port=lo,
                    to_port=hi,
                    referenced_security_group_id=source,
                    description=f"Lustre {lo}-{hi}",
                    opts=child,
                )
            )
    rules.append(
        aws.vpc.SecurityGroupEgressRule(
            f"{name}-egress-self",
            security_group_id=sg.id,
            ip_protocol="-1",
            referenced_security_group_id=sg.id,
            description="Lustre to itself",
            opts=child,
        )
    )
    return rules


def _timeouts(minutes: tuple[int, int] | None) -> pulumi.CustomTimeouts | None:
    """Create and update waits of the file system; delete at the provider's default."""
    if minutes is None:
        return None
    return pulumi.CustomTimeouts(create=f"{minutes[0]}m", update=f"{minutes[1]}m")


class FileSystem(pulumi.ComponentResource):
    def __init__(
        self, name: str, args: FileSystemArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("accelstack:filesystem:FileSystem", name, None, opts)
        check_children(name, args.declared)
        child = pulumi.ResourceOptions(parent=self)
        sg = aws.ec2.SecurityGroup(
            f"{name}-sg",
            vpc_id=args.vpc_id,
            description="FSx for Lustre: Lustre ports from the node security groups only",
            tags={**args.tags, "Name": f"{name}-fsx"},
            opts=child,
        )
        rules = _lustre_rules(name, sg, args.client_security_group_ids, child)
        fs = aws.fsx.LustreFileSystem(
            args.declared.name,
            storage_type="SSD",
            data_compression_type="LZ4",
            subnet_ids=args.subnet_id,  # one subnet (pulumi-aws 7 takes a string)
            security_group_ids=[sg.id],
            file_system_type_version="2.15",
            tags=args.tags,
            opts=pulumi.ResourceOptions(
                parent=self,
                protect=True,
                depends_on=rules,
                custom_timeouts=_timeouts(args.timeouts),
            ),
            **args.declared.args,
        )
        self.file_system_id = fs.id
        self.security_group_id = sg.id  # clients add their egress to it (standalone nodes)
        self.dns_name = fs.dns_name
        self.mount_name = fs.mount_name
        self.register_outputs({"fileSystemId": fs.id, "dnsName": fs.dns_name})


#: EKS add-on that runs the FSx for Lustre CSI node plugin (mounts statically provisioned
#: volumes; static provisioning needs no AWS API permissions on the nodes).
FSX_CSI_ADDON = "aws-fsx-csi-driver"
FSX_CSI_DRIVER = "fsx.csi.aws.com"


@dataclass(frozen=True)
class FsxClaimArgs:
    """The file system as the training pods see it: a PersistentVolume bound to one claim."""

    cluster_name: pulumi.Input[str]
    provider: k8s.Provider
    namespace: str
    claim_name: str
    storage_gib: int
    file_system_id: pulumi.Input[str]
    dns_name: pulumi.Input[str]
    mount_name: pulumi.Input[str]
    depends_on: list[pulumi.Resource] = field(default_factory=list)
    tags: dict[str, str] = field(default_factory=dict)
    kubernetes_version: str = ""  # what the CSI add-on's version follows (addons.py)
    addon_versions: dict[str, str] = field(default_factory=dict)  # catalog pins


def persistent_volume_spec(
    storage_gib: int, file_system_id: str, dns_name: str, mount_name: str
) -> dict[str, Any]:
    """Static PV for an existing FSx for Lustre file system (aws-fsx-csi-driver docs)."""
    return {
        "capacity": {"storage": f"{storage_gib}Gi"},
        "accessModes": ["ReadWriteMany"],
        "persistentVolumeReclaimPolicy": "Retain",
        "storageClassName": "",
        "mountOptions": ["flock"],
        "csi": {
            "driver": FSX_CSI_DRIVER,
            "volumeHandle": file_system_id,
            "volumeAttributes": {"dnsname": dns_name, "mountname": mount_name},
        },
    }


class FsxClaim(pulumi.ComponentResource):
    """FSx CSI add-on, a static PersistentVolume and the claim the rendered jobs mount."""

    def __init__(
        self, name: str, args: FsxClaimArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("accelstack:filesystem:FsxClaim", name, None, opts)
        addon = aws.eks.Addon(
            f"{name}-csi",
            cluster_name=args.cluster_name,
            addon_name=FSX_CSI_ADDON,
            addon_version=addon_version(
                FSX_CSI_ADDON, args.kubernetes_version, args.addon_versions
            ),
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="OVERWRITE",
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=args.depends_on),
        )
        kopts = pulumi.ResourceOptions(
            parent=self, provider=args.provider, depends_on=[addon, *args.depends_on]
        )
        spec: Any = pulumi.Output.all(args.file_system_id, args.dns_name, args.mount_name).apply(
            lambda a: persistent_volume_spec(args.storage_gib, a[0], a[1], a[2])
        )
        pv = k8s.core.v1.PersistentVolume(
            f"{name}-pv",
            metadata={"name": args.claim_name},
            spec=spec,
            opts=kopts,
        )
        claim_spec: Any = {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": "",
            "volumeName": args.claim_name,
            "resources": {"requests": {"storage": f"{args.storage_gib}Gi"}},
        }
        k8s.core.v1.PersistentVolumeClaim(
            f"{name}-pvc",
            metadata={"name": args.claim_name, "namespace": args.namespace},
            spec=claim_spec,
            opts=pulumi.ResourceOptions(
                parent=self,
                provider=args.provider,
                depends_on=[pv, *args.depends_on],
                # The claim is bound to this volume, not provisioned by a StorageClass, and
                # Kubernetes refuses to grow such a claim ("only dynamically provisioned pvc can
                # be resized": kubernetes/kubernetes@76434bd62ab6c21818b04c7d21cd06d394b13a28
                # plugin/pkg/admission/storage/persistentvolume/resize/admission.go Validate):
                # after FSx grows, the volume shows the new size and the claim keeps its first
                # request (a bound claim's request does not limit what the pods see).
                ignore_changes=["spec.resources.requests.storage"],
            ),
        )
        self.register_outputs({"claimName": args.claim_name})
