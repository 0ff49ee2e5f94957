"""The spec's shape: pydantic v2 models (unknown keys refused, ranges enforced) and the
names and patterns the rules share. The rules that hold a spec to the catalog run on the
resolved stack (`accelstack.resolve`: the spec rules, then the stack rules)."""

from __future__ import annotations

import re
import unicodedata
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    field_validator,
    model_validator,
)

from accelstack.errors import shown, text_problem
from accelstack.naming import STACK_TAG

#: How a pool's nodes are bought: the rows of the catalog's purchase table
#: (accelstack/catalog/purchase_options.yaml), which says what each means to every layer
#: (tests/catalog/test_purchase.py holds the two to the same names).
PurchaseOption = Literal[
    "on-demand", "spot", "savings-plan-1y", "savings-plan-3y", "capacity-block", "reservation"
]
NAME_RE = r"^[a-z][a-z0-9-]{1,38}[a-z0-9]$"
POOL_RE = r"^[a-z]([a-z0-9-]{0,22}[a-z0-9])?$"
RESERVATION_RE = r"^cr-[0-9a-f]{8,17}$"
#: An EC2 placement group name (up to 255 ASCII characters; kept to a safe subset here)
PLACEMENT_GROUP_RE = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$"
BUCKET_RE = r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$"
ENV_NAME_RE = r"^[A-Za-z_][A-Za-z0-9_]*$"
#: Env var names that look like credentials are refused: secrets never go into rendered files.
SECRET_NAME_RE = re.compile(r"(SECRET|PASSWORD|PASSWD|TOKEN|CREDENTIAL|PRIVATE_KEY|API_KEY)", re.I)
OPEN_CIDRS = {"0.0.0.0/0", "::/0"}
#: Where FSx for Lustre is mounted on the nodes (EKS pods and standalone instances).
FSX_MOUNT_PATH = "/fsx"
#: Shell variables the rendered node script uses itself, and variables that change how bash
#: runs it: workload.env may not set them (it may override every exported setting, e.g.
#: NCCL_DEBUG).
RESERVED_ENV_NAMES = frozenset(
    {
        # the script's own variables (templates/node-base.sh.j2, neuron-node.sh.j2)
        "orchestrator",
        "nnodes",
        "node_rank",
        "head_addr",
        "rdzv_port",
        "rdzv_id",
        "slurm_hosts",
        "is_host",
        "rdzv_timeout",
        "torchrun_bin",
        "torchrun_args",
        "entrypoint",
        "workload_args",
        "cache_url_default",
        # where a node sits in the job: read by the script from the orchestrator (PyTorchJob
        # sets WORLD_SIZE/RANK/MASTER_ADDR/MASTER_PORT) and set by torchrun for each worker
        # (https://pytorch.org/docs/stable/elastic/run.html, "Environment Variables"); a value
        # baked into the script would give every node the same rank
        "RANK",
        "LOCAL_RANK",
        "GROUP_RANK",
        "ROLE_RANK",
        "ROLE_NAME",
        "NODE_RANK",
        "WORLD_SIZE",
        "LOCAL_WORLD_SIZE",
        "GROUP_WORLD_SIZE",
        "ROLE_WORLD_SIZE",
        "NNODES",
        "NPROC_PER_NODE",
        "MASTER_ADDR",
        "MASTER_PORT",
        # bash: read-only or special variables (GNU Bash Reference Manual, 5.1 "Bourne Shell
        # Variables" and 5.2 "Bash Variables",
        # https://www.gnu.org/software/bash/manual/html_node/Bash-Variables.html)
        "BASH",
        "BASHOPTS",
        "BASHPID",
        "CDPATH",
        "DIRSTACK",
        "ENV",
        "EPOCHREALTIME",
        "EPOCHSECONDS",
        "EUID",
        "FUNCNAME",
        "FUNCNEST",
        "GLOBIGNORE",
        "GROUPS",
        "HISTCMD",
        "HOSTNAME",
        "HOSTTYPE",
        "IFS",
        "LINENO",
        "MACHTYPE",
        "MAPFILE",
        "OLDPWD",
        "OPTARG",
        "OPTERR",
        "OPTIND",
        "OSTYPE",
        "PATH",
        "PIPESTATUS",
        "POSIXLY_CORRECT",
        "PPID",
        "PS4",
        "PWD",
        "RANDOM",
        "REPLY",
        "SECONDS",
        "SHELLOPTS",
        "SHLVL",
        "SRANDOM",
        "UID",
    }
)
#: Name prefixes workload.env may not use: the scripts' own run-time overrides (ACCELSTACK_*),
#: what they read from Slurm (SLURM_*), torchrun's environment form of its options (PET_*) and
#: its agent variables (TORCHELASTIC_*), and bash's own BASH_* variables.
RESERVED_ENV_PREFIXES = ("ACCELSTACK_", "SLURM_", "PET_", "TORCHELASTIC_", "BASH_")
#: Pool names the stack uses for its own resources (the EKS system node group is
#: "<stack>-system", a pool is "<stack>-<pool>").
RESERVED_POOL_NAMES = frozenset({"system"})
#: Container image reference, after the grammar of distribution/reference
#: (https://github.com/distribution/reference/blob/v0.5.0/reference.go, lines 4-26):
#: [domain[:port]/]path[:tag][@algorithm:hex]; this spec also requires a tag or a digest.
_DOMAIN = r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::[0-9]+)?"
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
IMAGE_RE = re.compile(
    rf"(?P<name>(?:{_DOMAIN}/)?{_COMPONENT}(?:/{_COMPONENT})*)"
    rf"(?::(?P<tag>{_TAG}))?(?:@(?P<digest>{_DIGEST}))?",
    re.ASCII,
)
#: distribution/reference NameTotalLengthMax
IMAGE_NAME_MAX = 255


