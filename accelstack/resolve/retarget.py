"""Clone a preset and retarget its workload pool to another instance type (`accelstack new`).

Pure functions over the raw YAML mapping (a comment-keeping ruamel mapping from `new`): derived
fields that depend on the family's training path or the device kind (framework, image, logical
cores, compile cache, pre-compile settings) are switched or dropped; anything the target cannot
honour as specified is refused with the reason.

* A pool whose name names the old silicon (a `-`-separated part equal to the old type's
  generation, `trn2` of trn2.48xlarge) is renamed after the new one (`p5`), kept unique, and
  `workload.pool` follows. Other names (`workers`) are kept.
* The Neuron-only settings a move to a non-Neuron type drops are returned as `stash` (the
  caller keeps them in the file's header); a later retarget back to a Neuron type restores them
  (pre-compile settings only where the new training path has a pre-compile phase).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

from accelstack.catalog import Catalog, Framework
from accelstack.errors import Problem, SpecError, did_you_mean, shown
from accelstack.spec.loader import parse_spec
from accelstack.spec.models import Spec


@dataclass
class Retargeted:
    data: dict[str, Any]
    spec: Spec
    notes: list[str] = field(default_factory=list)
    stash: dict[str, Any] = field(default_factory=dict)  # Neuron settings to carry along


#: Neuron-only keys a retarget to a non-Neuron type drops: where each lives ("pool": the
#: workload pool, "workload", "stack": top level) and its key.
NEURON_KEYS = (
    ("pool", "logical_cores"),
    ("pool", "compile_cache"),
    ("workload", "precompile_steps"),
    ("workload", "precompile_args"),
    ("stack", "compile_cache"),
)


def _plain(value: Any) -> Any:
    """A JSON-ready copy of a YAML value (ruamel mappings and sequences as dict and list)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, bool):
        return value
    for kind in (int, float, str):  # ruamel's scalar subclasses as plain values
        if isinstance(value, kind):
            return kind(value)
    return str(value)


def _workload_pool(data: dict[str, Any]) -> dict[str, Any]:
    pools = data.get("pools") or []
    name = (data.get("workload") or {}).get("pool")
    for pool in pools:
        if name is None or pool.get("name") == name:
            return pool  # type: ignore[no-any-return]
    raise SpecError([Problem("preset", "workload.pool", f"{shown(name)} is not a pool")])


def _check_target(catalog: Catalog, instance_type: str) -> None:
    """Refuse a type the catalog does not know as an accelerated instance."""
    if instance_type in catalog.instances and catalog.instances[instance_type].accelerated:
        return
    raise SpecError(
        [
            Problem(
                "--instance-type",
                "",
                f"{shown(instance_type)} is not a known "
                f"instance type{did_you_mean(instance_type, catalog.accelerated_types())}",
            )
        ]
    )


def _switch_framework(
    catalog: Catalog, wl: dict[str, Any], old_type: str, new_type: str, notes: list[str]
) -> tuple[Framework, Framework] | None:
    """Move the workload to the target family's default framework unless the one it runs (set
    or derived) is allowed there; drop pre-compile settings the new path has no phase for.
    Returns (old, new) framework rows when the framework changed."""
    old_fam, new_fam = catalog.family_of(old_type), catalog.family_of(new_type)
    explicit = wl.get("framework")
    old_name = explicit or catalog.default_framework(old_fam) or ""
    if old_name in catalog.family_frameworks(new_fam):
        return None
    new_name = catalog.default_framework(new_fam) or ""
    if explicit is not None:
        wl["framework"] = new_name
        notes.append(f"workload.framework: {old_name} -> {new_name}")
    else:
        notes.append(f"workload.framework (derived): {old_name} -> {new_name}")
    new_fw = catalog.frameworks[new_name]
    for key in ("precompile_steps", "precompile_args"):
        if key in wl and not new_fw.precompile:
            notes.append(f"workload.{key}: dropped ({new_name} has no pre-compile phase)")
            wl.pop(key)
    return catalog.frameworks[old_name], new_fw


def _switch_image(
    wl: dict[str, Any],
    frameworks: tuple[Framework, Framework],
    eks: bool,
    notes: list[str],
    refuse: list[str],
) -> None:
    """Follow the default image to the new framework; a custom image needs --image, and so
    does a framework without a public image (on EKS)."""
    old_fw, new_fw = frameworks
    old_image = wl.get("image")
    if old_image not in (None, old_fw.default_image):
        refuse.append(
            f"workload.image '{old_image}' was built for {old_fw.name}; pass --image with a "
            f"{new_fw.name} image"
        )
    elif new_fw.default_image is None and eks:
        refuse.append(f"framework {new_fw.name} needs --image: {new_fw.image_note}")
    elif old_image is not None:
        notes.append(f"workload.image -> {new_fw.default_image}")
        wl["image"] = new_fw.default_image
        if new_fw.default_image is None:
            wl.pop("image")


