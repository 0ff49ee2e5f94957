"""What the pinned upstream projects say they do not support: a combination the stack could
deploy, whose controllers would accept it and then misbehave. Each limit is restated here with
its source (repo@commit file:line, at the version the catalog pins), as
tests/render/test_upstream_admission.py restates the CRDs' CEL rules; the stack rules in
rules.py (`kueue-topology-dra`) refuse the combinations in one line.

Read and deliberately not refused (the code at the same commit accepts it and the effect is nil
for these stacks): Kueue's DRA concept page also lists per-request device `config` as not
supported (kubernetes-sigs/kueue@8eab6877 site/content/en/docs/concepts/dynamic_resource_allocation.md:264-265);
the UltraServer claim carries its UltraServerConfig there, and Kueue's claim reader counts the
request's ExactCount devices and never reads the config (pkg/dra/claims.go:56-111), so the quota
counts one UltraServer node per pod as the ClusterQueue expects.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FeatureLimit:
    """One upstream limit: the project (a catalog charts key) and what it does not support, as
    its own documents state it, and where."""

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

#: Every limit restated here (tests/resolve/test_rules_ultraserver.py holds each to its source).
LIMITS: tuple[FeatureLimit, ...] = (KUEUE_DRA_TAS,)