def _text(value: str) -> str:
    """Every spec string: no control characters (NUL, ESC, newline...) and no lone surrogates,
    which break rendered scripts, YAML and the one-line messages."""
    problem = text_problem(value)
    if problem:
        raise ValueError(problem)
    return value


Text = Annotated[str, AfterValidator(_text)]


def _tag_char(ch: str) -> bool:
    """AWS tag keys and values: letters, digits, spaces and + - = . _ : / @
    (https://docs.aws.amazon.com/tag-editor/latest/userguide/tagging.html, "Tag naming
    limits and requirements")."""
    return ch in "+-=._:/@ " or unicodedata.category(ch)[0] in "LN"


def _image(value: str) -> str:
    m = IMAGE_RE.fullmatch(value)
    if m is None or len(m.group("name")) > IMAGE_NAME_MAX:
        raise ValueError(
            "is not a container image reference: expected [registry/]repository:tag or "
            "[registry/]repository@sha256:<digest> (lowercase repository path, name at most "
            f"{IMAGE_NAME_MAX} characters)"
        )
    if m.group("tag") is None and m.group("digest") is None:
        raise ValueError(
            f"has no tag or digest; pin the image, e.g. {shown(value + ':TAG')} "
            "(an implicit 'latest' changes under you)"
        )
    return value


class Strict(BaseModel):
    # allow_inf_nan=False: .inf and .nan are refused everywhere (they pass every bound)
    model_config = ConfigDict(
        extra="forbid", frozen=True, validate_default=True, allow_inf_nan=False
    )


class Reservation(Strict):
    """One of several capacity reservations or Capacity Blocks behind a pool."""

    id: Annotated[str, Field(pattern=RESERVATION_RE)] = Field(description="cr-... id")
    nodes: int = Field(ge=1, description="instances the pool launches into this reservation")


class Purchase(Strict):
    """How a pool's instances are bought."""

    option: PurchaseOption = Field(
        "on-demand",
        description="on-demand, spot, savings-plan-1y, savings-plan-3y, capacity-block "
        "(EC2 Capacity Block for ML) or reservation (on-demand capacity reservation)",
    )
    reservation_id: Annotated[str, Field(pattern=RESERVATION_RE)] | None = Field(
        None, description="cr-... id; required for capacity-block and reservation"
    )
    reservations: tuple[Reservation, ...] = Field(
        (),
        description="several reservations or Capacity Blocks behind one pool, instead of "
        "reservation_id: each its id and node count (they add up to the pool's nodes + "
        "spare_nodes); one managed node group per reservation",
    )
    instances: int | None = Field(
        None,
        ge=1,
        description="instances the capacity block or reservation holds (default: the pool's "
        "nodes); nodes + spare_nodes must fit in it",
    )
    placement_group: Annotated[str, Field(pattern=PLACEMENT_GROUP_RE)] | None = Field(
        None,
        description="the existing cluster placement group the on-demand capacity reservation "
        "was created in (option reservation): the pool launches into it, as instances must to "
        "use such a reservation; accelstack creates no placement group for the pool",
    )


