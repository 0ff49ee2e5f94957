"""instances: the accelerated instance types the catalog knows, like SkyPilot's `show-gpus`
(`--accelerator H100:8` as its `--gpus` takes it).

Every column comes from the catalog (instances.yaml, the offerings, prices.yaml): a new type,
region or purchase option there shows up here with no code change. Offline; no AWS calls.
Filters: the types (`--type`), an accelerator and chip count (`--accelerator NAME[:COUNT]`,
`--chips`), a region; `--by-region` lists every region offering each type, `--sort OPTION`
orders by a purchase option's price and `--per-chip` prices a chip-hour.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from accelstack.cli import completion
from accelstack.cli.output import echo_json

if TYPE_CHECKING:
    from accelstack.catalog import Catalog, Rate


def _price(r: Rate, chips: int) -> dict[str, Any]:
    return {
        "usd": r.usd,
        "usd_per_chip": r.usd / chips if chips else None,  # a CPU type has no chip
        "estimate": r.estimate,
        "as_of": r.as_of,
        "source": r.source,
    }


def _prices(cat: Catalog, itype: str, region: str | None) -> dict[str, dict[str, Any]]:
    """option -> {region: {usd, usd_per_chip, estimate, as_of, source}}, every rate the
    catalog has."""
    out: dict[str, dict[str, Any]] = {}
    chips = cat.instances[itype].chips
    rates: list[Rate] = [
        r
        for r in cat.instance_rates
        if r.type == itype and r.option and (region is None or r.region == region)
    ]
    for r in sorted(rates, key=lambda r: (str(r.option), r.region)):
        out.setdefault(str(r.option), {})[r.region] = _price(r, chips)
    return out


def instance_row(cat: Catalog, itype: str, region: str | None = None) -> dict[str, Any]:
    """One instance type as `instances --format json` prints it."""
    inst = cat.instances[itype]
    family = cat.families[inst.family]
    regions = {
        r: list(cat.zones_offering(r, itype))
        for r in cat.regions_offering(itype)
        if region is None or r == region
    }
    return {
        "instance_type": itype,
        "family": inst.family,
        "accelerator": family.accelerator,
        "device_kind": family.device_kind,
        "chips": inst.chips,
        "accelerator_memory_gib": inst.accelerator_memory_gib,
        "efa_interfaces": inst.efa_interfaces,
        "efa_gbps": inst.efa_gbps,
        "vcpus": inst.vcpus,
        "memory_gib": inst.memory_gib,
        "preview": inst.preview,
        "estimated_fields": list(inst.estimated_fields),
        "regions": regions,
        "prices": _prices(cat, itype, region),
        "source": inst.source,
    }


def region_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per type and region offering it (`--by-region`), that region's prices."""
    return [
        {
            "instance_type": r["instance_type"],
            "accelerator": r["accelerator"],
            "chips": r["chips"],
            "preview": r["preview"],
            "region": region,
            "zones": zones,
            "prices": {
                option: by_region[region]
                for option, by_region in r["prices"].items()
                if region in by_region
            },
        }
        for r in rows
        for region, zones in r["regions"].items()
    ]


def _key(per_chip: bool) -> str:
    return "usd_per_chip" if per_chip else "usd"


def _cheapest_rate(row: dict[str, Any], option: str, per_chip: bool) -> tuple[str, Any] | None:
    """(region, rate) of the row's cheapest rate for `option`; a region row has one."""
    if "region" in row:
        rate = row["prices"].get(option)
        return (row["region"], rate) if rate and rate[_key(per_chip)] is not None else None
    priced = {
        k: v for k, v in (row["prices"].get(option) or {}).items() if v[_key(per_chip)] is not None
    }
    if not priced:
        return None
    return min(priced.items(), key=lambda kv: (kv[1][_key(per_chip)], kv[0]))


