"""Clone a preset and retarget its workload pool to another instance type (`accelstack new`).

Pure functions over the raw YAML mapping: derived fields that depend on the device kind
(framework, image, logical cores, compile cache, pre-compile steps) are switched or dropped;
anything the target cannot honour as specified is refused with the reason.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from accelstack.catalog import Catalog
from accelstack.catalog.sizing import memory_fit
from accelstack.errors import Problem, SpecError, did_you_mean
from accelstack.spec.loader import parse_spec
from accelstack.spec.models import Spec


@dataclass
class Retargeted:
    data: dict[str, Any]
    spec: Spec
    notes: list[str] = field(default_factory=list)


def _workload_pool(data: dict[str, Any]) -> dict[str, Any]:
    pools = data.get("pools") or []
    name = (data.get("workload") or {}).get("pool")
    for pool in pools:
        if name is None or pool.get("name") == name:
            return pool  # type: ignore[no-any-return]
    raise SpecError([Problem("preset", "workload.pool", f"'{name}' is not a pool")])


def retarget(
    data: dict[str, Any],
    catalog: Catalog,
    *,
    name: str,
    source: str,
    instance_type: str | None = None,
    nodes: int | None = None,
    image: str | None = None,
) -> Retargeted:
    """Return the cloned mapping, its validated spec and notes on what changed."""
    out = copy.deepcopy(data)
    notes: list[str] = []
    out["name"] = name
    pool = _workload_pool(out)
    old_type = str(pool.get("instance_type"))
    refuse: list[str] = []

    if instance_type is not None and instance_type != old_type:
        if (
            instance_type not in catalog.instances
            or not catalog.instances[instance_type].accelerated
        ):
            raise SpecError(
                [
                    Problem(
                        "--instance-type",
                        "",
                        f"'{instance_type}' is not a known "
                        f"instance type{did_you_mean(instance_type, catalog.accelerated_types())}",
                    )
                ]
            )
        old_kind = catalog.device_kind_of(old_type)
        new_kind = catalog.device_kind_of(instance_type)
        new_inst = catalog.instance(instance_type)
        pool["instance_type"] = instance_type
        notes.append(f"pools.{pool['name']}.instance_type: {old_type} -> {instance_type}")
        wl = out.setdefault("workload", {})
        if old_kind.name != new_kind.name:
            if wl.get("framework") is not None:
                notes.append(
                    f"workload.framework: {wl['framework']} -> {new_kind.default_framework}"
                )
                wl["framework"] = new_kind.default_framework
            else:
                notes.append(
                    f"workload.framework (derived): {old_kind.default_framework} -> "
                    f"{new_kind.default_framework}"
                )
            old_image = wl.get("image")
            if image is None and old_image not in (None, old_kind.default_image):
                refuse.append(
                    f"workload.image '{old_image}' was built for "
                    f"{old_kind.default_framework}; pass --image with a "
                    f"{new_kind.default_framework} image"
                )
            elif old_image is not None and image is None:
                wl["image"] = new_kind.default_image
                notes.append(f"workload.image -> {new_kind.default_image}")
            for key in ("logical_cores", "compile_cache"):
                if key in pool and not new_kind.compile_cache:
                    notes.append(f"pools.{pool['name']}.{key}: dropped (Neuron only)")
                    pool.pop(key)
            if "precompile_steps" in wl and not new_kind.compile_cache:
                notes.append("workload.precompile_steps: dropped (Neuron only)")
                wl.pop("precompile_steps")
        if pool.get("efa") is True and not new_inst.efa_supported:
            refuse.append(
                f"pool '{pool['name']}' asks for EFA, which {instance_type} does not have"
            )
        if not new_inst.efa_supported:
            for key in ("efa", "efa_interface_style"):
                if key in pool:
                    notes.append(
                        f"pools.{pool['name']}.{key}: dropped ({instance_type} has no EFA)"
                    )
                    pool.pop(key)
        elif pool.get("efa") is False and catalog.instance(old_type).efa_supported is False:
            pool.pop("efa")
            notes.append(f"pools.{pool['name']}.efa: now on by default ({instance_type} has EFA)")
        if "logical_cores" in pool and new_kind.compile_cache:
            per_chip = new_inst.physical_cores_per_chip
            if per_chip % int(pool["logical_cores"]):
                pool.pop("logical_cores")
                notes.append(f"pools.{pool['name']}.logical_cores: dropped (family default)")
    if image is not None:
        out.setdefault("workload", {})["image"] = image
        notes.append(f"workload.image -> {image}")
    if nodes is not None:
        pool["nodes"] = nodes
        notes.append(f"pools.{pool['name']}.nodes -> {nodes}")

    neuron_left = any(
        p.get("instance_type") in catalog.instances
        and catalog.device_kind_of(p["instance_type"]).compile_cache
        for p in out.get("pools", [])
    )
    if "compile_cache" in out and not neuron_left:
        out.pop("compile_cache")
        notes.append("compile_cache: dropped (no Neuron pool left)")

    if refuse:
        raise SpecError(
            [Problem(source, "", f"cannot retarget to {instance_type}: {r}") for r in refuse]
        )
    try:
        spec = parse_spec(out, f"{source} -> {name}", catalog)
    except SpecError as exc:
        raise SpecError(
            [Problem(p.file, p.path, f"cannot retarget: {p.message}") for p in exc.problems]
        ) from None
    wl_pool = spec.workload_pool
    fit = memory_fit(
        catalog, wl_pool.instance_type, spec.workload.model.params_billion, spec.workload.precision
    )
    if not fit.fits(wl_pool.nodes):
        raise SpecError(
            [
                Problem(
                    source,
                    f"pools.{wl_pool.name}.nodes",
                    f"cannot hold the workload: {spec.workload.model.params_billion:g}B parameters need "
                    f"{fit.required_gib:,.0f} GiB of training state, {wl_pool.nodes} x "
                    f"{wl_pool.instance_type} give {wl_pool.nodes * fit.usable_gib_per_node:,.0f} GiB "
                    f"usable; use --nodes {fit.min_nodes} or more",
                )
            ]
        )
    return Retargeted(out, spec, notes)
