"""amis: pin the pools' AMI ids in the Pulumi stack config, and upgrade them on request."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer


def _ssm_client(region: str, profile: str | None, endpoint_url: str | None) -> Any:
    import boto3

    session = boto3.Session(profile_name=profile, region_name=region)
    return (
        session.client("ssm", endpoint_url=endpoint_url) if endpoint_url else session.client("ssm")
    )


def _load(spec: Path) -> Any:
    from accelstack.catalog import load_catalog
    from accelstack.resolve import resolve
    from accelstack.spec import load_spec

    catalog = load_catalog()
    return resolve(load_spec(spec), catalog)


#: Tests replace this to hand in a stubbed client (botocore Stubber).
SSM_FACTORY = _ssm_client


def _show_changes(
    spec: Path,
    stack_name: str | None,
    profile: str | None,
    endpoint_url: str | None,
    all_parameters: bool,
) -> tuple[Path, dict[str, str], dict[str, str], list[Any]]:
    """Read the stack's pins, resolve the parameters (every one, or only the unpinned ones),
    and print which pools would roll. Returns (config path, pins, resolved ids, changes)."""
    from accelstack.preflight.amis import config_path, plan_changes, read_pins, resolve_parameters

    stack = _load(spec)
    path = config_path(spec, stack_name or stack.name)
    pins = read_pins(path)
    names = [p for p in stack.ami_parameters if all_parameters or p not in pins]
    latest = resolve_parameters(SSM_FACTORY(stack.region, profile, endpoint_url), names)
    changes = plan_changes(stack, pins, latest if all_parameters else {**pins, **latest})
    for change in changes:
        typer.echo(change.line(stack.orchestration))
    return path, pins, latest, changes


SpecArg = Annotated[Path, typer.Argument(help="spec file (stacks/NAME.yaml)")]
StackOpt = Annotated[
    str | None, typer.Option("--stack", help="Pulumi stack (default: the spec's name)")
]
ProfileOpt = Annotated[str | None, typer.Option(help="AWS profile (default: boto3's chain)")]
EndpointOpt = Annotated[
    str | None, typer.Option("--endpoint-url", help="send the SSM calls here (an emulator)")
]


def amis_pin(
    spec: SpecArg,
    stack_name: StackOpt = None,
    profile: ProfileOpt = None,
    endpoint_url: EndpointOpt = None,
) -> None:
    """Resolve the AMI parameters that have no pin yet and record their ids in
    Pulumi.<stack>.yaml (accelstack:amis). Existing pins are kept: see `amis upgrade`."""
    from accelstack.preflight.amis import write_pins

    path, pins, latest, _ = _show_changes(spec, stack_name, profile, endpoint_url, False)
    if latest:
        write_pins(path, {**pins, **latest})
        typer.echo(f"wrote {len(latest)} pin(s) to {path}")
    else:
        typer.echo(f"every AMI is already pinned in {path}")


def amis_upgrade(
    spec: SpecArg,
    stack_name: StackOpt = None,
    yes: Annotated[bool, typer.Option("--yes", help="write the new ids")] = False,
    profile: ProfileOpt = None,
    endpoint_url: EndpointOpt = None,
) -> None:
    """Resolve every AMI parameter again and show which node groups (EKS) or instances
    (standalone) would roll, old -> new id. Writes Pulumi.<stack>.yaml only with --yes; the
    next `pulumi up` then rolls exactly those pools."""
    from accelstack.preflight.amis import scale_to_zero_steps, write_pins

    path, pins, _, changes = _show_changes(spec, stack_name, profile, endpoint_url, True)
    changed = [c for c in changes if c.old != c.new]
    for line in scale_to_zero_steps(_load(spec), changes):
        typer.echo(line)
    if not changed:
        typer.echo("no AMI changed: nothing rolls")
    elif not yes:
        typer.echo(f"dry run: {len(changed)} change(s) not written; re-run with --yes")
    else:
        write_pins(path, {**pins, **{c.parameter: c.new for c in changes}})
        typer.echo(
            f"wrote {len(changed)} change(s) to {path}; `pulumi up` rolls those pools "
            "(capacity-block and reservation pools: scale them to zero first, as above)"
        )


def register(app: typer.Typer) -> None:
    amis = typer.Typer(
        help="Pin AMI ids in the Pulumi stack config; upgrade them explicitly.",
        no_args_is_help=True,
    )
    amis.command("pin")(amis_pin)
    amis.command("upgrade")(amis_upgrade)
    app.add_typer(amis, name="amis")