def _places(out: dict[str, Any], pool: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {"pool": pool, "workload": out.setdefault("workload", {}), "stack": out}


def _where(place: str, pool: dict[str, Any], key: str) -> str:
    return {"pool": f"pools.{pool['name']}.", "workload": "workload.", "stack": ""}[place] + key


def _drop_neuron_only(
    out: dict[str, Any], pool: dict[str, Any], catalog: Catalog, stash: dict[str, Any]
) -> list[str]:
    """Drop the Neuron-only keys (the stack's compile_cache only when no Neuron pool is left);
    each dropped value goes into `stash`. Returns the notes."""
    notes = []
    neuron_left = any(
        p.get("instance_type") in catalog.instances
        and catalog.device_kind_of(p["instance_type"]).compile_cache
        for p in out.get("pools", [])
    )
    for place, key in NEURON_KEYS:
        holder = _places(out, pool)[place]
        if key not in holder or (place == "stack" and neuron_left):
            continue
        keys = list(holder)
        at = keys.index(key)
        if at:  # where it stood, so a restore puts it back there
            stash.setdefault("after", {})[f"{place}.{key}"] = str(keys[at - 1])
        stash[f"{place}.{key}"] = _plain(holder.pop(key))
        notes.append(f"{_where(place, pool, key)}: dropped (Neuron only; kept in the header)")
    return notes


def _restore_neuron(out: dict[str, Any], pool: dict[str, Any], stash: dict[str, Any]) -> list[str]:
    """Put back what an earlier retarget away from Neuron dropped (unless set again)."""
    notes = []
    after = stash.pop("after", None) or {}
    for place, key in NEURON_KEYS:
        holder = _places(out, pool)[place]
        value = stash.pop(f"{place}.{key}", None)
        if value is not None and key not in holder:
            _put_back(holder, key, value, after.get(f"{place}.{key}"))
            notes.append(f"{_where(place, pool, key)}: restored ({json.dumps(value)})")
    return notes


def _put_back(holder: dict[str, Any], key: str, value: Any, after: str | None) -> None:
    """Insert `key` after the key it followed (a comment-keeping mapping has `insert`)."""
    keys = list(holder)
    insert = getattr(holder, "insert", None)
    if callable(insert) and after in keys:
        insert(keys.index(after) + 1, key, value)
    else:
        holder[key] = value


def _generation(instance_type: str) -> str:
    """The silicon's short name, as pool names use it: trn2.48xlarge -> trn2."""
    return instance_type.split(".", 1)[0]


def _rename_pool(out: dict[str, Any], pool: dict[str, Any], old_type: str, new_type: str) -> str:
    """Rename a pool named after the old silicon; returns the note, or "" when kept."""
    old, new = _generation(old_type), _generation(new_type)
    parts = str(pool["name"]).split("-")
    if old == new or old not in parts:
        return ""
    base = "-".join(new if p == old else p for p in parts)[:20].rstrip("-")
    taken = {str(p.get("name")) for p in out.get("pools", []) if p is not pool}
    name, n = base, 2
    while name in taken:
        name, n = f"{base}-{n}", n + 1
    wl = out.setdefault("workload", {})
    if wl.get("pool") == pool["name"]:
        wl["pool"] = name
    note = f"pools.{pool['name']}.name -> {name} (named after the silicon; workload.pool follows)"
    pool["name"] = name
    return note


def _drop_precompile_without_phase(
    catalog: Catalog, wl: dict[str, Any], instance_type: str
) -> list[str]:
    """Restored pre-compile settings stay only where the training path has a pre-compile
    phase (xla); the native path compiles at the first step."""
    name = wl.get("framework") or catalog.default_framework(catalog.family_of(instance_type))
    fw = catalog.frameworks.get(name or "")
    if fw is None or fw.precompile:
        return []
    dropped = [key for key in ("precompile_steps", "precompile_args") if key in wl]
    for key in dropped:
        wl.pop(key)
    return [f"workload.{key}: dropped ({fw.name} has no pre-compile phase)" for key in dropped]


def _fit_efa(
    pool: dict[str, Any],
    catalog: Catalog,
    old_type: str,
    instance_type: str,
    notes: list[str],
    refuse: list[str],
) -> None:
    """Drop EFA keys the new type cannot honour; turn EFA back on where it now can be."""
    name = pool["name"]
    if catalog.instance(instance_type).efa_supported:
        if pool.get("efa") is False and catalog.instance(old_type).efa_supported is False:
            pool.pop("efa")
            notes.append(f"pools.{name}.efa: now on by default ({instance_type} has EFA)")
        return
    if pool.get("efa") is True:
        refuse.append(f"pool '{name}' asks for EFA, which {instance_type} does not have")
    for key in ("efa", "efa_interface_style"):
        if key in pool:
            notes.append(f"pools.{name}.{key}: dropped ({instance_type} has no EFA)")
            pool.pop(key)


def _fit_logical_cores(
    pool: dict[str, Any], catalog: Catalog, instance_type: str, notes: list[str]
) -> None:
    """Drop logical_cores that do not divide the new type's physical cores per chip or that
    its family does not accept (trn1: 1 only)."""
    if "logical_cores" not in pool or not catalog.device_kind_of(instance_type).compile_cache:
        return
    lnc = int(pool["logical_cores"])
    allowed_here = catalog.family_of(instance_type).logical_cores_allowed
    if catalog.instance(instance_type).physical_cores_per_chip % lnc or lnc not in allowed_here:
        pool.pop("logical_cores")
        notes.append(f"pools.{pool['name']}.logical_cores: dropped (family default)")


#: The pool setting for container storage (spec Pool.container_storage) and the value a new
#: stack gets where its type has the NVMe instance-store disks for it
STORAGE_KEY, INSTANCE_STORE = "container_storage", "instance_store_raid0"


def _fit_container_storage(
    pool: dict[str, Any], catalog: Catalog, instance_type: str, notes: list[str]
) -> None:
    """Drop instance-store container storage the new type cannot hold (too few NVMe disks);
    a type that has them gets it back from `_new_stack_storage`."""
    if pool.get(STORAGE_KEY) != INSTANCE_STORE:
        return
    if catalog.scale.instance_store.strategy_for(instance_type) is None:
        pool.pop(STORAGE_KEY)
        notes.append(
            f"pools.{pool['name']}.{STORAGE_KEY}: dropped ({instance_type} has too few NVMe "
            "instance-store disks; the root volume)"
        )


def _new_stack_storage(out: dict[str, Any], catalog: Catalog) -> list[str]:
    """A new stack's EKS pools keep container storage on the NVMe instance store where the
    type has the disks for it, written into the file: the spec's unset default is the root
    volume (what specs written before the setting boot with), and a new stack has no nodes
    yet to roll. A value already there is kept."""
    if out.get("orchestration", "eks") != "eks":
        return []
    notes = []
    for pool in out.get("pools") or []:
        itype = str(pool.get("instance_type"))
        if STORAGE_KEY in pool or catalog.scale.instance_store.strategy_for(itype) is None:
            continue
        _put_back(pool, STORAGE_KEY, INSTANCE_STORE, "nodes")
        notes.append(
            f"pools.{pool.get('name')}.{STORAGE_KEY}: {INSTANCE_STORE} (containerd on a RAID0 "
            f"of {itype}'s NVMe disks; docs/scale.md)"
        )
    return notes


LABELS_KEY = "labels_at_boot"


def _new_stack_labels(out: dict[str, Any]) -> list[str]:
    """A new stack's EKS pools register their nodes with their scheduling labels, written
    into the file: the spec's unset default leaves them to EKS (what specs written before the
    setting boot with), and a new stack has no nodes yet to roll. A value already there is
    kept."""
    if out.get("orchestration", "eks") != "eks":
        return []
    notes = []
    for pool in out.get("pools") or []:
        if LABELS_KEY in pool:
            continue
        _put_back(pool, LABELS_KEY, True, STORAGE_KEY if STORAGE_KEY in pool else "nodes")
        notes.append(
            f"pools.{pool.get('name')}.{LABELS_KEY}: true (nodes register with their device "
            "plugin's scheduling labels)"
        )
    return notes


def _retype(
    out: dict[str, Any],
    pool: dict[str, Any],
    catalog: Catalog,
    instance_type: str,
    image: str | None,
    notes: list[str],
    refuse: list[str],
    stash: dict[str, Any],
) -> None:
    """Move the workload pool to `instance_type` and adjust what depends on it."""
    _check_target(catalog, instance_type)
    old_type = str(pool.get("instance_type"))
    old_kind = catalog.device_kind_of(old_type)
    new_kind = catalog.device_kind_of(instance_type)
    pool["instance_type"] = instance_type
    notes.append(f"pools.{pool['name']}.instance_type: {old_type} -> {instance_type}")
    renamed = _rename_pool(out, pool, old_type, instance_type)
    notes += [renamed] if renamed else []
    wl = out.setdefault("workload", {})
    if old_kind.name != new_kind.name and not new_kind.compile_cache:
        notes += _drop_neuron_only(out, pool, catalog, stash)  # stashed before the path drops them
    switched = _switch_framework(catalog, wl, old_type, instance_type, notes)
    if switched is not None and image is None:
        eks = out.get("orchestration", "eks") == "eks"
        _switch_image(wl, switched, eks, notes, refuse)
    if old_kind.name != new_kind.name and new_kind.compile_cache:
        notes += _restore_neuron(out, pool, stash)
        notes += _drop_precompile_without_phase(catalog, wl, instance_type)
    _fit_efa(pool, catalog, old_type, instance_type, notes, refuse)
    _fit_logical_cores(pool, catalog, instance_type, notes)
    _fit_container_storage(pool, catalog, instance_type, notes)


def _validated(out: dict[str, Any], source: str, name: str) -> Spec:
    """The cloned mapping's shape (the rules judge it when the caller resolves it:
    `cli.specfiles.resolved_target`); every problem says the retarget caused it."""
    try:
        return parse_spec(out, f"{source} -> {name}")
    except SpecError as exc:
        raise SpecError(
            [Problem(p.file, p.path, f"cannot retarget: {p.message}") for p in exc.problems]
        ) from None


def retarget(
    data: dict[str, Any],
    catalog: Catalog,
    *,
    name: str,
    source: str,
    instance_type: str | None = None,
    nodes: int | None = None,
    image: str | None = None,
    stash: dict[str, Any] | None = None,
) -> Retargeted:
    """Return the cloned mapping, its spec (shape checked: resolve it to run the rules) and
    notes on what changed. `stash`: the Neuron settings an earlier retarget dropped (restored
    when the target is Neuron again)."""
    out = copy.deepcopy(data)
    carried = dict(stash or {})
    notes: list[str] = []
    out["name"] = name
    pool = _workload_pool(out)
    refuse: list[str] = []
    if instance_type is not None and instance_type != str(pool.get("instance_type")):
        _retype(out, pool, catalog, instance_type, image, notes, refuse, carried)
    if image is not None:
        out.setdefault("workload", {})["image"] = image
        notes.append(f"workload.image -> {image}")
    if nodes is not None:
        pool["nodes"] = nodes
        notes.append(f"pools.{pool['name']}.nodes -> {nodes}")
    if refuse:
        raise SpecError(
            [Problem(source, "", f"cannot retarget to {instance_type}: {r}") for r in refuse]
        )
    notes += _new_stack_storage(out, catalog) + _new_stack_labels(out)
    spec = _validated(out, source, name)
    return Retargeted(out, spec, notes, carried)


def _buy_under(pool: dict[str, Any], catalog: Catalog, option: str) -> None:
    """Set the pool's purchase option; its reservations stay only under an option that needs
    one (a candidate on a Capacity Block not bought yet has none)."""
    purchase = pool.setdefault("purchase", {})
    purchase["option"] = option
    if not catalog.purchase(option).needs_reservation:
        for key in ("reservation_id", "reservations", "instances"):
            purchase.pop(key, None)


def retarget_spec(
    spec: Spec, catalog: Catalog, *, instance_type: str, nodes: int, option: str
) -> Spec:
    """`spec` with its workload pool moved to `nodes` x `instance_type` bought under `option`:
    the edit `retarget` makes for `new` (framework, image, logical cores, EFA and the
    Neuron-only keys follow the type; a pool named after the silicon is renamed), for the
    candidates `compare` resolves and prices.

    A candidate is a what-if to price, not a file to write: it is checked for shape, not by
    the spec rules (a Capacity Block not bought yet has no reservation id), and what `new`
    refuses changes no price and is left as the edit leaves it (a custom image built for the
    old framework is kept; EFA asked of a type without it is turned off)."""
    out = spec.model_dump(mode="json", exclude_unset=True)
    pool = _workload_pool(out)
    if instance_type != str(pool.get("instance_type")):
        _retype(out, pool, catalog, instance_type, None, [], [], {})
    pool["nodes"] = nodes
    _buy_under(pool, catalog, option)
    return Spec.model_validate(out).read_from(spec.file)
