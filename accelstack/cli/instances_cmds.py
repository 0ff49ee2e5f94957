"""instances: the accelerated instance types the catalog knows, like SkyPilot's `show-gpus`.

Every column comes from the catalog (instances.yaml, the offerings, prices.yaml): a new type,
region or purchase option there shows up here with no code change. Offline; no AWS calls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from accelstack.cli.output import echo_json

if TYPE_CHECKING:
    from accelstack.catalog import Catalog, Rate


def _prices(cat: Catalog, itype: str, region: str | None) -> dict[str, dict[str, Any]]:
    """option -> {region: {usd, estimate, as_of, source}}, for every rate the catalog has."""
    out: dict[str, dict[str, Any]] = {}
    rates: list[Rate] = [
        r
        for r in cat.instance_rates
        if r.type == itype and r.option and (region is None or r.region == region)
    ]
    for r in sorted(rates, key=lambda r: (str(r.option), r.region)):
        out.setdefault(str(r.option), {})[r.region] = {
            "usd": r.usd,
            "estimate": r.estimate,
            "as_of": r.as_of,
            "source": r.source,
        }
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


def _cheapest(row: dict[str, Any], option: str) -> str:
    by_region = row["prices"].get(option) or {}
    if not by_region:
        return "-"
    region, rate = min(by_region.items(), key=lambda kv: kv[1]["usd"])
    mark = "*" if rate["estimate"] else ""
    return f"${rate['usd']:,.2f}{mark} ({region})"


def _options(rows: list[dict[str, Any]]) -> list[str]:
    from accelstack.catalog import PURCHASE_OPTIONS

    seen = {o for r in rows for o in r["prices"]}
    return [o for o in PURCHASE_OPTIONS if o in seen] + sorted(seen - set(PURCHASE_OPTIONS))


def _table(rows: list[dict[str, Any]], markdown: bool) -> list[str]:
    options = _options(rows)
    head = ["type", "accelerator", "chips", "acc. memory", "EFA", "vCPU", "regions", *options]
    lines = []
    for r in rows:
        efa = f"{r['efa_interfaces']} x ({r['efa_gbps']} Gb/s)" if r["efa_interfaces"] else "no"
        cells = [
            r["instance_type"] + (" (preview)" if r["preview"] else ""),
            r["accelerator"],
            str(r["chips"]),
            f"{r['accelerator_memory_gib']:g} GiB",
            efa,
            str(r["vcpus"]),
            str(len(r["regions"])),
            *(_cheapest(r, o) for o in options),
        ]
        lines.append(cells)
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        return out + ["| " + " | ".join(c) + " |" for c in lines]
    widths = [max(len(x) for x in col) for col in zip(head, *lines, strict=False)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*head).rstrip(), *(fmt.format(*c).rstrip() for c in lines)]


def _chosen_types(cat: Catalog, types: list[str] | None, everything: bool) -> list[str]:
    from accelstack.errors import Problem, SpecError, allowed, did_you_mean

    known = sorted(t for t, i in cat.instances.items() if everything or i.accelerated)
    for t in types or []:
        if t not in cat.instances:
            hint = did_you_mean(t, known) or f"; supported: {allowed(known, 20)}"
            raise SpecError([Problem("--type", "", f"{t!r} is not in the catalog{hint}")])
    return [t for t in known if not types or t in types]


def instances(
    types: Annotated[
        list[str] | None, typer.Option("--type", help="only these instance types (repeat)")
    ] = None,
    region: Annotated[
        str | None, typer.Option("--region", help="only this region's zones and prices")
    ] = None,
    everything: Annotated[
        bool, typer.Option("--all", help="include the non-accelerated (system) types")
    ] = False,
    fmt: Annotated[
        Literal["text", "json", "markdown"],
        typer.Option("--format", help="text, json (every field) or markdown"),
    ] = "text",
) -> None:
    """List the instance types: chips, memory, EFA, regions, price per purchase option.

    Chips, accelerator memory, EFA, vCPU, regions and zones offered, and the hourly price per
    purchase option (cheapest region; * = an estimated price), all from the catalog.

    Examples:

      accelstack instances

      accelstack instances --region us-east-2 --format json
    """
    from accelstack.catalog import load_catalog

    cat = load_catalog()
    if region is not None:
        cat.region(region)  # unknown region: one line with a did-you-mean
    rows = [instance_row(cat, t, region) for t in _chosen_types(cat, types, everything)]
    if fmt == "json":
        echo_json(rows)
        return
    for line in _table(rows, fmt == "markdown"):
        typer.echo(line)
    if fmt == "text":
        typer.echo("prices: USD per instance-hour, cheapest region; * = estimate; - = none")


def register(app: typer.Typer) -> None:
    app.command()(instances)