class Pool(Strict):
    """One group of identical accelerator nodes."""

    name: str = Field(pattern=POOL_RE, description="pool name, used in resource names")
    instance_type: Text = Field(description="an accelerated type from the catalog")
    nodes: int = Field(
        ge=1,
        description="node count; a pool spans several EKS managed node groups when it has more "
        "nodes than one group allows (catalog scale.yaml limits)",
    )
    purchase: Purchase = Field(default_factory=Purchase, description="how nodes are bought")
    efa: bool | None = Field(None, description="EFA on/off; default on where the type has it")
    efa_interface_style: Literal["efa", "efa-only"] | None = Field(
        None,
        description="interface type on network cards 1..N-1: 'efa' (EFA + ENA) or "
        "'efa-only' (saves IP addresses); card 0 is always 'efa'",
    )
    placement_groups: Literal["one", "per-launch"] = Field(
        "one",
        description="cluster placement groups accelstack creates for an EFA pool on no "
        "reservation: 'one' for the whole pool, or 'per-launch': the node groups one "
        "account launch bucket starts at once (2 x 450 nodes) share a placement group and "
        "launch template of their own, for on-demand pools of more than 900 nodes (catalog "
        "scale.yaml placement; plans more slowly, docs/scale.md)",
    )
    root_volume_gib: int | None = Field(None, ge=50, le=16384, description="gp3 root volume")
    availability_zone: Text | None = Field(
        None,
        description="zone name or id for this pool; default: the stack's, else the first "
        "zone the catalog says offers the type",
    )
    logical_cores: Literal[1, 2] | None = Field(
        None, description="Neuron logical NeuronCore config (LNC); default from the family"
    )
    compile_cache: bool | None = Field(
        None, description="use the stack's Neuron compile cache; default on for Neuron pools"
    )
    spare_nodes: int = Field(
        0,
        ge=0,
        le=64,
        description="extra running nodes beyond `nodes`, so a job restarts on a spare while "
        "node auto repair replaces a failed node (billed like the others)",
    )
    container_storage: Literal["instance_store_raid0", "root_volume"] | None = Field(
        None,
        description="where containerd and kubelet keep images and state (orchestration eks): "
        "'instance_store_raid0' (nodeadm spec.instance.localStorage.strategy RAID0: one "
        "array of the type's NVMe instance-store disks, for types with two or more, catalog "
        "scale.yaml instance_store) or 'root_volume' (the gp3 root volume). Unset: the root "
        "volume, as specs written before this setting boot; `new` and `init` write "
        "instance_store_raid0 where the type allows it. Changing it rolls the pool's nodes once",
    )
    labels_at_boot: bool | None = Field(
        None,
        description="orchestration eks: nodes register with their scheduling labels too (the "
        "device-plugin chart's affinity label such as nvidia.com/gpu.present, the Neuron "
        "allocation mode) in nodeadm's kubelet flags, so the device plugin or DRA driver starts "
        "the moment a node joins. Unset or false: only the pool's own labels there, as specs "
        "written before this setting boot; EKS applies the node group's labels a little later "
        "with a custom AMI and the plugin starts then. `new` and `init` write true for a new "
        "stack. Changing it rolls the pool's nodes once",
    )


class SystemNodes(Strict):
    """The small CPU node group that runs cluster add-ons (untainted)."""

    instance_type: Text | None = Field(None, description="CPU type for cluster add-ons")
    nodes: int | None = Field(None, ge=1, le=20, description="system node count")
    root_volume_gib: int | None = Field(None, ge=20, le=2048, description="gp3 root volume")


class Cluster(Strict):
    """EKS control plane settings (orchestration: eks)."""

    kubernetes_version: Text | None = Field(None, description="EKS Kubernetes version")
    endpoint_public_access: bool = Field(
        True,
        description="public API endpoint, limited to public_access_cidrs (the same `pulumi up` "
        "installs the device plugins through it); the private endpoint is always on",
    )
    public_access_cidrs: tuple[Text, ...] = Field(
        (),
        description="the deployer's egress CIDRs (laptop, CI runner) allowed to reach the "
        "public endpoint; 0.0.0.0/0 is refused",
    )
    admin_principal_arns: tuple[Text, ...] = Field(
        (),
        description="IAM principals given cluster-admin through EKS access entries; include "
        "the identity that runs `pulumi up` unless creator_admin is true",
    )
    creator_admin: bool = Field(
        False,
        description="also give the identity that creates the cluster cluster-admin "
        "(bootstrapClusterCreatorAdminPermissions)",
    )
    support_type: Literal["STANDARD", "EXTENDED"] = Field(
        "STANDARD",
        description="EKS upgrade policy: STANDARD upgrades the cluster when standard support "
        "ends; EXTENDED keeps the version in paid extended support",
    )
    system_nodes: SystemNodes = Field(
        default_factory=SystemNodes, description="CPU node group for add-ons"
    )


