"""Every name, label, taint and tag the stack generates, in one place.

The components, pricing, the spec and deploy rules, render and preflight all call these
helpers; none of them spells a label key or a generated-name pattern itself
(tests/test_naming.py scans the tree for stray literals). Pure: imports nothing of accelstack,
so every layer may use it.

`stack` is the resource-name prefix (`Stack.name`: the deployment name when one is given,
else the spec's name); `pool` is a pool's name from the spec.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

# --- Kubernetes node labels and taints -------------------------------------------------

#: The node label every pool's nodes carry (value: the pool name); pods select their pool by it.
POOL_LABEL = "accelstack.io/pool"
#: The node label on pools with EFA interfaces (value "true"); the EFA device plugin runs there.
EFA_LABEL = "accelstack.io/efa"
#: How a Neuron node's devices are allocated, set only in a stack with an UltraServer pool
#: (values "dra" / "device-plugin"): the Neuron DRA driver must not run on nodes that run the
#: Neuron device plugin (EKS user guide, device-management-neuron), so each Neuron node group
#: says which of the two serves it and each DaemonSet selects its own.
NEURON_ALLOCATION_LABEL = "accelstack.io/neuron-allocation"
#: The pod label of a job's pods on an UltraServer pool (value: the job's name): each job's
#: required pod anti-affinity keeps every other labelled job off the UltraServers it uses.
ULTRASERVER_JOB_LABEL = "accelstack.io/ultraserver-job"
#: The label on every Kubernetes object the stack renders or creates (value: the stack name).
STACK_LABEL = "accelstack.io/stack"
#: `app.kubernetes.io/managed-by` value on the objects the components create.
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"

# --- AWS tags ---------------------------------------------------------------------------

#: The tag that names the stack on every AWS resource (run commands and the cost report find
#: the stack's resources by it).
STACK_TAG = "accelstack:stack"
#: The tag that marks a resource as created by accelstack, and its value.
MANAGED_BY_TAG = "managed-by"
MANAGED_BY = "accelstack"
#: Tags that identify the stack. Stateful resources carry only these (stable) so changing
#: `spec.tags` never touches their inputs; user tags may not replace them.
IDENTITY_TAG_KEYS = (STACK_TAG, MANAGED_BY_TAG)
#: The stack's own label and tag namespaces: user tags may not start with them.
IDENTITY_TAG_PREFIXES = ("accelstack:", "accelstack.io/")
#: The pool tag on standalone instances and fleets (the same key as the node label).
POOL_TAG = POOL_LABEL


def stack_tags(stack: str, user_tags: Mapping[str, str]) -> dict[str, str]:
    """The tags on every resource of the stack: its identity tags, then the spec's."""
    return {STACK_TAG: stack, MANAGED_BY_TAG: MANAGED_BY, **user_tags}


def stable_tags(tags: Mapping[str, str], name: str | None = None, **extra: str) -> dict[str, str]:
    """Only the identity tags of `tags` (plus `Name` and `extra`): for stateful resources."""
    out = {k: tags[k] for k in IDENTITY_TAG_KEYS if k in tags}
    if name:
        out["Name"] = name
    out.update(extra)
    return out


def tag_filter(key: str) -> str:
    """An EC2/SSM filter key for a tag (`tag:<key>`)."""
    return f"tag:{key}"


# --- Resource names ---------------------------------------------------------------------


def provider(stack: str) -> str:
    """The stack's explicit AWS provider."""
    return f"{stack}-aws"


def network(stack: str) -> str:
    """The network component (VPC, subnets, NAT gateways, endpoints)."""
    return f"{stack}-network"


def cluster(stack: str) -> str:
    """The EKS cluster component."""
    return f"{stack}-cluster"


def system_nodes(stack: str) -> str:
    """The EKS system node group component (`system` is a reserved pool name for it)."""
    return f"{stack}-system"


def pool_prefix(stack: str, pool: str) -> str:
    """The name of a pool's component (EKS node group, standalone pool): `<stack>-<pool>`."""
    return f"{stack}-{pool}"


