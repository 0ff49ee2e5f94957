"""StandaloneCluster (orchestration: ec2): N instances per pool on the Neuron DLAMI or the AWS
Deep Learning AMI (GPU), no Kubernetes.

Per pool: a launch template with the DLAMI (public SSM parameter from the device kind), every
EFA interface (card 0 device index 0 type 'efa', the others device index 1 in the pool's
style), IMDSv2 required, the pool's capacity reservation or block, and a cluster placement
group when `pool.placement_group`; then `pool.nodes` instances in the pool zone's one private
subnet, each with an encrypted gp3 root volume and user data that installs the rendered node
launch script and the node's rank and rendezvous environment (/etc/accelstack/env).

Access is through SSM Session Manager (instance profile with AmazonSSMManagedInstanceCore);
there is no SSH ingress unless the spec names a key pair and source CIDRs (then a warning).
The instance profile may also read and write the compile-cache prefix of one bucket, nothing
else. The job starts with one command per node (`accelstack-run`) or one SSM Run Command
(the `runCommands` output).

Rendezvous: instance 0 of each pool is the head. Workers get its private IP through
`Output.apply` (so they are created after it); the head reads its own address from IMDSv2 at
boot (an instance cannot reference its own IP in its user data).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import pulumi
import pulumi_aws as aws

from accelstack.components.common import (
    assume_role_policy,
    managed_policy_arn,
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
    POOL_LABEL,
    allow_all_within,
    capacity_reservation,
    efa_network_interfaces,
)
from accelstack.components.provider import aws_context
from accelstack.resolve import ResolvedPool, Stack

ENV_FILE = "/etc/accelstack/env"
SCRIPT_DIR = "/opt/accelstack"
RUN_COMMAND = "/usr/local/bin/accelstack-run"
FSX_MOUNT = "/fsx"
RANK_TAG = "accelstack.io/node-rank"
INSTANCE_ROLE_POLICIES = ("AmazonSSMManagedInstanceCore",)
#: EC2 refuses user data over 16 KiB (before base64).
USER_DATA_LIMIT = 16 * 1024
#: Stands in for the head address while checking the user-data size before deploy.
HEAD_PLACEHOLDER = "255.255.255.255"
#: What a worker's env says when the head's private IP is not known (the offline plan's mocks
#: give instances no IP; in a deploy the IP is always known when the user data is built).
HEAD_UNKNOWN = "HEAD-PRIVATE-IP-UNKNOWN"
#: Egress the nodes need: HTTPS (SSM, S3, package mirrors) and HTTP (package mirrors), through
#: the NAT gateway. Traffic between nodes is covered by the self rules.
EGRESS_PORTS = (443, 80)


# ---------------------------------------------------------------------------------------
# Pure helpers
# ---------------------------------------------------------------------------------------


def standalone_network_args(stack: Stack) -> NetworkArgs:
    """The issue-3 network, cut to the pools' zones: one private subnet per pool zone (EFA
    traffic does not cross zones; there is no control plane that needs a second zone)."""
    return replace(NetworkArgs.from_stack(stack), zone_ids=stack.zone_ids)


def instance_name(stack_name: str, pool: str, rank: int) -> str:
    return f"{stack_name}-{pool}-{rank}"


def market_options(pool: ResolvedPool) -> dict[str, Any] | None:
    """Instance market for standalone instances (EKS sets spot through the node group)."""
    if pool.purchase_option == "capacity-block":
        return {"market_type": "capacity-block"}
    if pool.purchase_option == "spot":
        return {
            "market_type": "spot",
            "spot_options": {
                "spot_instance_type": "one-time",
                "instance_interruption_behavior": "terminate",
            },
        }
    return None


def network_interfaces(
    pool: ResolvedPool, subnet_id: pulumi.Input[str], security_groups: list[pulumi.Input[str]]
) -> list[dict[str, Any]]:
    """Every EFA interface of the pool, in its subnet and security groups (empty without EFA)."""
    return [
        {**nic, "subnet_id": subnet_id, "security_groups": security_groups}
        for nic in efa_network_interfaces(pool)
    ]


def root_block_device(size_gib: int) -> dict[str, Any]:
    """The root volume on the instance itself: it resizes whatever device the AMI boots from
    (/dev/sda1 on the Ubuntu Neuron DLAMI, /dev/xvda on Amazon Linux)."""
    return {
        "volume_size": size_gib,
        "volume_type": "gp3",
        "encrypted": True,
        "delete_on_termination": True,
    }


def ssh_access(stack: Stack) -> tuple[str | None, tuple[str, ...], str | None]:
    """(key pair, SSH source CIDRs, warning). Off by default: SSM Session Manager only."""
    sa = stack.spec.standalone
    if not sa.ssh_key_name:
        return None, (), None
    if sa.ssh_cidrs:
        warning = (
            f"{stack.name}: SSH (tcp/22) is open from {', '.join(sa.ssh_cidrs)} with key pair "
            f"'{sa.ssh_key_name}' (standalone.ssh_*); SSM Session Manager needs no open port"
        )
    else:
        warning = (
            f"{stack.name}: key pair '{sa.ssh_key_name}' is installed but no SSH ingress is "
            "open (standalone.ssh_cidrs is empty); reach nodes with SSM Session Manager"
        )
    return sa.ssh_key_name, sa.ssh_cidrs, warning


def node_env(
    stack: Stack, pool: ResolvedPool, rank: int, head_addr: str | None, cache_url: str | None
) -> dict[str, str]:
    """/etc/accelstack/env for one node, read by the rendered launch script (standalone mode).
    Rank 0 is the head: it reads its own address from IMDSv2 at boot (see `user_data`), so
    its file has no ACCELSTACK_HEAD_ADDR here; workers get the head's private IP."""
    env = {
        "ACCELSTACK_STACK": stack.name,
        "ACCELSTACK_POOL": pool.name,
        "ACCELSTACK_ORCHESTRATOR": "standalone",
        "ACCELSTACK_NNODES": str(pool.nodes),
        "ACCELSTACK_NODE_RANK": str(rank),
        "ACCELSTACK_RDZV_PORT": str(stack.spec.workload.rdzv_port),
    }
    if rank > 0:
        env["ACCELSTACK_HEAD_ADDR"] = head_addr or HEAD_UNKNOWN
    if cache_url is not None:
        env["ACCELSTACK_COMPILE_CACHE_URL"] = cache_url
    return env