class Standalone(Strict):
    """Settings for orchestration: ec2 (standalone instances on DLAMIs)."""

    ssh_key_name: Text | None = Field(None, description="EC2 key pair; default none (SSM only)")
    ssh_cidrs: tuple[Text, ...] = Field((), description="source CIDRs for SSH; needs ssh_key_name")
    install_slurm: bool = Field(False, description="also render an sbatch file")


class Network(Strict):
    """VPC: create one (private + public subnets, NAT) or use existing ids."""

    mode: Literal["create", "existing"] = Field("create", description="create a VPC or use one")
    vpc_cidr: Text | None = Field(None, description="CIDR for a created VPC")
    vpc_id: str | None = Field(None, pattern=r"^vpc-[0-9a-f]{8,17}$", description="existing VPC")
    private_subnet_ids: tuple[Annotated[str, Field(pattern=r"^subnet-[0-9a-f]{8,17}$")], ...] = (
        Field((), description="existing private subnets (nodes go here)")
    )
    public_subnet_ids: tuple[Annotated[str, Field(pattern=r"^subnet-[0-9a-f]{8,17}$")], ...] = (
        Field((), description="existing public subnets (load balancers)")
    )
    private_subnet_addresses: dict[Text, Annotated[int, Field(ge=0)]] = Field(
        default_factory=dict,
        description="existing VPC: free addresses of the private subnets in each zone (zone "
        "id or name -> count, e.g. the sum of DescribeSubnets AvailableIpAddressCount); when "
        "the VPC CNI defaults do not fit, the stack applies WARM_IP_TARGET/MINIMUM_IP_TARGET "
        "(scale.yaml address_space); unknown zones are checked by `accelstack preflight`",
    )
    single_nat_gateway: bool = Field(
        False,
        description="one NAT gateway for every zone (cheaper hourly, but cross-zone traffic "
        "pays inter-AZ data charges); default: one per zone in use",
    )
    ecr_endpoints: bool = Field(
        False,
        description="existing VPC: create the ECR api/dkr interface endpoints (private DNS, "
        "in the private subnets' zones, HTTPS from the nodes only) and the ECR Public "
        "pull-through cache rule, as a created VPC gets them for large pools (catalog "
        "scale.yaml image_delivery); off by default, since the VPC may have them already; "
        "private DNS needs the VPC's DNS support and hostnames on",
    )


def key_prefix(v: str | None) -> str | None:
    """An S3 key prefix: letters, digits, '.', '_', '-' and '/', ending in '/'."""
    if v is None:
        return v
    if not re.fullmatch(r"[A-Za-z0-9._/-]{1,200}", v) or v.startswith("/") or ".." in v:
        raise ValueError("must be letters, digits, '.', '_', '-' and '/', not starting with '/'")
    return v if v.endswith("/") else v + "/"


class CompileCache(Strict):
    """Neuron compile cache in S3 (NEURON_COMPILE_CACHE_URL)."""

    bucket: Annotated[str, Field(pattern=BUCKET_RE)] | None = Field(
        None, description="existing bucket to use; default: create one for the stack"
    )
    prefix: Text | None = Field(None, description="key prefix; each pool gets PREFIX/POOL/")
    expire_days: int | None = Field(None, ge=1, le=3650, description="expire stale objects")

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, v: str | None) -> str | None:
        return key_prefix(v)


class Storage(Strict):
    """Optional shared file system: FSx for Lustre in the workload pool's zone."""

    fsx_lustre_gib: int | None = Field(
        None, ge=1200, le=1_000_000, description="FSx for Lustre capacity (1200 or n x 2400)"
    )
    fsx_throughput_per_tib: Literal[125, 250, 500, 1000] | None = Field(
        None, description="MB/s per TiB (PERSISTENT_2)"
    )

    @field_validator("fsx_lustre_gib")
    @classmethod
    def _fsx_size(cls, v: int | None) -> int | None:
        if v is not None and v != 1200 and v % 2400:
            raise ValueError("must be 1200 or a multiple of 2400 (FSx PERSISTENT_2 sizes)")
        return v