def launch_template(stack: str, pool: str, role: str = "lt") -> str:
    """A pool's launch template: `<stack>-<pool>-lt` (one per reservation behind the pool:
    `-lt-2`, ... see `launch_template_role`)."""
    return f"{pool_prefix(stack, pool)}-{role}"


def node_group_role(index: int) -> str:
    """The role of a pool's index-th EKS managed node group: `ng` (the name a one-group pool
    always had), then `ng-2`, `ng-3`, ..."""
    return "ng" if index == 0 else f"ng-{index + 1}"


def launch_template_role(index: int) -> str:
    """The role of the launch template of a pool's index-th reservation: `lt`, `lt-2`, ..."""
    return "lt" if index == 0 else f"lt-{index + 1}"


def pool_node_group(stack: str, pool: str, role: str) -> str:
    """One EKS managed node group of a pool: `<stack>-<pool>-<role>`."""
    return f"{pool_prefix(stack, pool)}-{role}"


def system_node_group(stack: str) -> str:
    """The EKS system node group: `<stack>-system-ng`."""
    return f"{system_nodes(stack)}-ng"


def system_launch_template(stack: str) -> str:
    """The EKS system node group's launch template: `<stack>-system-lt`."""
    return f"{system_nodes(stack)}-lt"


def secondary_block(network_name: str, zone: str) -> str:
    """A zone's secondary VPC CIDR block association (large pools)."""
    return f"{network_name}-secondary-{zone}"


def node_subnet(network_name: str, zone: str) -> str:
    """A zone's node subnet in its secondary block (its route-table association: `-rta`)."""
    return f"{network_name}-nodes-{zone}"


def fleet(stack: str, pool: str) -> str:
    """A standalone pool's EC2 Fleet: `<stack>-<pool>-fleet`."""
    return f"{pool_prefix(stack, pool)}-fleet"


def compile_cache(stack: str) -> str:
    """The compile-cache component (its bucket is `<stack>-compile-cache-bucket`)."""
    return f"{stack}-compile-cache"


def standalone_cache(stack: str) -> str:
    """The prefix of a standalone stack's compile-cache bucket and its hardening resources."""
    return f"{stack}-cache"


def bucket_resource(owner: str) -> str:
    """The logical name of the bucket a component (or a standalone cluster's prefix) creates."""
    return f"{owner}-bucket"


def cache_bucket(stack: str, account_id: str) -> str:
    """The compile-cache bucket accelstack creates: deterministic and globally unique per
    account; at most 40 + 5 + 12 = 57 characters."""
    return f"{stack}-ncc-{account_id}"


def checkpoints(stack: str) -> str:
    """The checkpoint-store component (its bucket resource is `<stack>-checkpoints-bucket`)."""
    return f"{stack}-checkpoints"


def checkpoint_bucket_resource(stack: str) -> str:
    """The checkpoint bucket's logical name (the cost guard prices it from the training state)."""
    return bucket_resource(checkpoints(stack))


def checkpoint_bucket(stack: str, account_id: str) -> str:
    """The checkpoint bucket accelstack creates: at most 40 + 6 + 12 = 58 characters."""
    return f"{stack}-ckpt-{account_id}"


def checkpoint_config(stack: str) -> str:
    """The ConfigMap (training namespace) holding the checkpoint URL the pods read."""
    return f"{stack}-checkpoint"


def training_identity(stack: str) -> str:
    """The training pods' Pod Identity component (its role is `<stack>-training-role`)."""
    return f"{stack}-training"


def asg_tag(prefix: str, key_hash: str) -> str:
    """A node group's propagated Auto Scaling group tag, named by a hash of the tag key."""
    return f"{prefix}-asg-tag-{key_hash}"


def fsx(stack: str) -> str:
    """The FSx for Lustre component, and the PersistentVolumeClaim the jobs mount."""
    return f"{stack}-fsx"


def fsx_claim_component(stack: str) -> str:
    """The component that creates the FSx PersistentVolume and its claim."""
    return f"{fsx(stack)}-claim"


