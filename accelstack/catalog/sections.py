"""The catalog's files, in one table: which `Catalog` fields each file fills and how it is
checked (`build`), and how a user's overlay file of the same name merges on top (`rows`).

Loading (`accelstack.catalog.load_catalog`), the overlay (overlay.py: which files a catalog
directory may hold, how they merge), the errors (the file and YAML path of a bad value) and the
hints of a missing fact (`overlay_hint`: what to add to which overlay file) all read `SECTIONS`;
nothing else knows the file layout. Every bundled file may be overlaid.

A new catalog file is one `Section` row here (its facts stay in YAML, its checks in a parser).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from accelstack.catalog.blocks import parse_capacity_blocks
from accelstack.catalog.price_ranges import parse_price_ranges
from accelstack.catalog.purchase import FILE as PURCHASE_FILE
from accelstack.catalog.purchase import parse_table
from accelstack.catalog.records import parse_left_out, parse_records, parse_shapes
from accelstack.catalog.throughput import parse_throughput
from accelstack.errors import CatalogError, did_you_mean, shortened

#: How to name the user's overlay in a hint.
OVERLAY = "your catalog overlay (--catalog DIR or ACCELSTACK_CATALOG_DIR)"

Fields = dict[str, object]
#: (the file's mapping, the file errors name, the fields built so far) -> the fields it adds
Build = Callable[[Mapping[str, Any], Path, Fields], Fields]


@dataclass(frozen=True)
class Section:
    """One catalog file."""

    file: str
    what: str  # one line: what the file holds
    #: The `Catalog` fields the file fills -> the YAML key they come from (errors name it)
    fields: dict[str, str]
    build: Build
    #: Lists merged row by row under an overlay (YAML key -> the fields that identify a row:
    #: an overlay row replaces the bundled row with the same identity, a new one is added).
    #: Mappings always merge key by key; any other list is replaced whole.
    rows: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: Read by this module rather than the `Catalog` (placeholders.py, plan/diff.py): they
    #: get the merged mapping from `accelstack.catalog.catalog_file`.
    reader: str | None = None


def _named(items: Any) -> dict[str, dict[str, object]]:
    return {k: {**v, "name": k} for k, v in dict(items).items()}


def _instances(data: Mapping[str, Any], where: Path, fields: Fields) -> Fields:
    return {
        "device_kinds": _named(data["device_kinds"]),
        "frameworks": _named(data["frameworks"]),
        "retired_frameworks": data.get("retired_frameworks", {}),
        "quotas": data["quotas"],
        "families": _named(data["families"]),
        "instances": _named(data["instances"]),
        "defaults": data["defaults"],
        "charts": _named(data["charts"]),
        "metrics_addon": data.get("metrics_addon"),
    }


def _offerings(data: Mapping[str, Any], where: Path, fields: Fields) -> Fields:
    regions = {
        region: {"zones": dict(body["zones"]), "types": dict(body["types"])}
        for region, body in dict(data["regions"]).items()
    }
    return {"regions": regions, "offerings_source": data["source"]}


def _offerings_extra(data: Mapping[str, Any], where: Path, fields: Fields) -> Fields:
    """Estimated offerings, on top of offerings.yaml's (their types are marked estimated)."""
    regions: dict[str, dict[str, Any]] = dict(fields["regions"])  # type: ignore[call-overload]
    for region, body in dict(data.get("regions", {})).items():
        reg = dict(regions.get(region, {"zones": {}, "types": {}}))
        reg["zones"] = {**reg["zones"], **body.get("zones", {})}
        reg["types"] = {**reg["types"], **body.get("types", {})}
        reg["estimated_types"] = tuple(body.get("types", {}))
        regions[region] = reg
    return {"regions": regions}


def _prices(data: Mapping[str, Any], where: Path, fields: Fields) -> Fields:
    sources = dict(data.get("sources") or {})
    return {
        "instance_rates": [
            _sourced(r, f"instances[{i}]", sources, where) for i, r in enumerate(data["instances"])
        ],
        "service_rates": [
            _sourced(r, f"services[{i}]", sources, where) for i, r in enumerate(data["services"])
        ],
        "hours_per_month": data["hours_per_month"],
    }