class Jobs(Strict):
    """The job layer of an EKS stack: the controller the stack installs, the manifest `render`
    lists first, optional Kueue queueing, and accelerator metrics."""

    controller: Text | None = Field(
        None,
        description="job controller the stack installs: trainer (Kubeflow Trainer v2 with "
        "JobSet, default), pytorchjob (legacy Training Operator v1) or none",
    )
    version: Text | None = Field(
        None, description="the controller's version; must be the catalog's pinned one"
    )
    kind: Literal["trainjob", "pytorchjob", "job"] | None = Field(
        None,
        description="the manifest render lists first (default: the controller's own kind; "
        "job: the indexed batch/v1 Job, which needs no controller)",
    )
    kueue: bool = Field(
        False, description="install Kueue: queueing and all-or-nothing admission, one queue"
    )
    topology_aware: bool = Field(
        False,
        description="with kueue: Kueue topology-aware scheduling from the network-topology "
        "node labels EKS sets (catalog scale.yaml topology_labels): a job's pods are packed "
        "under the fewest network nodes Kueue can find (preferred, not required)",
    )
    metrics: bool = Field(
        True,
        description="Amazon CloudWatch Observability add-on: GPU, Neuron and EFA metrics (billed)",
    )


class Checkpoint(Strict):
    """Durable checkpoints: an S3 prefix per stack (and FSx linked to it when storage asks for
    FSx), reachable by every workload pod through EKS Pod Identity."""

    bucket: Annotated[str, Field(pattern=BUCKET_RE)] | None = Field(
        None, description="existing bucket to use; default: create <stack>-ckpt-<account>"
    )
    bucket_region: Text | None = Field(
        None,
        description="region of an existing bucket (preflight checks it); must be the stack's",
    )
    prefix: Text | None = Field(
        None, description="key prefix; each job writes under PREFIX/JOB/ (default from catalog)"
    )
    write_minutes: float | None = Field(
        None,
        ge=1,
        le=240,
        description="a full checkpoint must be written within this time (default from the "
        "catalog); picks the FSx throughput tier, refused when the storage cannot meet it",
    )

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, v: str | None) -> str | None:
        return key_prefix(v)


class Model(Strict):
    """The model being trained (sizes drive the estimate and the memory fit)."""

    @property
    def compute_params_billion(self) -> float:
        """Parameters a token passes through: the active ones of a mixture of experts."""
        return self.active_params_billion or self.params_billion

    @property
    def expert_params_billion(self) -> float:
        """The experts' parameters the memory fit shards across workload.expert_parallel:
        all but the active ones (assumption: the active parameters stand for the shared,
        non-expert part; the routed experts active per token are a small share of the total)."""
        if self.active_params_billion is None:
            return 0.0
        return self.params_billion - self.active_params_billion

    name: Text | None = Field(None, max_length=64, description="label for reports")
    params_billion: float = Field(
        gt=0, le=10_000, description="parameters, in billions (a mixture of experts: all of them)"
    )
    active_params_billion: float | None = Field(
        None,
        gt=0,
        le=10_000,
        description="mixture of experts: parameters active per token, in billions (FLOPs and "
        "the dense rate's size); params_billion (all experts) stays the memory fit's size",
    )
    layers: int | None = Field(None, ge=1, le=1000, description="for the attention FLOPs term")
    hidden_size: int | None = Field(None, ge=64, le=131_072, description="model width")
    heads: int | None = Field(
        None,
        ge=1,
        le=4096,
        description="attention query heads (with head_dim: the attention width)",
    )
    head_dim: int | None = Field(
        None,
        ge=1,
        le=4096,
        description="attention head width; heads x head_dim is the attention FLOPs' width "
        "(default: hidden_size). Multi-head latent attention: the mean of the query-key and value "
        "widths",
    )
    attention_layers: int | None = Field(
        None,
        ge=0,
        le=1000,
        description="layers with full causal attention (default: every layer; leave out "
        "sliding-window layers)",
    )
    experts: int | None = Field(
        None, ge=1, le=65_536, description="mixture of experts: routed experts per MoE layer"
    )
    experts_per_token: int | None = Field(
        None, ge=1, le=1024, description="mixture of experts: routed experts per token (top-k)"
    )
    expert_hidden_size: int | None = Field(
        None, ge=1, le=1_048_576, description="mixture of experts: one expert's MLP width"
    )
    moe_layers: int | None = Field(
        None,
        ge=0,
        le=1000,
        description="mixture of experts: layers with experts (default: every layer)",
    )


