"""Rules on the resolved stack about how an UltraServer pool is bought and placed: a pool of
UltraServer members runs whole UltraServers, spares and reservations included.

An UltraServer's instances share NeuronLink and are sold and placed as one unit (catalog
scale.yaml `ultraservers`, with the source): a Capacity Block for UltraServers holds whole
ones, and a job's UltraServerConfig mode (the Neuron DRA claim) takes every node of each
server it uses. The spec rule `pool-ultraserver` refuses a pool's `nodes` and each listed
reservation that is not whole; these rules hold what resolve adds on top (the running nodes,
nodes + spare_nodes, and the size of a single reservation), on the resolved pool's facts.
"""

from __future__ import annotations

from collections.abc import Iterator

from accelstack import rulebook
from accelstack.resolve.stack import ResolvedPool, Stack
from accelstack.spec.scale_rules import first_url

Finding = rulebook.Finding
StackRule = rulebook.Rule[Stack]


def _ultraserver_pools(stack: Stack) -> Iterator[tuple[str, ResolvedPool, int]]:
    """(YAML path, pool, its UltraServer size) of each UltraServer pool."""
    for i, p in enumerate(stack.pools):
        if p.ultraserver is not None:
            yield f"pools[{i}]", p, p.ultraserver.instances


def _options(count: int, size: int, least: int = 0) -> str:
    """The whole-server counts nearest `count`, at least `least`: '0 or 4', '4 or 8'."""
    lower = count - count % size
    return " or ".join(str(n) for n in (lower, lower + size) if n >= least)


@rulebook.rule(
    "ultraserver-spares-whole",
    "an UltraServer pool's spare nodes, and the capacity its single reservation holds, are "
    "whole UltraServers",
)
def _spares_whole(stack: Stack) -> Iterator[Finding]:
    """8 nodes + 2 spares of trn2u.48xlarge would run 2.5 UltraServers: no Capacity Block sells
    half a server, and a spare that is not a whole server cannot replace one a job uses whole."""
    for at, p, size in _ultraserver_pools(stack):
        us = p.ultraserver
        assert us is not None
        if p.spare_nodes % size:
            yield (
                f"{at}.spare_nodes",
                f"{p.spare_nodes} spare {p.instance_type} node(s) make the pool run "
                f"{p.running_nodes} nodes, {p.running_nodes / size:g} UltraServers of {size} "
                f"({first_url(us.source)}): a Capacity Block sells whole UltraServers and a "
                f"job takes every node of each one it uses; use {_options(p.spare_nodes, size)} "
                "spare nodes",
            )
        held = p.held_instances
        if held is not None and held % size:
            yield (
                f"{at}.purchase.instances",
                f"{held} {p.instance_type} instances is not a whole number of UltraServers "
                f"({size} instances each): a Capacity Block for UltraServers holds whole ones; "
                f"use {_options(held, size, least=1)}",
            )


#: This module's rules, in report order (STACK_RULES lists this tuple).
MODULE_RULES: tuple[StackRule, ...] = (_spares_whole,)