def _sourced(row: Any, at: str, sources: Mapping[str, str], where: Path) -> Any:
    """A price row with its `source_ref` (a key of the file's `sources:` table) replaced by
    the source text, so the loaded row is the same as one that spells its source out."""
    if not isinstance(row, dict) or "source_ref" not in row:
        return row
    ref = row["source_ref"]
    if "source" in row:
        raise CatalogError(f"{where}: {at}: has both source and source_ref; keep one")
    if not isinstance(ref, str) or ref not in sources:
        raise CatalogError(
            f"{where}: {at}.source_ref: {ref!r} is not a key of `sources:`"
            f"{did_you_mean(str(ref), sources)}"
        )
    out = {k: v for k, v in row.items() if k != "source_ref"}
    out["source"] = sources[ref]
    return out


def _records(data: Mapping[str, Any], where: Path, fields: Fields) -> Fields:
    return {
        "records": parse_records(data, where),
        "left_out": parse_left_out(data, where),
        "record_shapes": parse_shapes(data, where),
    }


def _raw(name: str) -> Build:
    def build(data: Mapping[str, Any], where: Path, fields: Fields) -> Fields:
        return {name: dict(data)}

    return build


def _purchase(data: Mapping[str, Any], where: Path, fields: Fields) -> Fields:
    from accelstack.catalog.facts import PURCHASE_OPTIONS

    table = parse_table(dict(data), where, PURCHASE_OPTIONS)
    return {"purchase_options": table.purchase_options, "purchase_sources": table.sources}