class Workload(Strict):
    """The training job: what runs, on which pool, how much data, at what precision."""

    pool: Text | None = Field(None, description="the pool the job runs on; default: the only pool")
    model: Model = Field(description="model size")
    tokens_billion: float = Field(gt=0, le=1_000_000, description="training tokens, billions")
    sequence_length: int | None = Field(
        None, ge=128, le=1_048_576, description="tokens per sequence (attention FLOPs term)"
    )
    precision: Literal["bf16", "fp16", "fp8"] = Field(
        "bf16", description="training precision; selects the peak FLOPS figure"
    )
    global_batch_size: int | None = Field(None, ge=1, le=1_048_576, description="sequences")
    stack: Text | None = Field(
        None,
        description="training stack (throughput.yaml training_stacks: torchtitan, nemo, "
        "automodel, llm-foundry, nxd, torchneuron, ...): selects the step model's rates of that "
        "stack; unset: the centre with the stacks' spread",
    )
    context_parallel: int | None = Field(
        None,
        ge=1,
        le=1024,
        description="context parallelism degree: each rank holds sequence_length / this of a "
        "sequence (the estimate's sequence term; unset: 1)",
    )
    activation_checkpointing: Literal["none", "selective", "full"] = Field(
        "none",
        description="activation checkpointing the step runs with: full recomputes the forward "
        "(a third more of the step's FLOPs), selective the attention core only",
    )
    expert_parallel: int | None = Field(
        None,
        ge=1,
        le=65_536,
        description="expert parallelism degree of a mixture of experts (needs "
        "model.active_params_billion; divides the workload pool's chips): the memory fit "
        "shards the experts across this many chips and the rest across every chip (FSDP/ZeRO); "
        "unset: all of the state across every chip",
    )
    entrypoint: Text = Field(min_length=1, max_length=1024, description="script torchrun runs")
    args: tuple[Text, ...] = Field(
        (), max_length=4096, description="arguments, passed verbatim (one line each)"
    )
    image: Annotated[Text, AfterValidator(_image)] | None = Field(
        None,
        description="container image, [registry/]repo:tag or @sha256:...; default per device kind",
    )
    framework: Text | None = Field(
        None,
        description="training path: torchneuron (native PyTorch on Trn2/Trn3), xla (legacy "
        "PyTorch/XLA, in maintenance) or torch-cuda; default per family from the catalog",
    )
    env: dict[Annotated[str, Field(pattern=ENV_NAME_RE)], Text] = Field(
        default_factory=dict, description="extra environment (no secrets: names are checked)"
    )
    precompile_steps: int | None = Field(
        None, ge=0, le=1000, description="neuron_parallel_compile steps before training; 0 = off"
    )
    precompile_args: tuple[Text, ...] = Field(
        (), description="extra arguments appended in the pre-compile phase only (XLA path)"
    )
    rdzv_port: int = Field(29500, ge=1024, le=65535, description="torchrun rendezvous port")


class Budget(Strict):
    """Limits the cost guard enforces before anything is created (USD)."""

    max_hourly_usd: float | None = Field(None, gt=0, description="whole stack, per hour")
    max_monthly_usd: float | None = Field(None, gt=0, description="hourly x hours_per_month")
    max_run_usd: float | None = Field(None, gt=0, description="the estimated training run")
    mfu: float | None = Field(
        None, ge=0.01, le=1, description="MFU override for the estimate (0.01 to 1)"
    )
    unlimited: bool = Field(
        False,
        description="no limit on purpose (needs `reason`); without any limit a stack is refused",
    )
    reason: Text | None = Field(None, description="why this stack has no limit (with unlimited)")

    @model_validator(mode="after")
    def _unlimited_is_explicit(self) -> Budget:
        limits = [self.max_hourly_usd, self.max_monthly_usd, self.max_run_usd]
        if self.unlimited and not (self.reason or "").strip():
            raise ValueError("unlimited: true needs a reason (who approved it and why)")
        if self.unlimited and any(v is not None for v in limits):
            raise ValueError("unlimited: true with a max_* limit set; keep one or the other")
        if self.reason and not self.unlimited:
            raise ValueError("reason is only read with unlimited: true")
        return self

    @property
    def has_limit(self) -> bool:
        return any(
            v is not None for v in (self.max_hourly_usd, self.max_monthly_usd, self.max_run_usd)
        )


