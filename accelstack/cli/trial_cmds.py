"""trial and calibrate: the "prototype on both" loop.

`trial` renders a short benchmark job on one node of each accelerated pool (accelstack.render
.trial); `calibrate` turns the records those nodes append into measured MFU in the spec
(accelstack.cost.calibrate), which `price` and `compare` then use.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from accelstack.cli.imagecache import RegistryOpt
from accelstack.cli.output import FormatOpt, echo_json


def trial(
    spec: Annotated[Path, typer.Argument(help="spec file (stacks/NAME.yaml)")],
    output: Annotated[Path, typer.Option("-o", "--output", help="directory to write to")] = Path(
        "trial"
    ),
    steps: Annotated[
        int, typer.Option("--steps", min=2, max=100_000, help="steps to run (first = warm-up)")
    ] = 20,
    records: Annotated[
        str, typer.Option("--records", help="records file the nodes append to")
    ] = "trial-records.jsonl",
    force: Annotated[
        bool, typer.Option("--force", help="write into a non-empty directory")
    ] = False,
    nodes: Annotated[
        int,
        typer.Option(
            "--nodes", min=1, max=100_000, help="nodes per pool (at most the pool's own count)"
        ),
    ] = 1,
    registry: RegistryOpt = None,
) -> None:
    """Render a STEPS-step benchmark job on NODES nodes of each accelerated pool of SPEC (and
    its Kubernetes manifest on EKS stacks)."""
    from accelstack.catalog import load_catalog
    from accelstack.render.output import write_artifacts
    from accelstack.render.registry import image_cache
    from accelstack.render.trial import render_trial, trial_pull_notes, trial_warnings
    from accelstack.resolve import resolve
    from accelstack.spec import load_spec

    catalog = load_catalog()
    stack = resolve(load_spec(spec), catalog)
    cache = image_cache(stack, registry) if registry is not None else None
    artifacts = render_trial(stack, steps, records, nodes=nodes, cache=cache)
    write_artifacts(output, artifacts, force)
    typer.echo(f"wrote {len(artifacts)} files to {output}/ (see {output}/README.md)")
    for art in artifacts:
        typer.echo(f"  {art.path}")
    for warning in [*trial_warnings(stack), *trial_pull_notes(stack, nodes, cache)]:
        typer.echo(f"warning: {warning}")


def calibrate(
    records: Annotated[list[Path], typer.Argument(help="trial records files (JSON lines)")],
    spec: Annotated[Path, typer.Option("--spec", help="spec file to store the MFU in")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="show, write nothing")] = False,
    fmt: FormatOpt = "text",
) -> None:
    """Measured MFU per instance type and model from trial records, stored in SPEC."""
    from accelstack.catalog import load_catalog
    from accelstack.cost.calibrate import calibrate_spec, measure
    from accelstack.resolve import resolve
    from accelstack.spec import load_spec

    catalog = load_catalog()
    # a bad spec (spec rules, then the rules on the resolved stack) is reported before the
    # records are read
    stack = resolve(load_spec(spec), catalog)
    pools = {p.name: p.device.name for p in stack.pools}
    model = stack.workload.model
    active = model.active_params_billion
    moe = (model.params_billion, active) if active is not None else None
    measured = measure(catalog, records, pools, moe)
    if not dry_run:
        calibrate_spec(spec, measured, catalog)
    if fmt == "json":
        echo_json(
            {
                "spec": str(spec),
                "written": not dry_run,
                "measured": [m.model_dump() for m in measured],
            }
        )
        return
    for m in measured:
        typer.echo(
            f"{m.instance_type} {m.params_billion:g}B {m.precision}: MFU {m.mfu:.4f} "
            f"({m.tokens_per_second:,.1f} tokens/s; {m.file}, {m.date}, {m.steps} steps, "
            f"{m.records} record(s) on {m.nodes} node(s), world size {m.world_size}, "
            f"{m.device_kind}, model {m.model}, sdk {m.sdk})"
        )
    typer.echo(("would write" if dry_run else "wrote") + f" calibration to {spec}")


def register(app: typer.Typer) -> None:
    app.command()(trial)
    app.command()(calibrate)
