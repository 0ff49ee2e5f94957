"""The Kubernetes names the job layer generates from the stack's names, at their longest.

Every name comes from `accelstack.naming`; this module only says which ones a stack's
rendered jobs produce and how long they get (the most nodes each job runs on). The stack rule
`kubernetes-names` (rules.py) refuses a stack whose longest name is over its limit, naming the
longest stack name that fits, so `validate` catches what JobSet's webhook, the Job controller
or the API server would refuse after `pulumi up` (a TrainJob accepted whose JobSet is never
created).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from accelstack import naming
from accelstack.resolve.stack import ResolvedPool, Stack

#: Where each limit comes from.
JOBSET_POD = (
    "JobSet's webhook: pod names are DNS-1035 labels (kubernetes-sigs/jobset@f22e565a "
    "pkg/webhooks/jobset_webhook.go:243-256)"
)
JOBSET_JOB = (
    "JobSet's webhook: Job names are DNS-1035 labels (kubernetes-sigs/jobset@f22e565a "
    "pkg/webhooks/jobset_webhook.go:234-242)"
)
DNS_LABEL = "a DNS-1035 label (Service names and pod hostnames)"
PYTORCHJOB_SERVICE = (
    "the Training Operator names each replica's Service after its pod, a DNS-1035 label "
    "(kubeflow/trainer@4445c12a pkg/controller.v1/common/service.go:243)"
)
KUEUE_NAME = (
    "Kueue's CRDs: a DNS-1123 subdomain (kubernetes-sigs/kueue@8eab6877 "
    "apis/kueue/v1beta2/clusterqueue_types.go:51-55, 345-348)"
)
LABEL_VALUE = "a label value"


@dataclass(frozen=True)
class GeneratedName:
    """One generated Kubernetes name: what it is, the name at its longest, the rule's source."""

    what: str
    name: str
    rule: str
    limit: int = naming.DNS_LABEL_MAX

    @property
    def excess(self) -> int:
        return len(self.name) - self.limit


def manifest_kinds(stack: Stack) -> set[str]:
    """The job kinds `render` writes for an EKS stack: the spec's, the controller's own, and
    the indexed Job (render.artifacts.manifest_kinds lists them in order)."""
    chart = stack.job_controller_chart
    own = {chart.manifest_kind} if chart and chart.manifest_kind else set()
    return {stack.job_kind, "job", *own}


def fabric_test_applies(stack: Stack) -> bool:
    """Whether `render` writes the fabric acceptance job (render.fabric.fabric_threshold and
    render_fabric_test decide it the same way): an EKS stack, 2+ EFA nodes, a benchmark for the
    device kind (a TrainJob with Kubeflow Trainer, else an indexed Job)."""
    p, facts = stack.workload_pool, stack.catalog.launch.fabric_test
    return (
        stack.orchestration == "eks"
        and facts is not None
        and p.nodes >= 2
        and p.efa
        and p.device.name in facts.tools
    )


def _job_names(job: str, kinds: set[str], nodes: int, what: str) -> Iterator[GeneratedName]:
    """The names one job of `nodes` nodes produces, per rendered kind."""
    yield GeneratedName(f"{what}'s app.kubernetes.io/name label", job, LABEL_VALUE)
    if "trainjob" in kinds:
        rjob = naming.TRAINER_REPLICATED_JOB
        yield GeneratedName(
            f"{what}'s longest pod name", naming.jobset_pod(job, rjob, 1, nodes), JOBSET_POD
        )
        yield GeneratedName(f"{what}'s Job name", naming.jobset_job(job, rjob, 1), JOBSET_JOB)
    if "pytorchjob" in kinds:
        yield from _pytorchjob_names(job, nodes, what)
    if "job" in kinds:
        yield GeneratedName(f"{what}'s headless Service", job, DNS_LABEL)
        yield GeneratedName(
            f"{what}'s last pod hostname", naming.indexed_pod_hostname(job, nodes), DNS_LABEL
        )