def _sorted(rows: list[dict[str, Any]], option: str | None, per_chip: bool) -> list[dict[str, Any]]:
    """Cheapest first by `option` (rows without it last), else as listed."""
    if option is None:
        return rows

    def key(row: dict[str, Any]) -> tuple[bool, float]:
        found = _cheapest_rate(row, option, per_chip)
        return (found is None, found[1][_key(per_chip)] if found else 0.0)

    return sorted(rows, key=key)


def _cell(row: dict[str, Any], option: str, per_chip: bool) -> str:
    found = _cheapest_rate(row, option, per_chip)
    if found is None:
        return "-"
    region, rate = found
    mark = "*" if rate["estimate"] else ""
    where = "" if "region" in row else f" ({region})"
    return f"${rate[_key(per_chip)]:,.2f}{mark}{where}"


def _options(rows: list[dict[str, Any]]) -> list[str]:
    from accelstack.catalog import PURCHASE_OPTIONS

    seen = {o for r in rows for o in r["prices"]}
    return [o for o in PURCHASE_OPTIONS if o in seen] + sorted(seen - set(PURCHASE_OPTIONS))


def _cells(r: dict[str, Any], options: list[str], per_chip: bool) -> list[str]:
    name = r["instance_type"] + (" (preview)" if r["preview"] else "")
    if "region" in r:
        head = [name, r["accelerator"], str(r["chips"]), r["region"], str(len(r["zones"]))]
    else:
        efa = f"{r['efa_interfaces']} x ({r['efa_gbps']} Gb/s)" if r["efa_interfaces"] else "no"
        head = [
            name,
            r["accelerator"],
            str(r["chips"]),
            f"{r['accelerator_memory_gib']:g} GiB",
            efa,
            str(r["vcpus"]),
            str(len(r["regions"])),
        ]
    return [*head, *(_cell(r, o, per_chip) for o in options)]


def _table(rows: list[dict[str, Any]], markdown: bool, per_chip: bool = False) -> list[str]:
    options = _options(rows)
    if rows and "region" in rows[0]:
        head = ["type", "accelerator", "chips", "region", "zones", *options]
    else:
        head = ["type", "accelerator", "chips", "acc. memory", "EFA", "vCPU", "regions", *options]
    lines = [_cells(r, options, per_chip) for r in rows]
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        return out + ["| " + " | ".join(c) + " |" for c in lines]
    widths = [max(len(x) for x in col) for col in zip(head, *lines, strict=False)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*head).rstrip(), *(fmt.format(*c).rstrip() for c in lines)]


def _chosen_types(cat: Catalog, types: list[str] | None, everything: bool) -> list[str]:
    from accelstack.errors import Problem, SpecError, allowed, did_you_mean, shown

    known = sorted(t for t, i in cat.instances.items() if everything or i.accelerated)
    for t in types or []:
        if t not in cat.instances:
            hint = did_you_mean(t, known) or f"; supported: {allowed(known, 20)}"
            raise SpecError([Problem("--type", "", f"{shown(t)} is not in the catalog{hint}")])
    return [t for t in known if not types or t in types]


def parse_accelerator(cat: Catalog, value: str) -> tuple[str, int | None]:
    """`NAME[:COUNT]` as `--accelerator` takes it: (lower-case name, chips or None)."""
    from accelstack.errors import Problem, SpecError, did_you_mean, shown

    name, sep, count = value.partition(":")
    names = completion.accelerator_names(cat)
    if name.lower() not in names:
        hint = did_you_mean(name.lower(), names)
        msg = (
            f"{shown(name)} is not an accelerator of the catalog{hint} (known: {', '.join(names)})"
        )
        raise SpecError([Problem("--accelerator", "", msg)])
    if sep and not (count.isdigit() and int(count) > 0):
        msg = f"chip count {shown(count)} is not a positive whole number (e.g. H100:8)"
        raise SpecError([Problem("--accelerator", "", msg)])
    return name.lower(), int(count) if sep else None


