"""Cross-field rules for durable checkpoints and spare nodes (listed in `MODULE_RULES`).

The checkpoint target: a full checkpoint (parameters x bytes per parameter at the workload's
precision) must be written within `checkpoint.write_minutes` on the FSx file system the spec
asks for, and the file system must hold `keep` of them; the catalog's `resilience.yaml` holds
the tiers and defaults, `catalog/sizing.py` the arithmetic.
"""

from __future__ import annotations

from collections.abc import Iterator

from accelstack.catalog.sizing import (
    fsx_gib_for,
    fsx_min_gib,
    fsx_tier_for,
    fsx_write_seconds,
    training_state_bytes,
)
from accelstack.errors import shown
from accelstack.resolve.spec_rules import Finding, SpecRule, spec_rule
from accelstack.resolve.stack import Stack


def _state_bytes(stack: Stack) -> float | None:
    wl = stack.spec.workload
    if wl.precision not in stack.catalog.defaults.training_bytes_per_param:
        return None
    return training_state_bytes(stack.catalog, wl.model.params_billion, wl.precision)


def _minutes(stack: Stack) -> float:
    return stack.spec.checkpoint.write_minutes or stack.catalog.resilience.checkpoint.write_minutes


@spec_rule(
    "checkpoint-fsx-size",
    "FSx for Lustre holds the checkpoints it is linked to (keep x the full training state)",
)
def _fsx_size(stack: Stack) -> Iterator[Finding]:
    gib, state = stack.spec.storage.fsx_lustre_gib, _state_bytes(stack)
    if not gib or state is None or stack.spec.orchestration != "eks":
        return
    keep = stack.catalog.resilience.checkpoint.keep
    need = fsx_min_gib(state, keep)
    if gib < need:
        yield (
            "storage.fsx_lustre_gib",
            f"{gib} GiB cannot hold {keep} checkpoints of {state / 1e12:.2f} TB (the training "
            f"state of {stack.spec.workload.model.params_billion:g}B parameters); use at least "
            f"{need}",
        )


@spec_rule(
    "checkpoint-write-time",
    "the FSx throughput tier writes a full checkpoint within checkpoint.write_minutes",
)
def _write_time(stack: Stack) -> Iterator[Finding]:
    st, state = stack.spec.storage, _state_bytes(stack)
    if not st.fsx_lustre_gib or state is None or stack.spec.orchestration != "eks":
        return
    seconds, facts = 60 * _minutes(stack), stack.catalog.resilience.checkpoint
    tier = st.fsx_throughput_per_tib
    if tier is not None:
        took = fsx_write_seconds(state, st.fsx_lustre_gib, tier)
        if took > seconds:
            better = fsx_tier_for(state, st.fsx_lustre_gib, seconds, facts.fsx_throughput_tiers)
            fix = f"use {better} MB/s per TiB" if better else "use a larger file system"
            yield (
                "storage.fsx_throughput_per_tib",
                f"{tier} MB/s per TiB on {st.fsx_lustre_gib} GiB writes a "
                f"{state / 1e12:.2f} TB checkpoint in {took / 60:.1f} min, over the "
                f"{_minutes(stack):g} min target (checkpoint.write_minutes); {fix}, or raise "
                "the target",
            )
        return
    if fsx_tier_for(state, st.fsx_lustre_gib, seconds, facts.fsx_throughput_tiers) is None:
        top = max(facts.fsx_throughput_tiers)
        took = fsx_write_seconds(state, st.fsx_lustre_gib, top)
        yield (
            "checkpoint.write_minutes",
            f"{_minutes(stack):g} min cannot be met: even {top} MB/s per TiB on "
            f"{st.fsx_lustre_gib} GiB takes {took / 60:.1f} min for {state / 1e12:.2f} TB; "
            f"use storage.fsx_lustre_gib >= {fsx_gib_for(state, seconds, top)} or raise the "
            "target",
        )


@spec_rule("checkpoint-bucket-region", "an existing checkpoint bucket is in the stack's region")
def _bucket_region(stack: Stack) -> Iterator[Finding]:
    ck = stack.spec.checkpoint
    if ck.bucket_region and ck.bucket_region != stack.spec.region:
        yield (
            "checkpoint.bucket_region",
            f"{shown(ck.bucket_region)} is not the stack's region {shown(stack.spec.region)}: "
            "FSx links only a bucket of its own region and cross-region writes pay transfer; "
            "use a bucket in the stack's region",
        )
    if ck.bucket_region and not ck.bucket:
        yield ("checkpoint.bucket_region", "is only read with checkpoint.bucket")


@spec_rule("checkpoint-eks-only", "the checkpoint section applies to orchestration 'eks'")
def _checkpoint_eks(stack: Stack) -> Iterator[Finding]:
    if stack.spec.orchestration == "eks":
        return
    for key in ("bucket", "bucket_region", "prefix", "write_minutes"):
        if getattr(stack.spec.checkpoint, key) is not None:
            yield (f"checkpoint.{key}", "applies to orchestration 'eks' only")


@spec_rule(
    "pool-spare-nodes",
    "spare nodes fit the capacity block or reservation; purchase.instances only there",
)
def _spare_nodes(stack: Stack) -> Iterator[Finding]:
    table = stack.catalog.purchase_options
    reserved = [name for name, row in table.items() if row.needs_reservation]
    for i, pool in enumerate(stack.spec.pools):
        at, option = f"pools[{i}]", pool.purchase.option
        held = pool.purchase.instances
        if pool.spare_nodes and stack.spec.orchestration != "eks":
            yield (f"{at}.spare_nodes", "applies to orchestration 'eks' (node groups) only")
        if option not in reserved:
            if held is not None:
                yield (
                    f"{at}.purchase.instances",
                    f"is only read with {' or '.join(reserved)}",
                )
            continue
        if pool.purchase.reservations:
            continue  # several reservations: each holds what it lists (pool-reservations)
        size = held if held is not None else pool.nodes
        if held is not None and held < pool.nodes:
            yield (
                f"{at}.purchase.instances",
                f"{held} is fewer than the pool's {pool.nodes} nodes",
            )
        elif pool.nodes + pool.spare_nodes > size:
            yield (
                f"{at}.spare_nodes",
                f"{pool.nodes} nodes + {pool.spare_nodes} spare = "
                f"{pool.nodes + pool.spare_nodes} is beyond the {option}'s {size} instances "
                f"(purchase.instances, default: nodes); spares there cannot launch",
            )


#: This module's rules, in report order (the kind's RuleSet lists this tuple).
MODULE_RULES: tuple[SpecRule, ...] = (
    _fsx_size,
    _write_time,
    _bucket_region,
    _checkpoint_eks,
    _spare_nodes,
)