def _pytorchjob_names(job: str, nodes: int, what: str) -> Iterator[GeneratedName]:
    """The PyTorchJob's Master (one replica) and its last Worker (nodes - 1 replicas,
    templates/pytorchjob.yaml.j2): pod names that are also the replicas' Service names."""
    roles = [("Master", 0)] + ([("Worker", nodes - 2)] if nodes > 1 else [])
    for role, index in roles:
        name = naming.pytorchjob_pod(job, role, index)
        yield GeneratedName(f"{what}'s {role.lower()} pod and Service", name, PYTORCHJOB_SERVICE)


def _kueue_names(stack: Stack) -> Iterator[GeneratedName]:
    """The cluster-scoped Kueue objects: the ClusterQueue (`<stack>`), one ResourceFlavor per
    pool and, with topology-aware scheduling, the Topology (components/job_controller.py)."""
    if not stack.kueue:
        return
    limit = naming.DNS_SUBDOMAIN_MAX
    yield GeneratedName("the Kueue ClusterQueue", stack.name, KUEUE_NAME, limit)
    for p in stack.pools:
        name = naming.resource_flavor(stack.name, p.name)
        yield GeneratedName(f"pool {p.name}'s Kueue ResourceFlavor", name, KUEUE_NAME, limit)
    if stack.topology_levels:
        name = naming.kueue_topology(stack.name)
        yield GeneratedName("the Kueue Topology", name, KUEUE_NAME, limit)


def _fabric_names(stack: Stack) -> Iterator[GeneratedName]:
    """The fabric test's TrainJob on the MPI runtime: the launcher (1 pod) and the other
    nodes (max(nodes - 1, 1) pods with runLauncherAsNode: kubeflow/trainer@658725bd
    pkg/runtime/framework/plugins/mpi/mpi.go:117-124); without Trainer, its indexed Job's
    Service and pod hostnames."""
    if not fabric_test_applies(stack):
        return
    job, nodes = naming.fabric_job(stack.name), stack.workload_pool.nodes
    what = "the fabric test"
    yield GeneratedName(f"{what}'s app.kubernetes.io/name label", job, LABEL_VALUE)
    if stack.job_controller != "trainer":
        yield GeneratedName(f"{what}'s headless Service", job, DNS_LABEL)
        yield GeneratedName(
            f"{what}'s last pod hostname", naming.indexed_pod_hostname(job, nodes), DNS_LABEL
        )
        return
    for rjob, pods in (
        (naming.LAUNCHER_REPLICATED_JOB, 1),
        (naming.TRAINER_REPLICATED_JOB, max(nodes - 1, 1)),
    ):
        yield GeneratedName(
            f"{what}'s longest pod name", naming.jobset_pod(job, rjob, 1, pods), JOBSET_POD
        )


def _trial_pools(stack: Stack) -> list[ResolvedPool]:
    """The pools `accelstack trial` runs on (render.trial.trial_pools): accelerated ones."""
    return [p for p in stack.pools if p.instance.chips > 0]


def trial_job_name(stack: Stack, pool: str, nodes: int) -> str:
    """The name of `pool`'s trial job on `nodes` nodes (naming.trial_job_name)."""
    return naming.trial_job_name(stack.name, [p.name for p in stack.pools], pool, nodes)


def kubernetes_names(stack: Stack) -> list[GeneratedName]:
    """Every name the EKS job layer generates, at the most nodes each job runs on: the
    training job (PyTorchJob replicas included), the fabric test, a trial on every node of
    each accelerated pool, the stack label and the Kueue queue, flavors and Topology. Empty for standalone (ec2) stacks."""
    if stack.spec.orchestration != "eks":
        return []
    kinds = manifest_kinds(stack)
    pool = stack.workload_pool
    out = [GeneratedName("the stack label", stack.name, LABEL_VALUE)]
    if stack.queue_name:
        out.append(GeneratedName("the Kueue queue label", stack.queue_name, LABEL_VALUE))
    out += _kueue_names(stack)
    out += _job_names(stack.name, kinds, pool.nodes, "the training job")
    out += _fabric_names(stack)
    for p in _trial_pools(stack):
        name = trial_job_name(stack, p.name, p.nodes)
        out += _job_names(name, {stack.job_kind}, p.nodes, f"pool {p.name}'s trial")
    return out