def nat_gateway(network_component: str, zone_id: str) -> str:
    """A zone's NAT gateway, a child of the network component (its Elastic IP is
    `<name>-eip`): named by zone, so adding a zone changes no other zone's gateway."""
    return f"{network_component}-nat-{zone_id}"


def device_plugins(stack: str) -> str:
    """The device-plugins component (charts, namespace, service account)."""
    return f"{stack}-device-plugins"


def job_layer(stack: str) -> str:
    """The job-layer component (job controller release, Kueue and its queues)."""
    return f"{stack}-jobs"


def metrics(stack: str) -> str:
    """The metrics component (CloudWatch Observability add-on and its agent's role)."""
    return f"{stack}-metrics"


def queue(stack: str) -> str:
    """The Kueue LocalQueue the job manifests name (the ClusterQueue is `<stack>`)."""
    return f"{stack}-queue"


def resource_flavor(stack: str, pool: str) -> str:
    """The Kueue ResourceFlavor of a pool (its nodes, by the pool label)."""
    return f"{stack}-{pool}"


def training_runtime(job: str) -> str:
    """The TrainingRuntime a TrainJob names (`<job>-runtime`)."""
    return f"{job}-runtime"


def kueue_topology(stack: str) -> str:
    """The Kueue Topology of a stack with topology-aware scheduling (`<stack>-topology`)."""
    return f"{stack}-topology"


def ultraserver_claim_template(stack: str, mode: int) -> str:
    """The ResourceClaimTemplate an UltraServer pool's pods claim from (`<stack>-us<mode>`:
    one per UltraServerConfig mode, shared by the stack's jobs of that mode)."""
    return f"{stack}-us{mode}"


def fabric_job(stack: str) -> str:
    """The fabric acceptance TrainJob (its longest pod name is `jobset_pod(<job>, "launcher",
    1, 1)`; the stack rule `kubernetes-names` holds it to a DNS label)."""
    return f"{stack}-fabric"


def trial_job(stack: str, pool: str) -> str:
    """The trial job of a pool, beside the real job."""
    return f"{stack}-trial-{pool}"


def trial_job_short(stack: str, index: int) -> str:
    """The trial job of the index-th pool, where `trial_job` would make pod names too long."""
    return f"{stack}-trial{index}"


# --- Names the Kubernetes controllers derive from the job names --------------------------

#: A DNS-1035 label (Service names, JobSet's pod and Job names) and a label value are at most
#: 63 characters (k8s.io/apimachinery pkg/util/validation validation.go, DNS1035LabelMaxLength
#: and LabelValueMaxLength).
DNS_LABEL_MAX = 63
#: A DNS-1123 subdomain (the names of Kueue's ResourceFlavors, ClusterQueues and Topologies)
#: is at most 253 characters (kubernetes-sigs/kueue@8eab6877 apis/kueue/v1beta2/
#: clusterqueue_types.go:51-55, 345-348; resourceflavor_types.go:42-45).
DNS_SUBDOMAIN_MAX = 253
#: The 5 random characters the API server appends to a generated pod name, as JobSet's webhook
#: counts them (kubernetes-sigs/jobset@f22e565a pkg/webhooks/jobset_webhook.go:243-249:
#: `GenPodName(...) + "-abcde"`).
POD_NAME_SUFFIX = "-abcde"
#: The replicated Jobs accelstack's JobSets hold: the training step (`node`, Trainer's
#: constants.Node) and the fabric test's MPI launcher.
TRAINER_REPLICATED_JOB = "node"
LAUNCHER_REPLICATED_JOB = "launcher"


