"""render: write the launch artifacts (node scripts, Kubernetes jobs, sbatch) for a spec."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from accelstack.errors import AccelstackError, Problem, SpecError


class OutputError(AccelstackError):
    """The output directory cannot be written."""


def register(app: typer.Typer) -> None:
    @app.command()
    def render(
        spec: Annotated[Path, typer.Argument(help="spec file (stacks/NAME.yaml)")],
        output: Annotated[Path, typer.Option("-o", "--output", help="directory to write to")],
        bucket: Annotated[
            str | None,
            typer.Option(
                help="compile-cache bucket (default: the spec's compile_cache.bucket; "
                "otherwise the scripts read ACCELSTACK_COMPILE_CACHE_URL at run time)"
            ),
        ] = None,
    ) -> None:
        """Render launch artifacts: node scripts, PyTorchJob / Job manifests, README index."""
        import re

        from accelstack.catalog import load_catalog
        from accelstack.render import render as render_all
        from accelstack.render import render_warnings
        from accelstack.resolve import resolve
        from accelstack.spec import BUCKET_RE, load_spec

        if bucket is not None and not re.fullmatch(BUCKET_RE, bucket):
            raise SpecError(
                [
                    Problem(
                        "--bucket",
                        "",
                        f"'{bucket}' is not a valid S3 bucket name "
                        "(3-63 lowercase letters, digits, '.' and '-')",
                    )
                ]
            )
        catalog = load_catalog()
        stack = resolve(load_spec(spec, catalog), catalog)
        artifacts = render_all(stack, bucket)
        try:
            output.mkdir(parents=True, exist_ok=True)
            for art in artifacts:
                target = output / art.path
                target.write_text(art.content, encoding="utf-8")
                if art.executable:
                    target.chmod(0o755)
        except OSError as exc:
            raise OutputError(f"{output}: cannot write: {exc.strerror or exc}") from None
        typer.echo(f"wrote {len(artifacts)} files to {output}/ (see {output}/README.md)")
        for art in artifacts:
            typer.echo(f"  {art.path}")
        for warning in render_warnings(stack):
            typer.echo(f"warning: {warning}")