class _Row(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    source: str


class _Network(_Row):
    cidr: str


class _Account(_Row):
    id: str


class _Placeholders(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    documentation_networks: tuple[_Network, ...]
    example_accounts: tuple[_Account, ...]


class _Replacements(BaseModel):
    # node_rolls: plan/rolls.py checks the rows; create_before_delete: plan/create_before_delete.py
    model_config = ConfigDict(frozen=True, extra="allow", defer_build=True)
    stateful_types: tuple[str, ...]
    create_before_delete: dict[str, Any]


def _checked(model: type[BaseModel]) -> Build:
    """Validated here for shape (errors name the file and YAML path); the module that reads
    the file builds its own table from the merged mapping."""

    def build(data: Mapping[str, Any], where: Path, fields: Fields) -> Fields:
        model.model_validate(dict(data))
        return {}

    return build


SECTIONS: tuple[Section, ...] = (
    Section(
        "instances.yaml",
        "device kinds, frameworks, families, instance types, defaults, charts",
        {
            f: f
            for f in (
                "device_kinds",
                "frameworks",
                "retired_frameworks",
                "quotas",
                "families",
                "instances",
                "defaults",
                "charts",
                "metrics_addon",
            )
        },
        _instances,
    ),
    Section(
        "offerings.yaml",
        "zones per region and the zones offering each type",
        {"regions": "regions", "offerings_source": "source"},
        _offerings,
    ),
    Section(
        "offerings_extra.yaml",
        "estimated offerings (types AWS's offering list does not show yet)",
        {"regions": "regions"},
        _offerings_extra,
    ),
    Section(
        "prices.yaml",
        "instance and service rates, each with its source",
        {
            "instance_rates": "instances",
            "service_rates": "services",
            "hours_per_month": "hours_per_month",
        },
        _prices,
        rows={"instances": ("region", "type", "option"), "services": ("region", "item")},
    ),
    Section(
        "records.yaml",
        "public training records the MFU curves are fitted to",
        {"records": "records", "left_out": "left_out", "record_shapes": "shapes"},
        _records,
        rows={"records": ("id",), "left_out": ("id",)},
    ),
    Section(
        "throughput.yaml",
        "MFU curves, goodput and scaling",
        {"throughput": ""},
        lambda data, where, fields: {"throughput": parse_throughput(dict(data), where)},
        rows={"curves": ("family", "precisions"), "step": ("family",)},
    ),
    Section(
        "capacity_blocks.yaml",
        "Capacity Block durations, steps and limits",
        {"capacity_blocks": ""},
        lambda data, where, fields: {"capacity_blocks": parse_capacity_blocks(dict(data), where)},
    ),
    Section(
        "launch.yaml",
        "launch facts of the rendered artifacts",
        {"launch": ""},
        _raw("launch"),
        rows={"dlami_python_envs": ("device_kind", "path")},
    ),
    Section(
        PURCHASE_FILE,
        "what each purchase option means to every layer",
        {"purchase_options": "purchase_options", "purchase_sources": "sources"},
        _purchase,
    ),
    Section(
        "price_ranges.yaml",
        "the plausible low/high of every estimated instance rate, each with its source",
        {"price_ranges": "price_ranges"},
        lambda data, where, fields: {"price_ranges": parse_price_ranges(dict(data), where)},
        rows={"price_ranges": ("option", "types")},
    ),
    Section("scale.yaml", "EKS limits, address space, UltraServers", {"scale": ""}, _raw("scale")),
    Section(
        "resilience.yaml",
        "checkpoints, node repair, node-group updates",
        {"resilience": ""},
        _raw("resilience"),
    ),
    Section(
        "placeholders.yaml",
        "documentation-only networks and accounts a filled-in spec must not carry",
        {},
        _checked(_Placeholders),
        rows={"documentation_networks": ("cidr",), "example_accounts": ("id",)},
        reader="accelstack/resolve/placeholders.py",
    ),
    Section(
        "replacements.yaml",
        "stateful types, node rolls, what create-before-delete must keep unique",
        {},
        _checked(_Replacements),
        reader="accelstack/plan/diff.py, accelstack/plan/rolls.py, accelstack/plan/create_before_delete.py",
    ),
)
#: The files a catalog directory (bundled or overlay) may hold.
FILES: tuple[str, ...] = tuple(s.file for s in SECTIONS)
BY_FILE: dict[str, Section] = {s.file: s for s in SECTIONS}


def section_of_field(name: str) -> Section | None:
    """The section a `Catalog` field comes from (the first that fills it: offerings.yaml
    for `regions`, which offerings_extra.yaml adds to)."""
    found = [s for s in SECTIONS if name in s.fields]
    return found[0] if found else None


def service_row(region: str, item: str) -> str:
    """An example prices.yaml `services:` row for a hint."""
    return f"{{region: '{region}', item: {item}, unit: ..., usd: ..., as_of: YYYY-MM, source: ...}}"


def overlay_hint(file: str, key: str, example: str) -> str:
    """How to add a missing fact: the overlay file, the key and an example row."""
    if file not in BY_FILE:
        raise KeyError(file)
    return f"add it to {OVERLAY}: {file}, under `{key}:`, e.g. {example}"


def new_type_hint(name: str, suggestion: str) -> str:
    """How to add an instance type the catalog lacks: its row, then where and at what price
    (nothing when a known type is a likely typo: `suggestion` is a "did you mean")."""
    if suggestion:
        return ""
    row = f"{{{shortened(name)}: {{family: ..., chips: ..., vcpus: ..., memory_gib: ..., source: ...}}}}"
    return (
        f"; for a type the catalog lacks, {overlay_hint('instances.yaml', 'instances', row)}, "
        "with its zones in offerings_extra.yaml and its price in prices.yaml"
    )


def new_region_hint(region: str, suggestion: str) -> str:
    """How to add a region the catalog lacks: where its types are offered (and their prices);
    nothing when a known region is a likely typo."""
    if suggestion:
        return ""
    row = f"{{{shortened(region)}: {{types: {{TYPE: [ZONE_ID, ...]}}}}}}"
    return (
        f"; for a region the catalog lacks, "
        f"{overlay_hint('offerings_extra.yaml', 'regions', row)}, with its prices in prices.yaml"
    )


def new_curve_hint(family: str, precision: str) -> str:
    """How to add the MFU curve a family lacks for a precision."""
    row = (
        f"{{family: {family}, precisions: [{precision}], basis: extrapolated, "
        "from_curve: {family: ..., precision: ...}, factor: ..., extra_spread: ..., reason: ...}"
    )
    return overlay_hint("throughput.yaml", "curves", row)
