"""preflight: check the AWS account against a spec before deploying (read-only calls)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from accelstack.cli.output import FormatOpt
from accelstack.errors import VerdictError


def register(app: typer.Typer) -> None:
    @app.command()
    def preflight(
        spec: Annotated[Path, typer.Argument(help="spec file (stacks/NAME.yaml)")],
        profile: Annotated[
            str | None, typer.Option(help="AWS profile (default: boto3's credential chain)")
        ] = None,
        endpoint_url: Annotated[
            str | None,
            typer.Option("--endpoint-url", help="send every AWS call here (an emulator)"),
        ] = None,
        output_format: FormatOpt = "text",
    ) -> None:
        """Check offerings, vCPU quotas, AMIs, reservations, the cache bucket and the
        Kubernetes version in the account. Exit 1 when any check fails."""
        from accelstack.catalog import load_catalog
        from accelstack.preflight import (
            FAIL,
            AwsClients,
            format_json,
            format_text,
            run_preflight,
        )
        from accelstack.resolve import resolve
        from accelstack.spec import load_spec

        catalog = load_catalog()
        stack = resolve(load_spec(spec), catalog)
        clients = AwsClients.from_session(stack.region, profile=profile, endpoint_url=endpoint_url)
        results = run_preflight(stack, clients)
        render = format_json if output_format == "json" else format_text
        typer.echo(render(stack, results), nl=False)
        failed = [r for r in results if r.status == FAIL]
        if failed:
            raise VerdictError(
                f"preflight failed: {len(failed)} check(s) failed "
                f"({', '.join(sorted({r.check for r in failed}))}); fix them before deploying"
            )