class MeasuredShape(Strict):
    """The model shape a measurement ran (as the trial reported it, or the spec's)."""

    layers: int | None = Field(None, ge=1, le=1000, description="decoder layers that ran")
    hidden_size: int | None = Field(None, ge=1, le=131_072, description="model width")
    heads: int | None = Field(None, ge=1, description="attention heads")
    kv_heads: int | None = Field(None, ge=1, description="key/value heads")
    vocab: int | None = Field(None, ge=1, description="vocabulary size")
    ffn_hidden: int | None = Field(None, ge=1, description="MLP (expert) width")
    experts: int | None = Field(None, ge=1, description="experts of a mixture of experts")
    top_k: int | None = Field(None, ge=1, description="experts per token")
    active_params_billion: float | None = Field(
        None, gt=0, description="a mixture of experts: parameters active per token, billions"
    )


class MeasuredTarget(MeasuredShape):
    """The spec's model a reference run stands for (scaled down to fit one device)."""

    params_billion: float = Field(gt=0, le=100_000, description="its size, billions")


class Measured(Strict):
    """One measured MFU from `accelstack calibrate` (a trial's throughput records), keyed by
    instance type, model (size and shape), precision, sequence per rank, tokens per chip and
    training stack."""

    instance_type: Text = Field(description="where it was measured, e.g. trn2.48xlarge")
    params_billion: float = Field(gt=0, le=100_000, description="model size it was measured on")
    precision: Literal["bf16", "fp16", "fp8"] = Field("bf16", description="numeric precision")
    mfu: float = Field(
        gt=0,
        le=10,
        description="tokens/s x counted FLOPs per token (6N + 12LHS) / (chips x peak); the "
        "counted attention square is twice what a causal kernel executes, so a long-sequence "
        "step may count above 1",
    )
    tokens_per_second: float = Field(gt=0, description="mean over the records, whole job")
    file: Text = Field(description="records file it came from")
    date: Text = Field(description="date of the newest record (YYYY-MM-DD)")
    steps: int = Field(ge=1, description="timed steps per record")
    records: int = Field(1, ge=1, description="records averaged")
    sdk: Text = Field(description="SDK / image the trial ran on")
    framework: Text | None = Field(None, description="framework versions the trial reported")
    nodes: int | None = Field(
        None, ge=1, le=100_000, description="nodes the trial ran on (carried to the pool's count)"
    )
    world_size: int | None = Field(None, ge=1, description="processes of the trial job")
    device_kind: Text | None = Field(
        None, description="device kind the trial ran on (refused when not the pool's)"
    )
    model: Text | None = Field(
        None, description="the model that ran: its size, measured by the trial or given"
    )
    compile_s: float | None = Field(
        None, ge=0, description="first-step time (graph compile and warm-up), seconds"
    )
    mfu_spread: float | None = Field(
        None,
        ge=0,
        lt=1,
        description="records' spread: (max - min) / (2 x mean) of their MFUs; widens the range",
    )
    sequence_length: int | None = Field(
        None,
        ge=1,
        le=1_048_576,
        description="tokens per sequence per rank it ran at; `price` uses it at this length only",
    )
    tokens_per_chip: float | None = Field(
        None, gt=0, description="tokens per accelerator per optimizer step"
    )
    stack: Text | None = Field(
        None, description="training stack that ran (accelstack-reference, torchtitan, ...)"
    )
    chips: int | None = Field(
        None, ge=1, description="accelerators that ran (the world size over ranks per chip)"
    )
    device_model: Text | None = Field(None, description="what the device called itself")
    host_instance_type: Text | None = Field(
        None, description="the host's own instance type (Neuron: neuron-ls)"
    )
    shape: MeasuredShape | None = Field(None, description="the model shape that ran")
    shape_source: Text | None = Field(
        None, description="reported (by the entrypoint or the reference benchmark) or spec"
    )
    target: MeasuredTarget | None = Field(
        None, description="the spec model a scaled-down reference run stands for"
    )
    compiled: bool | None = Field(None, description="torch.compile was on")
    activation_checkpointing: bool | None = Field(None, description="activations recomputed")


