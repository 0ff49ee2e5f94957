"""addons: pin EKS add-on versions per Kubernetes version from EKS, into the catalog overlay."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

import typer

from accelstack.cli.output import FormatOpt


def _eks_source(region: str) -> Any:
    from accelstack.catalog.addons_refresh import AwsAddonSource

    return AwsAddonSource.from_boto3(region)


#: Tests replace this to hand in a stubbed EKS client (botocore Stubber).
SOURCE_FACTORY = _eks_source


def _split(values: list[str] | None) -> tuple[str, ...]:
    return tuple(v.strip() for item in values or [] for v in item.split(",") if v.strip())


def refresh(
    kubernetes_version: Annotated[
        list[str] | None,
        typer.Option(
            "--kubernetes-version",
            help="Kubernetes versions to refresh (repeat or comma-separate; default: every "
            "version of the catalog)",
        ),
    ] = None,
    addon: Annotated[
        list[str] | None,
        typer.Option("--addon", help="add-ons to refresh (default: every add-on pinned)"),
    ] = None,
    region: Annotated[
        str, typer.Option("--region", help="the region asked (DescribeAddonVersions)")
    ] = "us-east-1",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="show changes, write nothing")] = False,
    fmt: FormatOpt = "text",
) -> None:
    """Pin EKS add-on versions per Kubernetes version from EKS DescribeAddonVersions (the
    version EKS marks default for each Kubernetes version) into the catalog overlay's
    instances.yaml; `accelstack diff` then shows each add-on update and the DaemonSets it
    rolls."""
    from accelstack.catalog.addons_refresh import Request, refresh_overlay

    req = Request(_split(kubernetes_version), _split(addon), dry_run)
    result, target = refresh_overlay(req, SOURCE_FACTORY(region), dt.date.today().isoformat())
    if fmt == "json":
        from accelstack.jsonout import dumps

        typer.echo(dumps(result.to_dict(target, dry_run)))
        return
    typer.echo(result.summary(target, dry_run), nl=False)


def register(app: typer.Typer) -> None:
    addons_app = typer.Typer(
        help="Pin EKS add-on versions per Kubernetes version; refresh them explicitly.",
        no_args_is_help=True,
    )
    addons_app.command("refresh")(refresh)
    app.add_typer(addons_app, name="addons")
