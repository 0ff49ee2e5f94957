"""validate, schema, new: the spec-level commands."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
import yaml

from accelstack.catalog import load_catalog
from accelstack.clock import today
from accelstack.errors import AccelstackError, Problem, SpecError
from accelstack.spec import NAME_RE, json_schema, load_spec, read_yaml

if TYPE_CHECKING:
    from accelstack.catalog import Catalog
    from accelstack.spec.models import Spec
    from accelstack.spec.retarget import Retargeted


def _preset_path(preset: str, stacks_dir: Path) -> Path:
    p = Path(preset)
    if p.suffix in (".yaml", ".yml") or p.exists():
        return p
    candidate = stacks_dir / f"{preset}.yaml"
    if not candidate.exists():
        from accelstack.errors import did_you_mean

        names = [x.stem for x in stacks_dir.glob("*.yaml")]
        raise SpecError(
            [
                Problem(
                    "--from",
                    "",
                    f"no preset '{preset}' in {stacks_dir}/"
                    f"{did_you_mean(preset, names)} (presets: {', '.join(sorted(names))})",
                )
            ]
        )
    return candidate


def _pool_notes(spec: Spec, catalog: Catalog) -> list[str]:
    """Warnings on estimated catalog facts behind the spec's pools."""
    notes = []
    for pool in spec.pools:
        inst = catalog.instance(pool.instance_type)
        if inst.preview:
            notes.append(
                f"{pool.name}: {inst.name} is a preview type; estimated fields: "
                f"{', '.join(inst.estimated_fields)}"
            )
        if inst.name in catalog.regions[spec.region].estimated_types:
            notes.append(
                f"{pool.name}: the offering of {inst.name} in {spec.region} is an "
                "estimate; run `accelstack preflight`"
            )
    return notes


def _kubernetes_notes(spec: Spec, catalog: Catalog) -> list[str]:
    """A warning when the EKS control plane bills the extended-support rate."""
    k8s = spec.cluster.kubernetes_version or catalog.defaults.kubernetes_version
    window = catalog.defaults.eks_versions[k8s]
    if spec.orchestration == "eks" and window.status(today()) == "extended":
        return [
            f"Kubernetes {k8s} left EKS standard support on "
            f"{window.standard_support_end}: the control plane bills the "
            "extended-support rate; upgrade cluster.kubernetes_version"
        ]
    return []


def _report_ok(path: Path, spec: Spec, catalog: Catalog) -> None:
    notes = [*_pool_notes(spec, catalog), *_kubernetes_notes(spec, catalog)]
    typer.echo(
        f"ok: {path} ({spec.name}: {', '.join(f'{p.nodes} x {p.instance_type}' for p in spec.pools)})"
    )
    for note in notes:
        typer.echo(f"  warning: {note}")


def validate(
    specs: Annotated[list[Path], typer.Argument(help="spec files (stacks/NAME.yaml)")],
) -> None:
    """Validate spec files: shape, catalog facts and cross-field rules."""
    catalog = load_catalog()
    failed: list[AccelstackError] = []
    for path in specs:
        try:
            spec = load_spec(path, catalog)
        except AccelstackError as exc:
            failed.append(exc)
            continue
        _report_ok(path, spec, catalog)
    if failed:
        for problem in failed:
            for line in str(problem).splitlines():
                typer.echo(f"error: {line}", err=True)
        raise typer.Exit(max(e.exit_code for e in failed))


def schema(
    output: Annotated[Path | None, typer.Option("-o", "--output", help="write to a file")] = None,
) -> None:
    """Print the spec's JSON Schema (for editor validation)."""
    text = json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text)
        typer.echo(f"wrote {output}")
    else:
        typer.echo(text, nl=False)


def _check_name(name: str) -> None:
    if not re.fullmatch(NAME_RE, name):
        raise SpecError(
            [
                Problem(
                    "NAME",
                    "",
                    f"'{name}' must be 3-40 lowercase letters, digits "
                    "and '-', starting with a letter",
                )
            ]
        )