class Spec(Strict):
    """A training stack: cluster, pools, workload and budget."""

    name: str = Field(pattern=NAME_RE, description="stack name; equals the file name")
    region: Text = Field(description="AWS region, e.g. us-east-2")
    availability_zone: Text | None = Field(None, description="zone name or id for EFA pools")
    preview: bool = Field(False, description="must be true to use preview instance types")
    tags: dict[Text, Text] = Field(
        default_factory=dict, description=f"AWS tags on every resource (plus {STACK_TAG})"
    )
    orchestration: Literal["eks", "ec2"] = Field(
        "eks", description="eks: EKS node groups; ec2: standalone instances on DLAMIs"
    )
    cluster: Cluster = Field(default_factory=Cluster, description="EKS settings")
    standalone: Standalone = Field(
        default_factory=Standalone, description="orchestration: ec2 settings"
    )
    network: Network = Field(default_factory=Network, description="VPC and subnets")
    pools: tuple[Pool, ...] = Field(
        min_length=1, max_length=16, description="accelerator node pools (1-16)"
    )
    compile_cache: CompileCache | None = Field(
        None, description="Neuron compile cache; created by default when a Neuron pool exists"
    )
    storage: Storage = Field(default_factory=Storage, description="shared file system")
    jobs: Jobs = Field(
        default_factory=Jobs, description="job controller, queueing and metrics (EKS)"
    )
    checkpoint: Checkpoint = Field(
        default_factory=Checkpoint, description="durable checkpoint location (EKS)"
    )
    workload: Workload = Field(description="the training job")
    budget: Budget = Field(default_factory=Budget, description="cost limits and MFU")
    calibration: tuple[Measured, ...] = Field(
        (),
        max_length=64,
        description="measured MFU per instance type and model (written by accelstack calibrate)",
    )
    #: The file the spec was read from (set by `parse_spec`/`load_spec`, kept by model_copy):
    #: problems found after loading (the rules on the resolved stack) name it. Not a field.
    _file: str | None = PrivateAttr(None)
    #: The stack name the spec's file names (`stacks/NAME.yaml`, set by `load_spec`): `name`
    #: must equal it (`file_name_problems`). None: not read from a stack file. Not a field.
    _file_stem: str | None = PrivateAttr(None)

    @field_validator("tags")
    @classmethod
    def _tags(cls, v: dict[str, str]) -> dict[str, str]:
        for key, value in v.items():
            if not key or len(key) > 128 or key.lower().startswith("aws:"):
                raise ValueError(f"tag key {shown(key)} must be 1-128 characters, not 'aws:...'")
            if len(value) > 256:
                raise ValueError(f"tag {shown(key)} value is longer than 256 characters")
            for text in (key, value):
                if not all(_tag_char(ch) for ch in text):
                    raise ValueError(
                        f"tag {shown(key)}: {shown(text)} has characters AWS tags do not allow "
                        "(letters, digits, spaces and + - = . _ : / @)"
                    )
        return v

    def __eq__(self, other: object) -> bool:
        """Specs are equal when their fields are; where one was read from is not part of it."""
        if not isinstance(other, Spec):
            return NotImplemented
        return self.__dict__ == other.__dict__

    __hash__ = Strict.__hash__

    @property
    def file(self) -> str:
        """The spec file problems name: the one it was read from, else `<name>.yaml` (a spec
        built in code)."""
        return self._file or f"{self.name}.yaml"

    def read_from(self, file: str, stem: str | None = None) -> Spec:
        """Record the file this spec was read from (problems found later name it) and, for a
        stack file, the stack name it names (`stem`); returns the spec itself."""
        self._file = file
        self._file_stem = stem
        return self

    @property
    def file_stem(self) -> str | None:
        """The stack name the spec's file names, when it was read from a stack file."""
        return self._file_stem

    def pool(self, name: str) -> Pool:
        for p in self.pools:
            if p.name == name:
                return p
        raise KeyError(name)

    @property
    def workload_pool(self) -> Pool:
        if self.workload.pool is None:
            return self.pools[0]
        return self.pool(self.workload.pool)


def json_schema() -> dict[str, Any]:
    """The spec's JSON Schema (for editors: yaml-language-server, VS Code)."""
    schema = Spec.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://accelstack.dev/schema/spec.json"
    schema["title"] = "accelstack workload spec"
    return schema