def _filtered(
    cat: Catalog, types: list[str], accelerator: str | None, chips: int | None
) -> list[str]:
    """The types carrying the accelerator (and that many chips per instance)."""
    name, count = parse_accelerator(cat, accelerator) if accelerator else (None, None)
    wanted = count if count is not None else chips
    return [
        t
        for t in types
        if (name is None or name in completion.accelerator_words(cat, cat.instances[t].family))
        and (wanted is None or cat.instances[t].chips == wanted)
    ]


def _check_option(cat: Catalog, option: str | None) -> None:
    from accelstack.catalog import PURCHASE_OPTIONS
    from accelstack.errors import Problem, SpecError, did_you_mean, shown

    known = sorted({*PURCHASE_OPTIONS, *(str(r.option) for r in cat.instance_rates if r.option)})
    if option is not None and option not in known:
        hint = did_you_mean(option, known)
        msg = f"{shown(option)} is not a purchase option{hint} (known: {', '.join(known)})"
        raise SpecError([Problem("--sort", "", msg)])


def _footer(per_chip: bool, by_region: bool) -> str:
    unit = "chip-hour" if per_chip else "instance-hour"
    where = "in the row's region" if by_region else "cheapest region"
    return f"prices: USD per {unit}, {where}; * = estimate; - = none"


_TypeOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--type",
        help="only these instance types (repeat)",
        autocompletion=completion.instance_types,
    ),
]
_RegionOpt = Annotated[
    str | None,
    typer.Option(
        "--region", help="only this region's zones and prices", autocompletion=completion.regions
    ),
]
_AcceleratorOpt = Annotated[
    str | None,
    typer.Option(
        "--accelerator",
        help="only types with this accelerator (h100, h200, trainium2, nvidia, neuron, ...), "
        "NAME:COUNT for that many chips per instance (H100:8)",
        autocompletion=completion.accelerators,
    ),
]
_ChipsOpt = Annotated[
    int | None, typer.Option("--chips", min=1, help="only types with this many chips each")
]
_ByRegionOpt = Annotated[
    bool, typer.Option("--by-region", help="one row per type and region offering it")
]
_SortOpt = Annotated[
    str | None,
    typer.Option(
        "--sort",
        help="cheapest first by this purchase option (on-demand, spot, capacity-block, ...)",
        autocompletion=completion.purchase_options,
    ),
]
_PerChipOpt = Annotated[bool, typer.Option("--per-chip", help="prices per chip-hour")]
_AllOpt = Annotated[bool, typer.Option("--all", help="include the non-accelerated (system) types")]
_FormatOpt = Annotated[
    Literal["text", "json", "markdown"],
    typer.Option("--format", help="text, json (every field) or markdown"),
]


def instances(
    types: _TypeOpt = None,
    region: _RegionOpt = None,
    accelerator: _AcceleratorOpt = None,
    chips: _ChipsOpt = None,
    by_region: _ByRegionOpt = False,
    sort: _SortOpt = None,
    per_chip: _PerChipOpt = False,
    everything: _AllOpt = False,
    fmt: _FormatOpt = "text",
) -> None:
    """List the instance types: chips, memory, EFA, regions, price per purchase option.

    Chips, accelerator memory, EFA, vCPU, regions and zones offered, and the hourly price per
    purchase option (cheapest region; * = an estimated price), all from the catalog.

    Examples:

      accelstack instances

      accelstack instances --accelerator H100:8 --by-region --sort spot --per-chip

      accelstack instances --region us-east-2 --format json
    """
    from accelstack.catalog import load_catalog

    cat = load_catalog()
    if region is not None:
        cat.region(region)  # unknown region: one line with a did-you-mean
    _check_option(cat, sort)
    chosen = _filtered(cat, _chosen_types(cat, types, everything), accelerator, chips)
    rows = [instance_row(cat, t, region) for t in chosen]
    rows = _sorted(region_rows(rows) if by_region else rows, sort, per_chip)
    if fmt == "json":
        echo_json(rows)
        return
    for line in _table(rows, fmt == "markdown", per_chip):
        typer.echo(line)
    if fmt == "text":
        typer.echo(_footer(per_chip, by_region))


def register(app: typer.Typer) -> None:
    app.command()(instances)
