"""price, compare, prices refresh: the cost commands.

`price` and `compare` are pure (catalog only, no AWS); `prices refresh` calls the AWS Pricing
API, spot history, Savings Plans and Capacity Block offerings, and rewrites the prices file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from accelstack.cli.catalog_names import COMPARE_FAMILIES
from accelstack.cli.output import (
    CeilingOpt,
    FormatMdOpt,
    FormatOpt,
    JsonAliasOpt,
    StackOpt,
    chosen,
    echo_json,
    echo_overlay,
)

if TYPE_CHECKING:
    from accelstack.cost.guard import Verdict
    from accelstack.cost.usage import UsageCost


def _split(values: list[str] | None) -> list[str]:
    out: list[str] = []
    for v in values or []:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


_UsageOpt = Annotated[
    Path | None,
    typer.Option(
        "--usage",
        help="usage file of the items billed per use (NAT GB, S3 requests, inter-AZ GB), "
        "priced beside the stack (default: $ACCELSTACK_USAGE, else accelstack-usage.yaml in "
        "the project)",
    ),
]


def price(
    spec: Annotated[Path, typer.Argument(help="spec file (stacks/NAME.yaml)")],
    fmt: FormatMdOpt = "text",
    as_json: JsonAliasOpt = False,
    stack_name: StackOpt = None,
    ceiling: CeilingOpt = None,
    usage: _UsageOpt = None,
) -> None:
    """Price the stack, estimate the training run, check the budget and the ceiling.

    Exits 1 with a one-line reason when a limit is exceeded, 2 when the budget sets none.

    Examples:

      accelstack price stacks/llama3-70b-trn2.yaml

      accelstack price stacks/llama3-70b-trn2.yaml --stack prod --format markdown
    """
    from accelstack.catalog import load_catalog
    from accelstack.catalog.overlay import overlay_dir
    from accelstack.cost.ceiling import find_ceiling
    from accelstack.cost.guard import check_budget
    from accelstack.cost.usage import find_usage, usage_cost
    from accelstack.stackconfig import ref_for_spec, resolve_ref

    catalog = load_catalog()
    echo_overlay(overlay_dir())
    ref = ref_for_spec(spec, stack_name)
    stack = resolve_ref(ref, catalog)
    usage_file = find_usage(usage, ref.root)
    verdict = check_budget(stack, None, find_ceiling(ceiling, ref.root))
    used = usage_cost(stack, verdict.cost, usage_file, catalog) if usage_file else None
    typer.echo(_priced(verdict, used, chosen(fmt, as_json)), nl=False)
    if not verdict.ok:
        raise verdict.failure()


def _priced(verdict: Verdict, used: UsageCost | None, fmt: str) -> str:
    """`price`'s output: the verdict's report, with the usage-priced items when a usage file
    is in force (text and markdown: a block after the report; JSON: `usage`)."""
    from accelstack.cost.formats import verdict_markdown
    from accelstack.cost.guard import render_report, verdict_dict
    from accelstack.cost.usage import usage_dict, usage_markdown, usage_text
    from accelstack.jsonout import dumps

    if fmt == "json":
        doc = verdict_dict(verdict)
        if used is not None:
            doc["usage"] = usage_dict(used)
        return dumps(doc)
    if fmt == "markdown":
        return verdict_markdown(verdict) + (usage_markdown(used) if used else "")
    return render_report(verdict) + (usage_text(used) if used else "")


#: `compare --options`: the catalog holds the list, so the help names where, not which
_OPTIONS_HELP = (
    "purchase options (comma-separate): those the catalog's purchase_options mark comparable, "
    "a wrong one lists them (docs/cost.md, Purchase options); default: the ones it marks "
    "compare_default"
)


#: compare's help, naming its candidates' families from the catalog (the generated
#: accelstack/cli/catalog_names.py, so help loads no catalog)
COMPARE_HELP = f"""Price the same work on {COMPARE_FAMILIES}; mark cheapest and fastest.

Candidates get the same chip budget (--chips, default the spec's) or, with only
--deadline-hours, the nodes that meet the deadline, each at the fastest TP x PP x CP x DP
layout that fits. Markdown adds a Mermaid chart.

Examples:

  accelstack compare stacks/llama3-70b-trn2.yaml

  accelstack compare stacks/llama3-70b-trn2.yaml --deadline-hours 240 --format markdown"""


def compare(
    spec: Annotated[Path, typer.Argument(help="spec file (stacks/NAME.yaml)")],
    instance_types: Annotated[
        list[str] | None,
        typer.Option("--instance-types", help="candidate types (repeat or comma-separate)"),
    ] = None,
    deadline_hours: Annotated[
        float | None,
        typer.Option(
            "--deadline-hours",
            min=0.001,
            help="wall-hour limit; without --chips, every candidate is sized to meet it",
        ),
    ] = None,
    chips: Annotated[
        int | None,
        typer.Option(
            "--chips", min=1, help="chip budget per candidate (default: the spec's pool chips)"
        ),
    ] = None,
    options: Annotated[
        list[str] | None,
        typer.Option(
            "--options",
            help=_OPTIONS_HELP,
        ),
    ] = None,
    on_demand_max_nodes: Annotated[
        int | None,
        typer.Option(
            "--capacity-nodes",
            min=1,
            help="flag rows launched on demand above this many instances (your approved "
            "capacity; default: the catalog's scale.yaml on_demand_capacity)",
        ),
    ] = None,
    fmt: FormatMdOpt = "text",
) -> None:
    """The same work priced on every default candidate type (its help: `COMPARE_HELP`)."""
    from accelstack.catalog import load_catalog
    from accelstack.cost.compare import compare as run_compare
    from accelstack.cost.compare import render
    from accelstack.cost.formats import comparison_dict, comparison_markdown
    from accelstack.resolve import resolve
    from accelstack.spec import load_spec

    catalog = load_catalog()
    stack = resolve(load_spec(spec), catalog)
    types = _split(instance_types) or None
    if types:
        for t in types:
            catalog.instance(t)  # unknown type: exit 2 with did-you-mean
    opts = _split(options) or None  # None: the catalog's compare_default options
    result = run_compare(stack, types, deadline_hours, opts, chips, on_demand_max_nodes)
    if fmt == "json":
        echo_json(comparison_dict(result))
    else:
        typer.echo((comparison_markdown if fmt == "markdown" else render)(result), nl=False)


def refresh(
    region: Annotated[
        list[str] | None, typer.Option("--region", help="regions to refresh (repeatable)")
    ] = None,
    types: Annotated[
        list[str] | None,
        typer.Option("--types", help="instance types (repeat or comma-separate)"),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="show changes, write nothing")] = False,
    prices_file: Annotated[
        Path | None,
        typer.Option("--file", help="prices file (default: the catalog overlay's prices.yaml)"),
    ] = None,
    fmt: FormatOpt = "text",
) -> None:
    """Refresh instance prices from the AWS Pricing API, spot history and Savings Plans."""
    from accelstack.catalog.refresh import refresh_file

    summary = refresh_file(
        path=prices_file,
        regions=_split(region) or None,
        types=_split(types) or None,
        dry_run=dry_run,
        as_json=fmt == "json",
    )
    typer.echo(summary, nl=False)


def register(app: typer.Typer) -> None:
    app.command()(price)
    app.command(help=COMPARE_HELP)(compare)
    prices_app = typer.Typer(help="Maintain the price catalog.", no_args_is_help=True)
    prices_app.command("refresh")(refresh)
    app.add_typer(prices_app, name="prices")
