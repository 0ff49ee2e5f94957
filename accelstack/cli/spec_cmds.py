"""validate, schema, new: the spec-level commands."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from accelstack.cli import completion
from accelstack.cli.boundary import as_failure, echo_error
from accelstack.cli.catalog_names import ACCELERATED_TYPES, CHEAPEST_OPTIONS, REFERENCE_OPTION
from accelstack.cli.output import FormatOpt, echo_json
from accelstack.cli.specfiles import (
    check_name,
    preset_path,
    resolved_target,
    schema_text,
    source_spec,
    spec_file_text,
    stack_config_text,
)
from accelstack.errors import AccelstackError, Problem, SpecError
from accelstack.files import check_target, make_dirs, write_bytes_atomic, write_text_atomic

if TYPE_CHECKING:
    from accelstack.catalog import Catalog
    from accelstack.resolve import Stack
    from accelstack.resolve.retarget import Retargeted
    from accelstack.spec.models import Spec


def load_spec(path: str | Path) -> Spec:
    """accelstack.spec.load_spec, imported when a command reads a spec: `--help` loads no
    spec models."""
    from accelstack.spec import load_spec as load

    return load(path)


def _deployment_names(path: Path, spec: Spec) -> list[str]:
    """The resource-name prefixes of the project's other Pulumi stacks that deploy this spec
    file (their `accelstack:spec` names it): the names they generate must fit AWS too."""
    from accelstack.cli.stackrefs import refs_of_file
    from accelstack.resolve import deployment_name

    return [
        deployment_name(spec.name, r.stack)
        for r in refs_of_file(path, None)
        if r.stack != spec.name
    ]


def _refuse_no_budget(spec: Spec, path: Path) -> None:
    """A spec with no limit and no `budget.unlimited` is refused, as `check` and the program
    refuse it (bad input, exit 2), so `validate` never says ok to what cannot pass."""
    if spec.budget.has_limit or spec.budget.unlimited:
        return
    from accelstack.cost.guard import NO_LIMIT  # the pricing modules, only for the refusal
    from accelstack.errors import BudgetMissing

    raise BudgetMissing(f"{path}: budget: {NO_LIMIT}")


def _validate_one(path: Path, catalog: Catalog) -> dict[str, Any]:
    """One spec's result: ok with its pools and warnings, or its error lines and exit code.
    Valid means what every other command needs: the spec loads (shape) and resolves (the spec
    rules, then the rules on the resolved stack: names, addresses, tags, memory fit, sizes),
    under its own name and under each project stack that deploys it by another name."""
    from accelstack.resolve import resolve
    from accelstack.resolve.advice import stack_warnings

    try:
        spec = load_spec(path)
        stack = resolve(spec, catalog)
        for name in _deployment_names(path, spec):
            resolve(spec, catalog, name=name)
        _refuse_no_budget(spec, path)
    except Exception as exc:  # one broken spec must not hide the verdict on the rest
        failure = as_failure(exc, f"validate {path}")
        lines = str(failure).splitlines() or [type(failure).__name__]
        return {"file": str(path), "ok": False, "exit_code": failure.exit_code, "errors": lines}
    return {
        "file": str(path),
        "ok": True,
        "stack": spec.name,
        "pools": [
            {"name": p.name, "instance_type": p.instance_type, "nodes": p.nodes} for p in spec.pools
        ],
        "warnings": stack_warnings(stack),
    }


def _echo_validated(results: list[dict[str, Any]]) -> None:
    for r in results:
        if r["ok"]:
            pools = ", ".join(f"{p['nodes']} x {p['instance_type']}" for p in r["pools"])
            typer.echo(f"ok: {r['file']} ({r['stack']}: {pools})")
            for note in r["warnings"]:
                typer.echo(f"  warning: {note}")
    for r in results:
        echo_error(r.get("errors", []))


def validate(
    specs: Annotated[list[Path], typer.Argument(help="spec files (stacks/NAME.yaml)")],
    fmt: FormatOpt = "text",
) -> None:
    """Validate spec files: shape, catalog facts, cross-field rules and the rules on the
    resolved stack.

    Examples:

      accelstack validate stacks/*.yaml

      accelstack validate stacks/llama3-70b-trn2.yaml --format json
    """
    from accelstack.catalog import load_catalog

    catalog = load_catalog()
    results = [_validate_one(path, catalog) for path in specs]
    if fmt == "json":
        echo_json({"ok": all(r["ok"] for r in results), "specs": results})
    else:
        _echo_validated(results)
    codes = [r["exit_code"] for r in results if not r["ok"]]
    if codes:
        raise typer.Exit(max(codes))


def schema(
    output: Annotated[Path | None, typer.Option("-o", "--output", help="write to a file")] = None,
) -> None:
    """Print the spec's JSON Schema (for editor validation)."""
    text = schema_text()
    if output:
        make_dirs(output.parent)
        write_text_atomic(output, text)
        typer.echo(f"wrote {output}")
    else:
        typer.echo(text, nl=False)


def _cheapest_options(options: str, catalog: Catalog) -> tuple[str, ...]:
    """The purchase options --cheapest may pick from; reservation-bound ones are refused."""
    wanted = tuple(o.strip() for o in options.split(",") if o.strip())
    reserved = catalog.option_lists.needs_reservation
    if any(o in reserved for o in wanted):
        raise SpecError(
            [
                Problem(
                    "--options",
                    "",
                    f"{' and '.join(reserved)} need "
                    "a reservation id; retarget with --instance-type and "
                    "set purchase in the new spec instead",
                )
            ]
        )
    return wanted


def _pick_cheapest(
    data: dict[str, Any],
    source_spec: Spec,
    catalog: Catalog,
    deadline_hours: float | None,
    options: str,
) -> tuple[str, int, str]:
    """(instance_type, nodes, note) of the cheapest fit; sets the pool's purchase in `data`."""
    from accelstack.cost.compare import cheapest_target

    wanted = _cheapest_options(options, catalog)
    instance_type, nodes, option = cheapest_target(
        source_spec, catalog, deadline_hours=deadline_hours, options=wanted
    )
    pool = next(p for p in data["pools"] if p["name"] == source_spec.workload_pool.name)
    pool["purchase"] = {"option": option}
    return instance_type, nodes, f"--cheapest picked {nodes} x {instance_type}, {option}"


def _write_stack(directory: Path, name: str, src: Path, result: Retargeted, *, force: bool) -> None:
    """Write stacks/NAME.yaml (with a header of notes) and Pulumi.NAME.yaml."""
    stacks_dir = directory / "stacks"
    target = stacks_dir / f"{name}.yaml"
    pulumi_file = directory / f"Pulumi.{name}.yaml"
    for f in (target, pulumi_file):
        check_target(f)  # a symlink or a directory is refused even with --force
        if f.exists() and not force:
            raise SpecError([Problem(str(f), "", "exists already; pass --force to overwrite")])
    make_dirs(stacks_dir)
    schema_file = directory / "schema" / "spec.schema.json"
    if not schema_file.exists():  # what the header points editors at, in a new project too
        make_dirs(schema_file.parent)
        write_text_atomic(schema_file, schema_text())
    spec_text = spec_file_text(src, result)
    config_text = stack_config_text(name, result.spec.region, pulumi_file)  # refused: no write
    previous = target.read_bytes() if target.exists() else None
    write_text_atomic(target, spec_text)
    try:
        write_text_atomic(pulumi_file, config_text)
    except AccelstackError:  # both files or neither: put the spec file back as it was
        if previous is None:
            target.unlink(missing_ok=True)
        else:
            write_bytes_atomic(target, previous)
        raise
    typer.echo(f"wrote {target} and {pulumi_file}")
    for n in result.notes:
        typer.echo(f"  {n}")
    typer.echo(
        f"next: accelstack amis pin stacks/{name}.yaml (records the AMI ids in "
        f"{pulumi_file.name}; docs/amis.md), then pulumi up -s {name}"
    )


_NameArg = Annotated[str, typer.Argument(help="new stack name (becomes stacks/NAME.yaml)")]
_PresetOpt = Annotated[
    str,
    typer.Option(
        "--from",
        help="preset name (the project's stacks/, then the bundled ones) or a path",
        autocompletion=completion.presets,
    ),
]
_InstanceTypeOpt = Annotated[
    str | None,
    typer.Option(
        help="retarget the workload pool to one of "
        f"{', '.join(ACCELERATED_TYPES)} (or an overlay's type: `accelstack instances`)",
        autocompletion=completion.instance_types,
    ),
]
_NodesOpt = Annotated[int | None, typer.Option(min=1, help="node count of the workload pool")]
_ImageOpt = Annotated[
    str | None,
    typer.Option(help="container image (needed when a custom image cannot follow a retarget)"),
]
_CheapestOpt = Annotated[
    bool,
    typer.Option(
        "--cheapest",
        help="retarget to the cheapest type, node count and purchase option that fit "
        "the budget (and --deadline-hours), as `accelstack compare` ranks them",
    ),
]
_DeadlineOpt = Annotated[
    float | None, typer.Option(min=0.1, help="with --cheapest: wall-clock limit")
]
_OptionsOpt = Annotated[
    str,
    typer.Option(
        help="with --cheapest: purchase options to consider (comma-separated, from "
        f"{CHEAPEST_OPTIONS}). Default {REFERENCE_OPTION} only: "
        "a savings-plan rate is only the run's true cost when the 1-3 year commitment "
        "is used anyway, and spot interrupts long runs",
    ),
]
_DirOpt = Annotated[Path, typer.Option("--dir", help="project directory")]
_ForceOpt = Annotated[bool, typer.Option(help="overwrite existing files")]


def _verdict_lines(stack: Stack) -> list[str]:
    """The new stack's price and budget verdict (priced from the spec, as `price` does)."""
    from accelstack.cost.guard import check_budget

    v = check_budget(stack)
    mark = " (prices include estimates)" if v.cost.estimate else ""
    lines = [
        f"price: ${v.cost.hourly_usd:,.2f}/h, ${v.cost.monthly_usd:,.0f}/month, training run "
        f"${v.run.run_usd:,.0f} ({v.estimate.wall_hours:,.1f} h){mark}",
        v.one_line(),
    ]
    if not v.ok:
        lines.append(
            "warning: over budget: `pulumi up` and `accelstack plan` will refuse this stack; "
            "raise budget.* in the spec or pick a cheaper target (`accelstack compare`)"
        )
    return lines


def _refuse_cheapest_with_target(instance_type: str | None, nodes: int | None) -> None:
    if instance_type is not None or nodes is not None:
        raise SpecError(
            [
                Problem(
                    "--cheapest",
                    "",
                    "picks the instance type and node count itself; drop --instance-type and "
                    "--nodes",
                )
            ]
        )


def new(
    name: _NameArg,
    preset: _PresetOpt,
    instance_type: _InstanceTypeOpt = None,
    nodes: _NodesOpt = None,
    image: _ImageOpt = None,
    cheapest: _CheapestOpt = False,
    deadline_hours: _DeadlineOpt = None,
    options: _OptionsOpt = REFERENCE_OPTION,
    directory: _DirOpt = Path("."),
    force: _ForceOpt = False,
) -> None:
    """Clone a preset into stacks/NAME.yaml (comments kept) and write Pulumi.NAME.yaml.

    Prints the new stack's price and budget verdict (over budget: a warning, exit 0).

    Examples:

      accelstack new my-run --from llama3-70b-trn2

      accelstack new my-h100-run --from llama3-70b-trn2 --instance-type p5.48xlarge
    """
    from accelstack.catalog import load_catalog
    from accelstack.resolve.retarget import retarget
    from accelstack.spec.roundtrip import load_roundtrip, read_stash

    check_name(name)
    src = preset_path(preset, directory / "stacks")
    catalog = load_catalog()
    source = source_spec(src, catalog)  # the preset itself must be valid
    data = load_roundtrip(src)
    picked = ""
    if cheapest:
        _refuse_cheapest_with_target(instance_type, nodes)
        instance_type, nodes, picked = _pick_cheapest(
            data, source, catalog, deadline_hours, options
        )
    result = retarget(
        data,
        catalog,
        name=name,
        source=str(src),
        instance_type=instance_type,
        nodes=nodes,
        image=image,
        stash=read_stash(src),
    )
    if picked:
        result.notes.insert(0, picked)
    verdict = _verdict_lines(resolved_target(result, catalog, nodes_flag=True))  # before writing
    _write_stack(directory, name, src, result, force=force)
    for line in verdict:
        typer.echo(line)


def register(app: typer.Typer) -> None:
    app.command()(validate)
    app.command()(schema)
    app.command()(new)
