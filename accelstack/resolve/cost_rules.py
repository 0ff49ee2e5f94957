"""Spec rules of the run estimate (`SPEC_RULES` runs them after accelstack.resolve.spec_rules):
the training stack a spec names must be one the catalog knows (throughput.yaml
training_stacks), so the estimate never silently falls back to another stack's figure."""

from __future__ import annotations

from collections.abc import Iterator

from accelstack.errors import allowed, did_you_mean, shown
from accelstack.resolve.spec_rules import Finding, SpecRule, spec_rule
from accelstack.resolve.stack import Stack


@spec_rule(
    "training-stack",
    "workload.stack names a training stack of the catalog (throughput.yaml training_stacks)",
)
def _training_stack(stack: Stack) -> Iterator[Finding]:
    named = stack.spec.workload.stack
    known = stack.catalog.throughput.training_stacks
    if named is None or named in known:
        return
    yield (
        "workload.stack",
        f"{shown(named)} is not a known training stack{did_you_mean(named, known)} "
        f"(known: {allowed(known)})",
    )


@spec_rule(
    "moe-active-params",
    "a mixture of experts activates no more parameters per token than it has",
)
def _active_params(stack: Stack) -> Iterator[Finding]:
    m = stack.spec.workload.model
    if m.active_params_billion is None or m.active_params_billion <= m.params_billion:
        return
    yield (
        "workload.model.active_params_billion",
        f"{m.active_params_billion:g} is more than params_billion {m.params_billion:g}: the "
        "active parameters per token are part of all of them (set params_billion to the total)",
    )


@spec_rule(
    "expert-parallel",
    "workload.expert_parallel needs a mixture of experts and divides the workload pool's chips",
)
def _expert_parallel(stack: Stack) -> Iterator[Finding]:
    wl = stack.spec.workload
    ep = wl.expert_parallel
    if ep is None:
        return
    if wl.model.active_params_billion is None:
        yield (
            "workload.expert_parallel",
            f"{ep} needs workload.model.active_params_billion: a dense model has no experts "
            "to shard (set the active parameters per token, or remove expert_parallel)",
        )
        return
    yield from _expert_parallel_pool(stack, ep)


def _expert_parallel_pool(stack: Stack, ep: int) -> Iterator[Finding]:
    wl, pool = stack.spec.workload, stack.spec.workload_pool
    inst = stack.catalog.instances.get(pool.instance_type)
    if (
        inst is None
        or inst.chips <= 0
        or wl.precision not in (stack.catalog.defaults.training_bytes_per_param)
    ):
        return  # the pool's own rules report an unknown or unaccelerated type
    chips = pool.nodes * inst.chips
    if chips % ep:
        below = max(d for d in range(1, ep) if chips % d == 0)
        above = [d for d in range(ep + 1, chips + 1) if chips % d == 0]
        near = f"{below} or {above[0]}" if above else str(below)
        yield (
            "workload.expert_parallel",
            f"{ep} does not divide the workload pool's {chips:,} chips ({pool.nodes} x "
            f"{pool.instance_type}): expert-parallel groups must tile the job (nearest: {near})",
        )


#: This module's rules, in report order (the kind's RuleSet lists this tuple).
MODULE_RULES: tuple[SpecRule, ...] = (
    _training_stack,
    _active_params,
    _expert_parallel,
)
