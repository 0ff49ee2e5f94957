"""The fabric acceptance job: the vendor's collective benchmark across every node of the
workload pool (nccl-tests all_reduce_perf on NVIDIA, nccom-test on Trainium), launched by the
stack's job controller (a TrainJob on Kubeflow Trainer's MPI runtime), with a pass/fail
threshold on the all-reduce bus bandwidth computed from catalog facts (launch.yaml
fabric_test: formula, tolerance and sources)."""

from __future__ import annotations

from dataclasses import dataclass

from accelstack.catalog import FabricTool
from accelstack.resolve import ResolvedPool, Stack


@dataclass(frozen=True)
class FabricThreshold:
    """Expected all-reduce bus bandwidth of the pool (network bound) and the pass line."""

    nodes: int
    ranks_per_node: int
    node_gbs: float  # the node's EFA bandwidth, GB/s
    expected_gbs: float
    tolerance: float
    min_gbs: float
    estimate: bool


def expected_busbw_gbs(node_gbs: float, nodes: int, ranks_per_node: int) -> float:
    """All-reduce bus bandwidth when each node's EFA bandwidth is the bound: a node moves
    2 (N - 1) / N of the data over EFA, busbw = algbw x 2 (n - 1) / n for n = N g ranks, so
    busbw = B (N g - 1) / (g (N - 1)) (derivation and sources: launch.yaml fabric_test)."""
    if nodes < 2 or ranks_per_node < 1:
        raise ValueError("the network bound needs at least 2 nodes and 1 rank per node")
    n = nodes * ranks_per_node
    return node_gbs * (n - 1) / (ranks_per_node * (nodes - 1))


def fabric_tool(stack: Stack, pool: ResolvedPool) -> FabricTool | None:
    facts = stack.launch.fabric_test
    return facts.tools.get(pool.device.name) if facts else None


def fabric_threshold(stack: Stack, pool: ResolvedPool) -> FabricThreshold | None:
    """The pool's threshold, or None where the test does not apply (one node, no EFA, no tool
    for the device kind)."""
    facts = stack.launch.fabric_test
    if facts is None or pool.nodes < 2 or not pool.efa or fabric_tool(stack, pool) is None:
        return None
    node_gbs = pool.instance.efa_gbps / 8
    expected = expected_busbw_gbs(node_gbs, pool.nodes, pool.procs_per_node)
    return FabricThreshold(
        nodes=pool.nodes,
        ranks_per_node=pool.procs_per_node,
        node_gbs=node_gbs,
        expected_gbs=round(expected, 1),
        tolerance=facts.tolerance,
        min_gbs=round(expected * facts.tolerance, 1),
        estimate=facts.estimate or pool.instance.estimated_fields != (),
    )
