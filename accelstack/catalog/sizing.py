"""Memory fit: can a pool hold the model's training state, and how many nodes does it need?

Model (constants in the catalog's `defaults`): training state = parameters x bytes per
parameter at the workload's precision (mixed-precision Adam: 16), sharded across every
accelerator of the job (ZeRO-3 / FSDP), against usable accelerator memory
(total x usable_memory_fraction, the rest left for activations and the runtime).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from accelstack.catalog import Catalog


@dataclass(frozen=True)
class MemoryFit:
    instance_type: str
    required_gib: float
    usable_gib_per_node: float
    min_nodes: int
    bytes_per_param: float

    def fits(self, nodes: int) -> bool:
        return nodes >= self.min_nodes


def memory_fit(
    catalog: Catalog, instance_type: str, params_billion: float, precision: str
) -> MemoryFit:
    inst = catalog.instance(instance_type)
    bpp = catalog.defaults.training_bytes_per_param[precision]
    required_gib = params_billion * 1e9 * bpp / 2**30
    usable = inst.accelerator_memory_gib * catalog.defaults.usable_memory_fraction
    min_nodes = math.ceil(required_gib / usable) if usable > 0 else 0
    return MemoryFit(instance_type, required_gib, usable, max(min_nodes, 1), bpp)


#: Bytes of training state per parameter: BF16/FP16 weights (2) + gradients (2) + FP32 master
#: weights (4) + Adam's two FP32 moments (8) = 16 (Rajbhandari et al., "ZeRO", 2020, sec. 3.1);
#: FP8 training keeps the same master weights and moments. The same figures as the catalog's
#: defaults.training_bytes_per_param (test_catalog checks they agree).
STATE_BYTES_PER_PARAM: dict[str, float] = {"bf16": 16.0, "fp16": 16.0, "fp8": 16.0}


def training_state_bytes(params: float, precision: str) -> float:
    """Bytes of a full training state (weights, gradients, optimizer) for `params` parameters:
    what one checkpoint writes."""
    return params * STATE_BYTES_PER_PARAM[precision]