def launch_script(stack: Stack, pool: ResolvedPool, bucket: str | None) -> tuple[str, str]:
    """(file name, text) of the pool's node launch script, rendered by accelstack.render
    (imported here, lazily). Without the render module, a script that says so."""
    try:
        from accelstack.render import launch_script_name, render_node_script
    except ImportError:  # pragma: no cover - render ships with accelstack
        name = f"launch-{pool.name}.sh"
        text = (
            "#!/usr/bin/env bash\necho 'accelstack: no launch script was rendered "
            "(accelstack.render is not installed); run `accelstack render`' >&2\nexit 2\n"
        )
        return name, text
    return launch_script_name(pool), render_node_script(stack, pool, "standalone", bucket=bucket)


def _heredoc(path: str, text: str, mode: str, marker: str) -> str:
    if any(line == marker for line in text.splitlines()):
        raise ValueError(f"{path}: content contains the heredoc marker {marker}")
    body = text if text.endswith("\n") else text + "\n"
    return f"cat > {path} <<'{marker}'\n{body}{marker}\nchmod {mode} {path}\n"


def run_wrapper(script_path: str) -> str:
    """`accelstack-run`: load the node's environment, find torchrun, start the launch script."""
    return f"""#!/usr/bin/env bash
# accelstack-run: start this node's part of the job (run on every node, or through SSM).
set -euo pipefail
set -a
. {ENV_FILE}
set +a
if [[ -n "${{ACCELSTACK_VENV:-}}" ]]; then
  . "$ACCELSTACK_VENV/bin/activate"
elif ! command -v "${{ACCELSTACK_TORCHRUN:-torchrun}}" >/dev/null; then
  # DLAMIs keep PyTorch in a virtualenv: the newest Neuron one, else the GPU DLAMI's.
  for venv in $(ls -d /opt/aws_neuronx_venv_pytorch* 2>/dev/null | sort -V -r) /opt/pytorch; do
    if [[ -f "$venv/bin/activate" ]]; then . "$venv/bin/activate"; break; fi
  done
fi
command -v "${{ACCELSTACK_TORCHRUN:-torchrun}}" >/dev/null || {{
  echo "accelstack: torchrun not found; set ACCELSTACK_VENV=/path/to/venv or install PyTorch" >&2
  exit 2
}}
exec {script_path} "$@"
"""


