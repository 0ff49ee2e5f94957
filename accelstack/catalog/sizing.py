"""Memory fit: can a pool hold the model's training state, and how many nodes does it need?

Model (constants in the catalog's `defaults`): training state = parameters x bytes per
parameter at the workload's precision (mixed-precision Adam: 16), sharded across every
accelerator of the job (ZeRO-3 / FSDP), against usable accelerator memory
(total x usable_memory_fraction, the rest left for activations and the runtime).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Protocol

from accelstack.catalog.model import Catalog


class _LayoutLike(Protocol):
    """What the activation memory reads of a layout (accelstack.cost.step.Layout)."""

    @property
    def tensor_parallel(self) -> int: ...
    @property
    def pipeline_parallel(self) -> int: ...
    @property
    def micro_batch(self) -> int: ...
    @property
    def activation_checkpointing(self) -> str: ...


@dataclass(frozen=True)
class MemoryFit:
    instance_type: str
    required_gib: float
    usable_gib_per_node: float
    min_nodes: int
    bytes_per_param: float
    expert_parallel: int | None = None  # experts sharded across this many chips
    expert_shard_gib: float = 0.0  # each chip's share of the experts' state
    usable_gib_per_chip: float = 0.0

    @property
    def experts_overflow(self) -> bool:
        """The experts' shard alone fills a chip: no node count holds the model."""
        return (
            self.expert_parallel is not None and self.expert_shard_gib >= self.usable_gib_per_chip
        )

    def fits(self, nodes: int) -> bool:
        return nodes >= self.min_nodes and not self.experts_overflow


def memory_fit(
    catalog: Catalog,
    instance_type: str,
    params_billion: float,
    precision: str,
    expert_billion: float = 0.0,
    expert_parallel: int | None = None,
) -> MemoryFit:
    """Training state sharded across every chip; with `expert_parallel` the weights and
    gradients of the experts (`expert_billion`; defaults.expert_parallel_bytes_per_param)
    across that many chips and the rest (their optimizer state too) across every chip."""
    inst = catalog.instance(instance_type)
    bpp = catalog.defaults.training_bytes_per_param[precision]
    required_gib = params_billion * 1e9 * bpp / 2**30
    usable = inst.accelerator_memory_gib * catalog.defaults.usable_memory_fraction
    min_nodes = math.ceil(required_gib / usable) if usable > 0 else 0
    fit = MemoryFit(instance_type, required_gib, usable, max(min_nodes, 1), bpp)
    ep_bpp = catalog.defaults.expert_parallel_bytes_per_param.get(precision, bpp)
    if expert_parallel is None or expert_billion <= 0 or inst.chips <= 0:
        return fit
    return _expert_fit(fit, inst.chips, expert_billion * 1e9 * ep_bpp / 2**30, expert_parallel)


def _expert_fit(fit: MemoryFit, chips: int, expert_gib: float, ep: int) -> MemoryFit:
    """Per chip: the experts' weights and gradients / ep + the rest of the state / every
    chip <= usable per chip; at least the nodes one expert-parallel group spans."""
    per_chip = fit.usable_gib_per_node / chips
    shard = expert_gib / ep
    room = per_chip - shard
    rest = fit.required_gib - expert_gib
    group = math.ceil(ep / chips)
    need = math.ceil(rest / (chips * room)) if room > 0 else group
    return replace(
        fit,
        min_nodes=max(need, group, 1),
        expert_parallel=ep,
        expert_shard_gib=shard,
        usable_gib_per_chip=per_chip,
    )


def experts_overflow_note(fit: MemoryFit) -> str:
    """Why no node count holds the model: the experts' shard fills a chip."""
    experts = fit.expert_shard_gib * (fit.expert_parallel or 1)
    need = math.floor(experts / fit.usable_gib_per_chip) + 1
    return (
        f"expert_parallel {fit.expert_parallel} puts {fit.expert_shard_gib:,.0f} GiB of expert "
        f"state on each chip, over the {fit.usable_gib_per_chip:,.0f} GiB usable per chip of "
        f"{fit.instance_type}: use at least {need}, dividing the job's chips"
    )