def _cheapest_options(options: str) -> tuple[str, ...]:
    """The purchase options --cheapest may pick from; reservation-bound ones are refused."""
    wanted = tuple(o.strip() for o in options.split(",") if o.strip())
    if any(o in ("capacity-block", "reservation") for o in wanted):
        raise SpecError(
            [
                Problem(
                    "--options",
                    "",
                    "capacity-block and reservation need "
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

    wanted = _cheapest_options(options)
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
        if f.exists() and not force:
            raise SpecError([Problem(str(f), "", "exists already; pass --force to overwrite")])
    header = [
        "# yaml-language-server: $schema=../schema/spec.schema.json",
        f"# Cloned from {src.as_posix()} by `accelstack new`.",
        *[f"# - {n}" for n in result.notes],
    ]
    stacks_dir.mkdir(parents=True, exist_ok=True)
    target.write_text("\n".join(header) + "\n" + yaml.safe_dump(result.data, sort_keys=False))
    config = {"aws:region": result.spec.region, "accelstack:spec": f"stacks/{name}.yaml"}
    pulumi_file.write_text(yaml.safe_dump({"config": config}, sort_keys=False))
    typer.echo(f"wrote {target} and {pulumi_file}")
    for n in result.notes:
        typer.echo(f"  {n}")
    typer.echo(
        f"next: accelstack amis pin stacks/{name}.yaml (records the AMI ids in "
        f"{pulumi_file.name}; docs/amis.md), then pulumi up -s {name}"
    )


_NameArg = Annotated[str, typer.Argument(help="new stack name (becomes stacks/NAME.yaml)")]
_PresetOpt = Annotated[str, typer.Option("--from", help="preset name in stacks/ or a path")]
_InstanceTypeOpt = Annotated[str | None, typer.Option(help="retarget the workload pool")]
_NodesOpt = Annotated[
    int | None, typer.Option(min=1, max=512, help="node count of the workload pool")
]
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
        "on-demand, spot, savings-plan-1y, savings-plan-3y). Default on-demand only: "
        "a savings-plan rate is only the run's true cost when the 1-3 year commitment "
        "is used anyway, and spot interrupts long runs",
    ),
]
_DirOpt = Annotated[Path, typer.Option("--dir", help="project directory")]
_ForceOpt = Annotated[bool, typer.Option(help="overwrite existing files")]


def new(
    name: _NameArg,
    preset: _PresetOpt,
    instance_type: _InstanceTypeOpt = None,
    nodes: _NodesOpt = None,
    image: _ImageOpt = None,
    cheapest: _CheapestOpt = False,
    deadline_hours: _DeadlineOpt = None,
    options: _OptionsOpt = "on-demand",
    directory: _DirOpt = Path("."),
    force: _ForceOpt = False,
) -> None:
    """Clone a preset into stacks/NAME.yaml and write Pulumi.NAME.yaml."""
    from accelstack.spec.retarget import retarget

    _check_name(name)
    src = _preset_path(preset, directory / "stacks")
    data = read_yaml(src)
    source_spec = load_spec(src)  # the preset itself must be valid
    catalog = load_catalog()
    picked = ""
    if cheapest:
        if instance_type is not None or nodes is not None:
            raise SpecError(
                [
                    Problem(
                        "--cheapest",
                        "",
                        "picks the instance type and node "
                        "count itself; drop --instance-type and --nodes",
                    )
                ]
            )
        instance_type, nodes, picked = _pick_cheapest(
            data, source_spec, catalog, deadline_hours, options
        )
    result = retarget(
        data,
        catalog,
        name=name,
        source=str(src),
        instance_type=instance_type,
        nodes=nodes,
        image=image,
    )
    if picked:
        result.notes.insert(0, picked)
    _write_stack(directory, name, src, result, force=force)


def register(app: typer.Typer) -> None:
    app.command()(validate)
    app.command()(schema)
    app.command()(new)
