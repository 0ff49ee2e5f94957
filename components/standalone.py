"""StandaloneCluster (orchestration: ec2): N instances per pool on the Neuron DLAMI or the AWS
Deep Learning AMI (GPU), no Kubernetes.

Per pool: a launch template with the pinned DLAMI (components/amis.py), every EFA interface
(card 0 device index 0 type 'efa', the others device index 1 in the pool's style), IMDSv2
required, an encrypted gp3 root volume, the pool's capacity reservation or block, a cluster
placement group when `pool.placement_group`, and instance tags; then ONE EC2 Fleet request
of type `instant` for all `pool.nodes` instances with `minTargetCapacity = nodes`: EC2
launches all of them or none (a placement group is filled in one request, not node by node).

What runs on the nodes is delivered through SSM, not user data (a user-data edit stops and
restarts every instance, and cloud-init runs user data on first boot only): an SSM Command
document per pool installs the rendered launch script, the run wrapper and the pool's
environment (/etc/accelstack/env) and mounts FSx, and a State Manager association targeting
the stack and pool tags applies it to every instance when it registers and again whenever the
document changes (the association follows the document's latest version). The instances
carry no user data.

Rendezvous: all instances are identical; `accelstack-run` finds this node's rank at start as
its position among the pool's running instances sorted by private IP (ec2:DescribeInstances
on the stack and pool tags), and the head (rank 0) is the lowest address.

Access is through SSM Session Manager (instance profile with AmazonSSMManagedInstanceCore);
there is no SSH ingress unless the spec names a key pair and source CIDRs (then a warning).
The instance profile may also read and write the compile-cache prefix of one bucket and
describe instances (rank discovery), nothing else. The job starts with one command per node
(`accelstack-run`) or one SSM Run Command (the `runCommands` output).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import pulumi
import pulumi_aws as aws

from accelstack import naming
from accelstack.components.amis import image_id
from accelstack.components.common import (
    assume_role_policy,
    check_children,
    managed_policy_output,
    policy_json,
    stable_tags,
)
from accelstack.components.compile_cache import (
    bucket_arn,
    pod_identity_policy,
    secure_bucket,
)
from accelstack.components.filesystem import FileSystem, FileSystemArgs
from accelstack.components.network import Network, NetworkArgs
from accelstack.components.nodegroup import (
    IMDS,
    allow_all_within,
    capacity_reservation,
    efa_network_interfaces,
)
from accelstack.components.provider import aws_context
from accelstack.inventory import Billable, fleet_pool
from accelstack.naming import POOL_LABEL, STACK_TAG
from accelstack.resolve import ResolvedPool, Stack

ENV_FILE = "/etc/accelstack/env"
SCRIPT_DIR = "/opt/accelstack"
RUN_COMMAND = "/usr/local/bin/accelstack-run"
FSX_MOUNT = "/fsx"
#: `accelstack-run` finds its rank among the pool's instances; DescribeInstances supports no
#: resource-level permissions (Service Authorization Reference, Amazon EC2 actions), so "*".
DESCRIBE_INSTANCES_POLICY = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": "ec2:DescribeInstances", "Resource": "*"}],
}
INSTANCE_ROLE_POLICIES = ("AmazonSSMManagedInstanceCore",)
#: The Lustre ports an FSx client must reach (FSx for Lustre user guide, "File system access
#: control with Amazon VPC": inbound and outbound TCP 988 and 1018-1023,
#: https://docs.aws.amazon.com/fsx/latest/LustreGuide/limit-access-security-groups.html).
LUSTRE_PORTS = ((988, 988), (1018, 1023))
#: Egress the nodes need: HTTPS (SSM, S3, package mirrors) and HTTP (package mirrors), through
#: the NAT gateway. Traffic between nodes is covered by the self rules.
EGRESS_PORTS = (443, 80)


# ---------------------------------------------------------------------------------------
# Pure helpers
# ---------------------------------------------------------------------------------------


def network_interfaces(
    pool: ResolvedPool, subnet_id: pulumi.Input[str], security_groups: list[pulumi.Input[str]]
) -> list[dict[str, Any]]:
    """Every EFA interface of the pool, in its subnet and security groups (empty without EFA)."""
    return [
        {**nic, "subnet_id": subnet_id, "security_groups": security_groups}
        for nic in efa_network_interfaces(pool)
    ]


def ssh_access(stack: Stack) -> tuple[str | None, tuple[str, ...], str | None]:
    """(key pair, SSH source CIDRs, warning). Off by default: SSM Session Manager only."""
    ssh = stack.ssh
    if not ssh.key_name:
        return None, (), None
    if ssh.cidrs:
        warning = (
            f"{stack.name}: SSH (tcp/22) is open from {', '.join(ssh.cidrs)} with key pair "
            f"'{ssh.key_name}' (standalone.ssh_*); SSM Session Manager needs no open port"
        )
    else:
        warning = (
            f"{stack.name}: key pair '{ssh.key_name}' is installed but no SSH ingress is "
            "open (standalone.ssh_cidrs is empty); reach nodes with SSM Session Manager"
        )
    return ssh.key_name, ssh.cidrs, warning


def node_env(stack: Stack, pool: ResolvedPool, cache_url: str | None) -> dict[str, str]:
    """/etc/accelstack/env for every node of the pool, read by `accelstack-run` and the
    rendered launch script (standalone mode). The node's rank and the head address are found
    by `accelstack-run` at start (see `run_wrapper`): every instance of a fleet is identical."""
    env = {
        "ACCELSTACK_STACK": stack.name,
        "ACCELSTACK_POOL": pool.name,
        "ACCELSTACK_REGION": stack.region,
        "ACCELSTACK_ORCHESTRATOR": "standalone",
        "ACCELSTACK_NNODES": str(pool.nodes),
        "ACCELSTACK_RDZV_PORT": str(stack.rdzv_port),
        # the same node-fault budget the pods carry (launch.yaml fault_tolerance): torchrun
        # restarts its workers in place, each round with a fresh rendezvous store
        "PET_MAX_RESTARTS": str(stack.torchrun_max_restarts),
        "TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1",
    }
    if cache_url is not None:
        env["ACCELSTACK_COMPILE_CACHE_URL"] = cache_url
    return env


#: How a standalone pool's node launch script is made: (stack, pool, the compile-cache bucket
#: once it exists) -> (file name, text). `accelstack.render.node_script`, handed in by whoever
#: wires the program (the CLI's plan, the Pulumi program's entry): the components import
#: nothing of render.
NodeScript = Callable[[Stack, ResolvedPool, str | None], tuple[str, str]]


def _heredoc(path: str, text: str, mode: str, marker: str) -> str:
    if any(line == marker for line in text.splitlines()):
        raise ValueError(f"{path}: content contains the heredoc marker {marker}")
    body = text if text.endswith("\n") else text + "\n"
    return f"cat > {path} <<'{marker}'\n{body}{marker}\nchmod {mode} {path}\n"


def run_wrapper(script_path: str, activate: str) -> str:
    """`accelstack-run`: load the node's environment, find its rank and the head (the pool's
    running instances by private IP), find torchrun (the DLAMI environment of the pool's
    training path, `activate`, from the catalog's launch.yaml), start the launch script."""
    return f"""#!/usr/bin/env bash
# accelstack-run: start this node's part of the job (run on every node, or through SSM).
set -euo pipefail
set -a
. {ENV_FILE}
set +a
die() {{ echo "accelstack: $*" >&2; exit 2; }}
if [[ -z "${{ACCELSTACK_NODE_RANK:-}}" && "$ACCELSTACK_NNODES" != 1 ]]; then
  # rank = position of this node's private IP among the pool's running instances (IMDSv2)
  imds_token=$(curl -sS -X PUT http://169.254.169.254/latest/api/token \\
    -H 'X-aws-ec2-metadata-token-ttl-seconds: 300')
  my_ip=$(curl -sS -H "X-aws-ec2-metadata-token: $imds_token" \\
    http://169.254.169.254/latest/meta-data/local-ipv4)
  mapfile -t ips < <(aws ec2 describe-instances --region "$ACCELSTACK_REGION" \\
    --filters "Name=tag:{STACK_TAG},Values=$ACCELSTACK_STACK" \\
    "Name=tag:{POOL_LABEL},Values=$ACCELSTACK_POOL" Name=instance-state-name,Values=running \\
    --query 'Reservations[].Instances[].PrivateIpAddress' --output text \\
    | tr '\\t' '\\n' | sed '/^$/d' | sort -t . -k1,1n -k2,2n -k3,3n -k4,4n)
  (( ${{#ips[@]}} == ACCELSTACK_NNODES )) \\
    || die "found ${{#ips[@]}} running instances in pool $ACCELSTACK_POOL, expected $ACCELSTACK_NNODES"
  for i in "${{!ips[@]}}"; do
    if [[ "${{ips[$i]}}" == "$my_ip" ]]; then export ACCELSTACK_NODE_RANK=$i; fi
  done
  [[ -n "${{ACCELSTACK_NODE_RANK:-}}" ]] || die "this node ($my_ip) is not among the pool's instances"
  export ACCELSTACK_HEAD_ADDR="${{ips[0]}}"
fi
if [[ -n "${{ACCELSTACK_VENV:-}}" ]]; then
  . "$ACCELSTACK_VENV/bin/activate"
elif ! command -v "${{ACCELSTACK_TORCHRUN:-torchrun}}" >/dev/null; then
  # DLAMIs keep PyTorch in a virtualenv: the one of this pool's training path (catalog)
  if [[ -f {shlex.quote(activate)} ]]; then . {shlex.quote(activate)}; fi
fi
command -v "${{ACCELSTACK_TORCHRUN:-torchrun}}" >/dev/null || {{
  echo "accelstack: torchrun not found; set ACCELSTACK_VENV=/path/to/venv or install PyTorch" >&2
  exit 2
}}
exec {script_path} "$@"
"""


def install_script(
    stack: Stack,
    pool: ResolvedPool,
    script_name: str,
    script: str,
    cache_url: str | None,
    fsx: tuple[str, str] | None = None,
) -> str:
    """What the pool's SSM document runs on every node (as root, idempotent): the environment,
    the launch script, `accelstack-run`, and the FSx mount. Starts nothing."""
    env_text = "".join(
        f"{k}={shlex.quote(v)}\n" for k, v in node_env(stack, pool, cache_url).items()
    )
    script_path = f"{SCRIPT_DIR}/{script_name}"
    parts = [
        "#!/bin/bash\n",
        f"# accelstack standalone: stack {stack.name}, pool {pool.name}, {pool.nodes} x "
        f"{pool.instance_type}. Installs the launch script and the environment; starts nothing.\n",
        f"# Start the job: run `sudo {RUN_COMMAND}` on every node, or one SSM Run Command.\n",
        "set -euo pipefail\n",
        f"install -d -m 0755 /etc/accelstack {SCRIPT_DIR}\n",
        _heredoc(ENV_FILE, env_text, "0644", "ACCELSTACK_ENV_EOF"),
        _heredoc(script_path, script, "0755", "ACCELSTACK_SCRIPT_EOF"),
        _heredoc(
            RUN_COMMAND,
            run_wrapper(script_path, pool.python_env.activate),
            "0755",
            "ACCELSTACK_RUN_EOF",
        ),
        f"echo 'set -a; . {ENV_FILE}; set +a' > /etc/profile.d/accelstack.sh\n",
    ]
    if pool.node_lnc_setting is not None:  # a non-default LNC is a node-level setting
        lnc_file = str(pool.device.node_lnc_file)
        parts.append(
            f"install -d -m 0755 {lnc_file.rsplit('/', 1)[0]}\n"
            f"echo {pool.node_lnc_setting} > {lnc_file}\n"
        )
    if fsx is not None:
        dns, mount_name = fsx
        line = f"{dns}@tcp:/{mount_name} {FSX_MOUNT} lustre defaults,noatime,flock,_netdev 0 0"
        parts.append(
            f"# FSx for Lustre at {FSX_MOUNT} (once in fstab; mounted unless it already is)\n"
            f"install -d -m 0755 {FSX_MOUNT}\n"
            f"grep -qxF {shlex.quote(line)} /etc/fstab || echo {shlex.quote(line)} >> /etc/fstab\n"
            f"mountpoint -q {FSX_MOUNT} || mount {FSX_MOUNT}\n"
        )
    return "".join(parts)


def ssm_document(text: str, limit: int) -> str:
    """The SSM Command document (schema 2.2) that runs `text` with aws:runShellScript; at most
    `limit` bytes (the catalog's ssm_document_limit_bytes)."""
    doc = {
        "schemaVersion": "2.2",
        "description": "accelstack: install the launch script and environment (starts nothing)",
        "mainSteps": [
            {
                "action": "aws:runShellScript",
                "name": "install",
                "inputs": {"runCommand": text.splitlines(), "timeoutSeconds": "600"},
            }
        ],
    }
    content = json.dumps(doc, indent=1, sort_keys=True)
    if len(content.encode()) > limit:
        raise ValueError(
            f"the SSM document is {len(content.encode())} bytes; SSM allows {limit} "
            "(shorten workload.args or workload.env)"
        )
    return content


def run_command(stack: Stack, pool: ResolvedPool) -> str:
    """One SSM Run Command that starts the job on every node of the pool."""
    return (
        "aws ssm send-command --document-name AWS-RunShellScript "
        f"--region {stack.region} "
        f"--targets Key=tag:{STACK_TAG},Values={stack.name} "
        f"Key=tag:{POOL_LABEL},Values={pool.name} "
        f'--parameters \'commands=["{RUN_COMMAND}"],executionTimeout=["172800"]\' '
        f"--max-concurrency {pool.nodes} --comment {shlex.quote(f'accelstack {stack.name} {pool.name}')}"
    )


def instance_tags(stack: Stack, pool: ResolvedPool) -> dict[str, str]:
    """Tags every instance of the pool gets from the launch template: the stack and pool tags
    the SSM association and rank discovery select on (a fleet does not pass its own tags on)."""
    return {
        **stable_tags(stack.tags, naming.pool_prefix(stack.name, pool.name)),
        POOL_LABEL: pool.name,
    }


# ---------------------------------------------------------------------------------------
# StandaloneCluster
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StandaloneClusterArgs:
    stack: Stack
    vpc_id: pulumi.Input[str]
    subnet_ids: Mapping[str, pulumi.Input[str]]  # zone id -> the zone's private subnet
    account_id: pulumi.Input[str]
    node_script: NodeScript  # renders each pool's launch script (`NodeScript`)
    partition: pulumi.Input[str] = "aws"

    @classmethod
    def from_stack(
        cls,
        stack: Stack,
        network: Network,
        account_id: pulumi.Input[str],
        partition: pulumi.Input[str],
        node_script: NodeScript,
    ) -> StandaloneClusterArgs:
        return cls(
            stack=stack,
            vpc_id=network.vpc_id,
            subnet_ids=network.private_subnet_ids,
            account_id=account_id,
            node_script=node_script,
            partition=partition,
        )


class StandaloneCluster(pulumi.ComponentResource):
    """Instances per pool, their security group, instance profile and compile cache."""

    security_group_id: pulumi.Output[str]
    instance_ids: dict[str, pulumi.Output[list[str]]]
    bucket_name: pulumi.Output[str] | None
    fsx: FileSystem | None

    def __init__(
        self, name: str, args: StandaloneClusterArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("accelstack:standalone:StandaloneCluster", name, None, opts)
        stack = args.stack
        self._node_script = args.node_script
        tags = stable_tags(stack.tags)
        key_name, ssh_cidrs, warning = ssh_access(stack)
        if warning:
            pulumi.log.warn(warning, resource=self)
        self.security_group_id = self._security_group(name, args, tags, ssh_cidrs)
        self.bucket_name = self._cache_bucket(name, args, tags)
        profile = self._instance_profile(name, args, tags)
        self.fsx = self._filesystem(name, args)
        self._fsx_rules = self._fsx_egress(name)
        self.instance_ids = {}
        for pool in stack.pools:
            self._pool(name, args, pool, profile, key_name)
        self.register_outputs(
            {"securityGroupId": self.security_group_id, "instanceIds": self.instance_ids}
        )

    def _child(self, **kw: Any) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self, **kw)

    def _security_group(
        self,
        name: str,
        args: StandaloneClusterArgs,
        tags: dict[str, str],
        ssh_cidrs: tuple[str, ...],
    ) -> pulumi.Output[str]:
        sg = aws.ec2.SecurityGroup(
            f"{name}-sg",
            vpc_id=args.vpc_id,
            description=f"accelstack {args.stack.name} nodes: all traffic between them (EFA)",
            tags={**tags, "Name": f"{name}-nodes"},
            opts=self._child(),
        )
        allow_all_within(
            name,
            sg.id,
            self._child(),
            ("nodes: all from self (EFA, NCCL)", "nodes: all to self (EFA needs it)"),
        )
        for port in EGRESS_PORTS:
            aws.vpc.SecurityGroupEgressRule(
                f"{name}-egress-{port}",
                security_group_id=sg.id,
                ip_protocol="tcp",
                from_port=port,
                to_port=port,
                cidr_ipv4="0.0.0.0/0",
                description=f"tcp/{port} out through the NAT (SSM, S3, packages)",
                opts=self._child(),
            )
        for i, cidr in enumerate(ssh_cidrs):
            aws.vpc.SecurityGroupIngressRule(
                f"{name}-ssh-{i}",
                security_group_id=sg.id,
                ip_protocol="tcp",
                from_port=22,
                to_port=22,
                cidr_ipv4=cidr,
                description="SSH (standalone.ssh_cidrs)",
                opts=self._child(),
            )
        return sg.id

    def _cache_bucket(
        self, name: str, args: StandaloneClusterArgs, tags: dict[str, str]
    ) -> pulumi.Output[str] | None:
        """The compile-cache bucket: the spec's existing one, else `<stack>-ncc-<account>`
        with the same hardening as the EKS CompileCache component."""
        stack = args.stack
        if not stack.compile_cache_enabled:
            return None
        if stack.compile_cache_bucket:
            return pulumi.Output.from_input(stack.compile_cache_bucket)
        return secure_bucket(
            naming.standalone_cache(name),
            self,
            stack_name=stack.name,
            account_id=args.account_id,
            key_prefix=stack.compile_cache_prefix,
            expire_days=stack.compile_cache_expire_days,
            tags=tags,
        )

    def _instance_profile(
        self, name: str, args: StandaloneClusterArgs, tags: dict[str, str]
    ) -> aws.iam.InstanceProfile:
        role = aws.iam.Role(
            f"{name}-node-role",
            assume_role_policy=assume_role_policy("ec2.amazonaws.com"),
            tags=tags,
            opts=self._child(),
        )
        for policy in INSTANCE_ROLE_POLICIES:
            aws.iam.RolePolicyAttachment(
                f"{name}-node-role-{policy}",
                role=role.name,
                policy_arn=managed_policy_output(args.partition, policy),
                opts=self._child(),
            )
        aws.iam.RolePolicy(
            f"{name}-node-describe-policy",
            role=role.id,
            policy=policy_json(DESCRIBE_INSTANCES_POLICY),
            opts=self._child(),
        )
        if self.bucket_name is not None:
            prefix = args.stack.compile_cache_prefix
            arn = pulumi.Output.all(args.partition, self.bucket_name).apply(
                lambda a: bucket_arn(a[0], a[1])
            )
            aws.iam.RolePolicy(
                f"{name}-node-cache-policy",
                role=role.id,
                policy=arn.apply(lambda a: policy_json(pod_identity_policy(a, prefix))),
                opts=self._child(),
            )
        return aws.iam.InstanceProfile(
            f"{name}-node-profile", role=role.name, tags=tags, opts=self._child()
        )

    def _filesystem(self, name: str, args: StandaloneClusterArgs) -> FileSystem | None:
        stack = args.stack
        zone = stack.workload_pool.zone_id
        fs_args = FileSystemArgs.from_stack(
            stack,
            subnet_id=args.subnet_ids[zone],
            vpc_id=args.vpc_id,
            client_security_group_ids=[self.security_group_id],
        )
        if fs_args is None:
            return None
        return FileSystem(naming.fsx(name), fs_args, opts=self._child())

    def _fsx_egress(self, name: str) -> list[aws.vpc.SecurityGroupEgressRule]:
        """The nodes reach FSx for Lustre: egress TCP 988 and 1018-1023 to the file system's
        security group (the node group allows only HTTP(S) out otherwise)."""
        if self.fsx is None:
            return []
        return [
            aws.vpc.SecurityGroupEgressRule(
                f"{name}-lustre-egress-{lo}",
                security_group_id=self.security_group_id,
                ip_protocol="tcp",
                from_port=lo,
                to_port=hi,
                referenced_security_group_id=self.fsx.security_group_id,
                description=f"Lustre {lo}-{hi} to FSx",
                opts=self._child(),
            )
            for lo, hi in LUSTRE_PORTS
        ]

    def _pool(
        self,
        name: str,
        args: StandaloneClusterArgs,
        pool: ResolvedPool,
        profile: aws.iam.InstanceProfile,
        key_name: str | None,
    ) -> None:
        prefix = naming.pool_prefix(name, pool.name)
        subnet = args.subnet_ids[pool.zone_id]
        nics = network_interfaces(pool, subnet, [self.security_group_id])
        declared = fleet_pool(args.stack, pool)
        check_children(name, *declared)
        lt = self._launch_template(
            prefix, args.stack, pool, (profile, key_name, nics), declared.launch_template
        )
        # the document first: instances that register before the association exists still
        # get it (State Manager applies an association to every matching managed node)
        self._delivery(prefix, args.stack, pool)
        fleet = self._fleet(args.stack, declared.fleet, lt, subnet if not nics else None)
        self.instance_ids[pool.name] = fleet.fleet_instance_sets.apply(
            lambda sets: [i for s in sets or [] for i in (s.instance_ids or [])]
        )

    def _placement(
        self, prefix: str, pool: ResolvedPool, tags: dict[str, str]
    ) -> dict[str, Any] | None:
        """The existing placement group the pool's reservation lives in, or a cluster
        placement group for the pool when `pool.placement_group`."""
        if pool.placement_group_name is not None:
            return {"group_name": pool.placement_group_name}
        if not pool.placement_group:
            return None
        pg = aws.ec2.PlacementGroup(
            f"{prefix}-pg", strategy="cluster", tags=tags, opts=self._child()
        )
        return {"group_name": pg.name}

    def _launch_template(
        self,
        prefix: str,
        stack: Stack,
        pool: ResolvedPool,
        access: tuple[aws.iam.InstanceProfile, str | None, list[dict[str, Any]]],
        declared: Billable,
    ) -> aws.ec2.LaunchTemplate:
        """The pool's launch template: its name, instance type and root volume as the inventory
        declares them (what the cost guard prices), plus the pinned DLAMI, EFA interfaces,
        IMDSv2, capacity reservation, placement and instance tags. No user data (`_delivery`)."""
        profile, key_name, nics = access
        tags = stable_tags(stack.tags)
        itags = instance_tags(stack, pool)
        # the SDK's overloads take TypedDicts; the arguments are built as plain dicts
        args: dict[str, Any] = dict(
            description=f"accelstack standalone pool {pool.name} ({pool.instance_type})",
            image_id=image_id(self, pool),
            key_name=key_name,
            iam_instance_profile={"arn": profile.arn},
            update_default_version=True,
            metadata_options=IMDS,
            network_interfaces=nics or None,
            vpc_security_group_ids=None if nics else [self.security_group_id],
            placement=self._placement(prefix, pool, tags),
            capacity_reservation_specification=capacity_reservation(pool),
            tag_specifications=[
                {"resource_type": "instance", "tags": itags},
                {"resource_type": "volume", "tags": itags},
            ],
            tags=tags,
            **declared.args,
        )
        lt: aws.ec2.LaunchTemplate = aws.ec2.LaunchTemplate(
            declared.name, opts=self._child(), **args
        )
        return lt

    def _fleet(
        self,
        stack: Stack,
        declared: Billable,
        lt: aws.ec2.LaunchTemplate,
        subnet: pulumi.Input[str] | None,
    ) -> aws.ec2.Fleet:
        """All of the pool's instances in one EC2 Fleet request (type instant): EC2 launches
        `pool.nodes` instances or none, in the pool's market (`declared`: the inventory's
        capacity, instance type and pool tag, what the cost guard prices). The subnet comes
        from the EFA interfaces when the LT has them (an override may not name it then)."""
        priced = dict(declared.args)
        (config,) = priced.pop("launch_template_configs")
        tags = {**stable_tags(stack.tags), **priced.pop("tags")}
        extra = {} if subnet is None else {"subnet_id": subnet}
        launch: Any = {
            "launch_template_specification": {
                "launch_template_name": lt.name,
                "version": lt.latest_version.apply(str),
            },
            "overrides": [{**o, **extra} for o in config["overrides"]],
        }
        return aws.ec2.Fleet(
            declared.name,
            type="instant",
            launch_template_configs=[launch],
            terminate_instances=True,
            tags=tags,
            opts=self._child(depends_on=list(self._fsx_rules)),
            **priced,
        )

    def _delivery(self, prefix: str, stack: Stack, pool: ResolvedPool) -> None:
        """The pool's SSM document (launch script, environment, FSx mount) and the State
        Manager association that applies it to the pool's instances by tag, again whenever the
        document changes (it follows the document's latest version)."""
        bucket: pulumi.Input[str | None] = (
            self.bucket_name if pool.compile_cache and self.bucket_name is not None else None
        )
        fsx: pulumi.Input[Any] = (
            pulumi.Output.all(self.fsx.dns_name, self.fsx.mount_name) if self.fsx else None
        )
        content = pulumi.Output.all(bucket, fsx).apply(
            _document_renderer(stack, pool, self._node_script)
        )
        doc = aws.ssm.Document(
            f"{prefix}-install",
            document_type="Command",
            document_format="JSON",
            content=content,
            tags=stable_tags(stack.tags),
            opts=self._child(),
        )
        aws.ssm.Association(
            f"{prefix}-install",
            name=doc.name,
            document_version=doc.latest_version,
            targets=[
                {"key": naming.tag_filter(STACK_TAG), "values": [stack.name]},
                {"key": naming.tag_filter(POOL_LABEL), "values": [pool.name]},
            ],
            max_concurrency="100%",
            max_errors="0",
            compliance_severity="HIGH",
            opts=self._child(),
        )


def _document_renderer(
    stack: Stack, pool: ResolvedPool, node_script: NodeScript
) -> Callable[[list[Any]], str]:
    """Renders the pool's SSM document from (bucket, (FSx DNS, mount name))."""

    def render(a: list[Any]) -> str:
        bucket_value, fs = a
        sname, script = node_script(stack, pool, bucket_value)
        url = stack.compile_cache_url(pool.name, bucket_value) if bucket_value else None
        fsx = (fs[0], fs[1]) if fs else None
        text = install_script(stack, pool, sname, script, url, fsx)
        return ssm_document(text, stack.ssm_document_limit_bytes)

    return render


# ---------------------------------------------------------------------------------------
# The standalone program
# ---------------------------------------------------------------------------------------


def _cache_url(stack: Stack, pool: str, bucket: str) -> str:
    return stack.compile_cache_url(pool, bucket)


def build_standalone(stack: Stack, node_script: NodeScript) -> dict[str, Any]:
    """`components.program.build` for orchestration ec2: network, then the cluster."""

    name = stack.name
    top, partition, account_id = aws_context(stack)
    network = Network(naming.network(name), NetworkArgs.from_stack(stack), opts=top)
    cluster = StandaloneCluster(
        name,  # children are `<stack>-<pool>-lt`, `<stack>-<pool>-<rank>`: as the EKS pools
        StandaloneClusterArgs.from_stack(stack, network, account_id, partition, node_script),
        opts=top,
    )
    network.finish()  # its outputs: a standalone network has no ECR endpoints
    outputs: dict[str, Any] = {
        "region": stack.region,
        "vpcId": network.vpc_id,
        "securityGroupId": cluster.security_group_id,
        "instanceIds": cluster.instance_ids,
        "runCommands": {p.name: run_command(stack, p) for p in stack.pools},
    }
    if cluster.bucket_name is not None:
        bucket = cluster.bucket_name
        outputs["compileCacheBucket"] = bucket
        outputs["compileCacheUrls"] = {
            p.name: bucket.apply(partial(_cache_url, stack, p.name))
            for p in stack.pools
            if p.compile_cache
        }
    if cluster.fsx is not None:
        outputs["fsxFileSystemId"] = cluster.fsx.file_system_id
        outputs["fsxDnsName"] = cluster.fsx.dns_name
        outputs["fsxMountName"] = cluster.fsx.mount_name
    return outputs
