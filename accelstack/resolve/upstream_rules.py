"""Rules on the resolved stack for what the pinned upstream projects say they do not support:
a combination the stack could deploy, whose controllers would accept it and then misbehave.

Each limit is restated here with its source (repo@commit file:line, at the version the
catalog pins), as tests/render/test_upstream_admission.py restates the CRDs' CEL rules; the
stack rule refuses the combination in one line naming the spec key that turns it on.

Read and deliberately not refused (the code at the same commit accepts it and the effect is
nil for these stacks): Kueue's DRA concept page also lists per-request device `config` as not
supported (kubernetes-sigs/kueue@8eab6877 site/content/en/docs/concepts/dynamic_resource_allocation.md:264-265);
the UltraServer claim carries its UltraServerConfig there, and Kueue's claim reader counts the
request's ExactCount devices and never reads the config (pkg/dra/claims.go:56-111), so the quota
counts one UltraServer node per pod as the ClusterQueue expects.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from accelstack import rulebook
from accelstack.resolve.stack import Stack

Finding = rulebook.Finding
StackRule = rulebook.Rule[Stack]


@dataclass(frozen=True)
class FeatureLimit:
    """One upstream limit: the project and the features it does not support together, as its
    own documents state it, and where."""

    project: str
    what: str
    source: str


KUEUE_DRA_TAS = FeatureLimit(
    project="kueue",
    what=(
        "no DRA with topology-aware scheduling: DRA resources are not accounted for in TAS "
        "capacity calculations, so topology assignments for DRA devices may be wrong"
    ),
    source=(
        "kubernetes-sigs/kueue@8eab68778fc1b52affe165fdf5af29d1e9b4f3cb "
        "site/content/en/docs/concepts/dynamic_resource_allocation.md:268-270"
    ),
)

#: Every limit this module restates (tests/resolve/test_upstream_rules.py holds each to a rule).
LIMITS: tuple[FeatureLimit, ...] = (KUEUE_DRA_TAS,)


def _version(stack: Stack, chart: str) -> str:
    row = stack.catalog.charts.get(chart)
    return row.version if row else "(not pinned)"


@rulebook.rule(
    "kueue-topology-dra",
    "Kueue topology-aware scheduling is not used on a stack whose pools get devices through a "
    "DRA driver (Kueue does not count DRA devices in its topology capacity)",
)
def _kueue_topology_dra(stack: Stack) -> Iterator[Finding]:
    if not stack.topology_levels:
        return
    dra = [p for p in stack.ultraserver_pools if p.ultraserver and p.ultraserver.dra]
    if not dra:
        return
    pools = ", ".join(f"'{p.name}' ({p.instance_type})" for p in dra)
    yield (
        "jobs.topology_aware",
        f"Kueue {_version(stack, KUEUE_DRA_TAS.project)} lists {KUEUE_DRA_TAS.what} "
        f"({KUEUE_DRA_TAS.source}); pool(s) {pools} get their devices through the Neuron DRA "
        "driver: set jobs.topology_aware: false (UltraServer jobs are placed by the "
        "UltraServer label instead), or move those pools to another stack",
    )


#: This module's rules, in report order (STACK_RULES lists this tuple).
MODULE_RULES: tuple[StackRule, ...] = (_kueue_topology_dra,)