def jobset_pod(jobset: str, replicated_job: str, replicas: int, pods: int) -> str:
    """The longest pod name JobSet's webhook checks for a replicated Job of `replicas` Jobs of
    `pods` indexed pods: `<jobset>-<replicatedJob>-<jobIndex>-<podIndex>` plus the 5-character
    suffix (kubernetes-sigs/jobset@f22e565a pkg/util/placement/placement.go:20-22 GenPodName,
    pkg/webhooks/jobset_webhook.go:243-256). Kubeflow Trainer names the JobSet after the
    TrainJob (kubeflow/trainer@658725bd pkg/runtime/framework/plugins/jobset/jobset.go:413)."""
    job, pod = max(0, replicas - 1), max(0, pods - 1)
    return f"{jobset}-{replicated_job}-{job}-{pod}{POD_NAME_SUFFIX}"


def jobset_job(jobset: str, replicated_job: str, replicas: int) -> str:
    """The longest Job name JobSet generates (placement.go:14-16 GenJobName; the webhook
    checks it at jobset_webhook.go:234-242): also the Job's `job-name` label value."""
    return f"{jobset}-{replicated_job}-{max(0, replicas - 1)}"


def pytorchjob_pod(job: str, replica_type: str, index: int) -> str:
    """A PyTorchJob replica's pod name, which the Training Operator also gives the replica's
    Service: `<job>-<replica type, lower case>-<index>` (kubeflow/trainer@4445c12a, tag
    v1.9.4, pkg/core/utils.go:30-33 GenGeneralName; pkg/controller.v1/common/pod.go:414 and
    service.go:243)."""
    return f"{job}-{replica_type.lower()}-{max(0, index)}"


def indexed_pod_hostname(job: str, pods: int) -> str:
    """The hostname of an indexed Job's last pod (`<job>-<index>`, a DNS label: the Job
    controller sets it when the pod template names a subdomain)."""
    return f"{job}-{max(0, pods - 1)}"


def trial_job_name(stack: str, pools: list[str], pool: str, nodes: int) -> str:
    """`trial_job` where the longest pod name JobSet derives from it on `nodes` nodes is a DNS
    label, else `trial_job_short` (the pool's position)."""
    name = trial_job(stack, pool)
    if len(jobset_pod(name, TRAINER_REPLICATED_JOB, 1, nodes)) <= DNS_LABEL_MAX:
        return name
    return trial_job_short(stack, pools.index(pool))


#: The label Kueue reads a job's LocalQueue from (Kueue docs, tasks/run/trainjobs.md).
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


#: The IAM role names the components derive from the stack and pool names, and when each
#: exists: (pattern, orchestration, only with a compile cache). Each is autonamed by Pulumi
#: (the suffix counts against the AWS limit). The generated-names stack rule
#: (accelstack/resolve/rules.py) checks them, and the node groups (`pool_node_group`,
#: `system_node_group`), for the deployment's prefix before a plan; the iam-role-name /
#: eks-nodegroup-name deploy rules check the names the program really generates.
ROLE_PATTERNS: tuple[tuple[str, str, bool], ...] = (
    ("{stack}-{pool}-node-role", "eks", False),
    ("{stack}-system-node-role", "eks", False),
    ("{stack}-cluster-role", "eks", False),
    ("{stack}-training-role", "eks", False),
    ("{stack}-metrics-role", "eks", False),
    ("{stack}-node-role", "ec2", False),
)


def cache_prefix(stack: str, upstream: str) -> str:
    """The ECR repository prefix of a stack's pull-through cache rule for `upstream`: unique
    per stack in the account's registry (a rule's prefix is), within ECR's 30 characters."""
    digest = hashlib.sha256(stack.encode()).hexdigest()[:8]
    return f"as-{digest}-{upstream}"[:30]


def ecr_endpoint(network_component: str, service: str) -> str:
    """The network's interface endpoint for the ECR service `service` (ecr.api, ecr.dkr)."""
    return f"{network_component}-{service.replace('.', '-')}"


def placement_group(pool_component: str, launch_template_role: str) -> str:
    """The cluster placement group a pool creates for its launch template
    `launch_template_role`:
    `<pool>-pg` for `lt` (the name a pool always had), `<pool>-pg-<n>` for `lt-<n>`."""
    return f"{pool_component}-pg{launch_template_role.removeprefix('lt')}"