def state_gib_per_chip(fit: MemoryFit, chips: int) -> float:
    """The training state on each of `chips` chips: every parameter's state sharded over all
    of them (ZeRO-3 / FSDP), the experts' weights and gradients over their expert-parallel
    group when the fit has one."""
    if fit.expert_parallel is None:
        return fit.required_gib / max(1, chips)
    experts = fit.expert_shard_gib * fit.expert_parallel
    return fit.expert_shard_gib + (fit.required_gib - experts) / max(1, chips)


def activation_gib(
    catalog: Catalog,
    layers: int | None,
    hidden: int | None,
    sequence_per_rank: int | None,
    layout: _LayoutLike,
    microbatches: float | None,
) -> float:
    """Activation memory of the first pipeline stage on one chip (throughput.yaml `layouts`):
    layers x tokens per micro-batch x hidden x bytes / TP, the stage holding min(PP,
    micro-batches) micro-batches of layers / PP layers; full recompute keeps each layer's
    input and one layer's working set. 0 without the layers, hidden size or sequence."""
    if not (layers and hidden and sequence_per_rank):
        return 0.0
    lay = catalog.throughput.layouts
    tokens = sequence_per_rank * layout.micro_batch
    one = tokens * hidden / layout.tensor_parallel
    pp = layout.pipeline_parallel
    in_flight = min(1.0, microbatches / pp) if pp > 1 and microbatches else 1.0
    if layout.activation_checkpointing == "full":
        total = layers * one * lay.checkpointed_bytes * in_flight + one * lay.activation_bytes
    else:
        total = layers * one * lay.activation_bytes * in_flight
    return total / 2**30


# ---------------------------------------------------------------------------------------
# Checkpoint sizing (resilience.yaml `checkpoint`)
# ---------------------------------------------------------------------------------------

#: FSx for Lustre throughput is quoted in MB/s (10**6 bytes) per TiB (2**40 bytes) of capacity.
_MB = 10**6
_GIB = 2**30
_TIB = 2**40


def training_state_bytes(catalog: Catalog, params_billion: float, precision: str) -> float:
    """Bytes of one full checkpoint: parameters x bytes per parameter at `precision` (weights,
    gradients and optimizer states, `defaults.training_bytes_per_param`)."""
    return params_billion * 1e9 * catalog.defaults.training_bytes_per_param[precision]


def fsx_write_seconds(state_bytes: float, storage_gib: int, throughput_per_tib: int) -> float:
    """Seconds to write `state_bytes` to an FSx file system of `storage_gib` at
    `throughput_per_tib` MB/s per TiB (throughput scales with capacity)."""
    mb_per_s = storage_gib * _GIB / _TIB * throughput_per_tib
    return state_bytes / (mb_per_s * _MB)


def fsx_min_gib(state_bytes: float, keep: int) -> int:
    """The smallest FSx PERSISTENT_2 size (1200 GiB or a multiple of 2400) holding `keep` full
    checkpoints."""
    need = math.ceil(keep * state_bytes / _GIB)
    if need <= 1200:
        return 1200
    return math.ceil(need / 2400) * 2400


def fsx_tier_for(
    state_bytes: float, storage_gib: int, seconds: float, tiers: tuple[int, ...]
) -> int | None:
    """The lowest throughput tier that writes `state_bytes` within `seconds`; None if none can."""
    for tier in sorted(tiers):
        if fsx_write_seconds(state_bytes, storage_gib, tier) <= seconds:
            return tier
    return None


def fsx_gib_for(state_bytes: float, seconds: float, tier: int) -> int:
    """The smallest FSx size at which `tier` writes `state_bytes` within `seconds`."""
    need_tib = state_bytes / (seconds * tier * _MB)
    return fsx_min_gib(need_tib * _TIB, 1)