def user_data(
    stack: Stack,
    pool: ResolvedPool,
    rank: int,
    head_addr: str | None,
    script_name: str,
    script: str,
    cache_url: str | None,
    fsx: tuple[str, str] | None = None,
) -> str:
    """The bash user data of one node (cloud-init runs it once, as root, at first boot)."""
    env = node_env(stack, pool, rank, head_addr, cache_url)
    env_text = "".join(f"{k}={shlex.quote(v)}\n" for k, v in env.items())
    script_path = f"{SCRIPT_DIR}/{script_name}"
    parts = [
        "#!/bin/bash\n",
        f"# accelstack standalone node: stack {stack.name}, pool {pool.name}, node {rank} of "
        f"{pool.nodes} ({pool.instance_type}).\n",
        "# Installs the launch script and the rank/rendezvous environment; starts nothing.\n",
        f"# Start the job: run `sudo {RUN_COMMAND}` on every node, or one SSM Run Command.\n",
        "set -euo pipefail\n",
        f"install -d -m 0755 /etc/accelstack {SCRIPT_DIR}\n",
        _heredoc(ENV_FILE, env_text, "0644", "ACCELSTACK_ENV_EOF"),
    ]
    if rank == 0:
        parts.append(
            "# head node: the rendezvous address is this node's own private IP (IMDSv2)\n"
            "imds_token=$(curl -sS -X PUT http://169.254.169.254/latest/api/token "
            "-H 'X-aws-ec2-metadata-token-ttl-seconds: 300')\n"
            'head_addr=$(curl -sS -H "X-aws-ec2-metadata-token: $imds_token" '
            "http://169.254.169.254/latest/meta-data/local-ipv4)\n"
            f'echo "ACCELSTACK_HEAD_ADDR=$head_addr" >> {ENV_FILE}\n'
        )
    parts += [
        _heredoc(script_path, script, "0755", "ACCELSTACK_SCRIPT_EOF"),
        _heredoc(RUN_COMMAND, run_wrapper(script_path), "0755", "ACCELSTACK_RUN_EOF"),
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
        parts.append(
            f"# FSx for Lustre at {FSX_MOUNT}\n"
            f"install -d -m 0755 {FSX_MOUNT}\n"
            f"echo {shlex.quote(f'{dns}@tcp:/{mount_name} {FSX_MOUNT} lustre defaults,noatime,flock,_netdev 0 0')} >> /etc/fstab\n"
            f"mount {FSX_MOUNT} || echo 'accelstack: FSx mount failed; retry with: sudo mount {FSX_MOUNT}' >&2\n"
        )
    text = "".join(parts)
    if len(text.encode()) > USER_DATA_LIMIT:
        raise ValueError(
            f"user data for {pool.name} node {rank} is {len(text.encode())} bytes; EC2 allows "
            f"{USER_DATA_LIMIT} (shorten workload.args or workload.env)"
        )
    return text


def run_command(stack: Stack, pool: ResolvedPool) -> str:
    """One SSM Run Command that starts the job on every node of the pool."""
    return (
        "aws ssm send-command --document-name AWS-RunShellScript "
        f"--region {stack.region} "
        f"--targets Key=tag:accelstack:stack,Values={stack.name} "
        f"Key=tag:{POOL_LABEL},Values={pool.name} "
        f'--parameters \'commands=["{RUN_COMMAND}"],executionTimeout=["172800"]\' '
        f"--max-concurrency {pool.nodes} --comment {shlex.quote(f'accelstack {stack.name} {pool.name}')}"
    )


def instance_tags(stack: Stack, pool: ResolvedPool, rank: int) -> dict[str, str]:
    return {
        **stable_tags(stack.tags, instance_name(stack.name, pool.name, rank)),
        POOL_LABEL: pool.name,
        RANK_TAG: str(rank),
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
    partition: pulumi.Input[str] = "aws"

    @classmethod
    def from_stack(
        cls,
        stack: Stack,
        network: Network,
        account_id: pulumi.Input[str],
        partition: pulumi.Input[str],
    ) -> StandaloneClusterArgs:
        return cls(
            stack=stack,
            vpc_id=network.vpc_id,
            subnet_ids=network.private_subnet_ids,
            account_id=account_id,
            partition=partition,
        )


class StandaloneCluster(pulumi.ComponentResource):
    """Instances per pool, their security group, instance profile and compile cache."""

    security_group_id: pulumi.Output[str]
    instance_ids: dict[str, list[pulumi.Output[str]]]
    head_addresses: dict[str, pulumi.Output[str]]
    private_ips: dict[str, list[pulumi.Output[str]]]
    bucket_name: pulumi.Output[str] | None
    fsx: FileSystem | None

    def __init__(
        self, name: str, args: StandaloneClusterArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("accelstack:standalone:StandaloneCluster", name, None, opts)
        stack = args.stack
        tags = stable_tags(stack.tags)
        key_name, ssh_cidrs, warning = ssh_access(stack)
        if warning:
            pulumi.log.warn(warning, resource=self)
        self.security_group_id = self._security_group(name, args, tags, ssh_cidrs)
        self.bucket_name = self._cache_bucket(name, args, tags)
        profile = self._instance_profile(name, args, tags)
        self.fsx = self._filesystem(name, args)
        self.instance_ids, self.head_addresses, self.private_ips = {}, {}, {}
        for pool in stack.pools:
            self._pool(name, args, pool, profile, key_name, tags)
        self.register_outputs(
            {
                "securityGroupId": self.security_group_id,
                "instanceIds": self.instance_ids,
                "headAddresses": self.head_addresses,
            }
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
            f"{name}-cache",
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
                policy_arn=pulumi.Output.from_input(args.partition).apply(
                    lambda part, p=policy: managed_policy_arn(part, p)
                ),
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
        return FileSystem(f"{name}-fsx", fs_args, opts=self._child())

    def _pool(
        self,
        name: str,
        args: StandaloneClusterArgs,
        pool: ResolvedPool,
        profile: aws.iam.InstanceProfile,
        key_name: str | None,
        tags: dict[str, str],
    ) -> None:
        prefix = f"{name}-{pool.name}"
        subnet = args.subnet_ids[pool.zone_id]
        groups: list[pulumi.Input[str]] = [self.security_group_id]
        nics = network_interfaces(pool, subnet, groups)
        lt = self._launch_template(prefix, pool, profile, key_name, nics, tags)
        _check_user_data_fits(args.stack, pool, self.fsx is not None)
        nodes = _PoolNodes(pool, lt, nics, subnet, groups, tags)
        instances = self._instances(name, args.stack, nodes)
        self.instance_ids[pool.name] = [i.id for i in instances]
        self.private_ips[pool.name] = [i.private_ip for i in instances]
        self.head_addresses[pool.name] = instances[0].private_ip

    def _placement(
        self, prefix: str, pool: ResolvedPool, tags: dict[str, str]
    ) -> dict[str, Any] | None:
        """A cluster placement group for the pool when `pool.placement_group`."""
        if not pool.placement_group:
            return None
        pg = aws.ec2.PlacementGroup(
            f"{prefix}-pg", strategy="cluster", tags=tags, opts=self._child()
        )
        return {"group_name": pg.name}

    def _launch_template(
        self,
        prefix: str,
        pool: ResolvedPool,
        profile: aws.iam.InstanceProfile,
        key_name: str | None,
        nics: list[dict[str, Any]],
        tags: dict[str, str],
    ) -> aws.ec2.LaunchTemplate:
        """The pool's launch template: DLAMI, EFA interfaces, IMDSv2, capacity, placement."""
        ami = aws.ssm.get_parameter_output(
            name=str(pool.device.standalone_ami_parameter),
            opts=pulumi.InvokeOutputOptions(parent=self),
        ).insecure_value
        placement = self._placement(prefix, pool, tags)
        return aws.ec2.LaunchTemplate(
            f"{prefix}-lt",
            name=f"{prefix}-lt",
            description=f"accelstack standalone pool {pool.name} ({pool.instance_type})",
            image_id=ami,
            instance_type=pool.instance_type,
            key_name=key_name,
            iam_instance_profile={"arn": profile.arn},
            update_default_version=True,
            metadata_options=IMDS,
            network_interfaces=nics or None,
            placement=placement,
            capacity_reservation_specification=capacity_reservation(pool),
            instance_market_options=market_options(pool),
            tags=tags,
            opts=self._child(),
        )

    def _instances(self, name: str, stack: Stack, nodes: _PoolNodes) -> list[aws.ec2.Instance]:
        """`pool.nodes` instances from the launch template; workers wait for the head's IP."""
        pool = nodes.pool
        bucket: pulumi.Input[str | None] = (
            self.bucket_name if pool.compile_cache and self.bucket_name is not None else None
        )
        fsx: pulumi.Input[Any] = (
            pulumi.Output.all(self.fsx.dns_name, self.fsx.mount_name) if self.fsx else None
        )
        lt = nodes.launch_template
        instances: list[aws.ec2.Instance] = []
        for rank in range(pool.nodes):
            head_ip: pulumi.Input[str | None] = instances[0].private_ip if rank else None
            data = pulumi.Output.all(head_ip, bucket, fsx).apply(
                _user_data_renderer(stack, pool, rank)
            )
            inst = aws.ec2.Instance(
                instance_name(name, pool.name, rank),
                launch_template={"name": lt.name, "version": lt.latest_version.apply(str)},
                instance_type=pool.instance_type,
                subnet_id=None if nodes.nics else nodes.subnet,
                vpc_security_group_ids=None if nodes.nics else nodes.groups,
                root_block_device=root_block_device(pool.root_volume_gib),
                user_data=data,
                tags=instance_tags(stack, pool, rank),
                volume_tags=nodes.tags,
                opts=self._child(),
            )
            instances.append(inst)
        return instances


@dataclass(frozen=True)
class _PoolNodes:
    """What a pool's instances are created from."""

    pool: ResolvedPool
    launch_template: aws.ec2.LaunchTemplate
    nics: list[dict[str, Any]]
    subnet: pulumi.Input[str]
    groups: list[pulumi.Input[str]]
    tags: dict[str, str]


def _check_user_data_fits(stack: Stack, pool: ResolvedPool, with_fsx: bool) -> None:
    """Fail before deploy when the user data cannot fit (placeholder head and bucket)."""
    script_name, _ = launch_script(stack, pool, stack.compile_cache_bucket or "bucket")
    user_data(
        stack,
        pool,
        0 if pool.nodes == 1 else 1,
        HEAD_PLACEHOLDER,
        script_name,
        launch_script(stack, pool, "b" * 63)[1],
        "s3://" + "b" * 63 + "/" + stack.compile_cache_prefix_for(pool.name),
        ("fs-0123456789abcdef0.fsx.region.amazonaws.com", "abcdefgh") if with_fsx else None,
    )


def _user_data_renderer(stack: Stack, pool: ResolvedPool, rank: int) -> Callable[[list[Any]], str]:
    """Renders one node's user data from (head IP, bucket, (FSx DNS, mount name))."""

    def render(a: list[Any]) -> str:
        head, bucket_value, fs = a
        sname, script = launch_script(stack, pool, bucket_value)
        url = stack.compile_cache_url(pool.name, bucket_value) if bucket_value else None
        return user_data(
            stack,
            pool,
            rank,
            head,
            sname,
            script,
            url,
            (fs[0], fs[1]) if fs else None,
        )

    return render


# ---------------------------------------------------------------------------------------
# The standalone program
# ---------------------------------------------------------------------------------------


def build_standalone(stack: Stack) -> dict[str, Any]:
    """`components.program.build` for orchestration ec2: network, then the cluster."""

    name = stack.name
    top, partition, account_id = aws_context(stack)
    network = Network(f"{name}-network", standalone_network_args(stack), opts=top)
    cluster = StandaloneCluster(
        name,  # children are `<stack>-<pool>-lt`, `<stack>-<pool>-<rank>`: as the EKS pools
        StandaloneClusterArgs.from_stack(stack, network, account_id, partition),
        opts=top,
    )
    outputs: dict[str, Any] = {
        "region": stack.region,
        "vpcId": network.vpc_id,
        "securityGroupId": cluster.security_group_id,
        "instanceIds": cluster.instance_ids,
        "privateIps": cluster.private_ips,
        "headAddresses": cluster.head_addresses,
        "runCommands": {p.name: run_command(stack, p) for p in stack.pools},
    }
    if cluster.bucket_name is not None:
        bucket = cluster.bucket_name
        outputs["compileCacheBucket"] = bucket
        outputs["compileCacheUrls"] = {
            p.name: bucket.apply(lambda b, p=p.name: stack.compile_cache_url(p, b))
            for p in stack.pools
            if p.compile_cache
        }
    if cluster.fsx is not None:
        outputs["fsxFileSystemId"] = cluster.fsx.file_system_id
        outputs["fsxDnsName"] = cluster.fsx.dns_name
        outputs["fsxMountName"] = cluster.fsx.mount_name
    return outputs
