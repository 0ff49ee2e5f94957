"""render: write the launch artifacts (node scripts, Kubernetes jobs, sbatch) for a spec."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from accelstack.cli.imagecache import RegistryOpt
from accelstack.cli.output import FormatOpt, echo_json
from accelstack.errors import Problem, SpecError

if TYPE_CHECKING:
    from accelstack.render import Artifact
    from accelstack.render.output import Written

_BucketOpt = Annotated[
    str | None,
    typer.Option(
        help="compile-cache bucket (default: the spec's compile_cache.bucket; "
        "otherwise the scripts read ACCELSTACK_COMPILE_CACHE_URL at run time)"
    ),
]
_ForceOpt = Annotated[
    bool,
    typer.Option(
        "--force",
        help="write into a non-empty directory that render did not write "
        "(files of the same name are replaced; symlinks are still refused)",
    ),
]


def _check_bucket(bucket: str | None) -> None:
    from accelstack.spec import BUCKET_RE

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


def _echo_written(
    output: Path, artifacts: list[Artifact], done: Written, fmt: str, warnings: list[str]
) -> None:
    if fmt == "json":
        files = [{"path": a.path, "executable": a.executable} for a in artifacts]
        echo_json(
            {
                "directory": str(output),
                "files": files,
                "removed": list(done.removed),
                "kept": list(done.kept),
                "warnings": warnings,
            }
        )
        return
    typer.echo(f"wrote {len(artifacts)} files to {output}/ (see {output}/README.md)")
    for art in artifacts:
        typer.echo(f"  {art.path}")
    for name in done.removed:
        typer.echo(f"  removed {name} (stale: written by an earlier render)")
    for name in done.kept:
        typer.echo(f"  kept {name} (stale, but changed since an earlier render wrote it)")
    for warning in warnings:
        typer.echo(f"warning: {warning}")


def render(
    spec: Annotated[Path, typer.Argument(help="spec file (stacks/NAME.yaml)")],
    output: Annotated[Path, typer.Option("-o", "--output", help="directory to write to")],
    bucket: _BucketOpt = None,
    fmt: FormatOpt = "text",
    force: _ForceOpt = False,
    registry: RegistryOpt = None,
) -> None:
    """Render launch artifacts: node scripts, TrainJob (or the spec's job kind) and Job
    manifests, the fabric acceptance job, README index.

    The directory is written in one step (staged beside it, then swapped in); a second
    render into it while one runs is refused, and so is any file that would carry a
    credential-looking value.

    Examples:

      accelstack render stacks/llama3-70b-trn2.yaml -o out/llama3

      accelstack render stacks/trn1-finetune.yaml -o out/ft --bucket team-neuron-cache

      accelstack render stacks/llama3-405b-p5.yaml -o out/405b --registry 123456789012.dkr.ecr.us-east-1.amazonaws.com
    """
    from accelstack.catalog import load_catalog
    from accelstack.render import render as render_all
    from accelstack.render import render_warnings
    from accelstack.render.registry import image_cache
    from accelstack.render.stage import write_directory
    from accelstack.resolve import resolve
    from accelstack.spec import load_spec

    _check_bucket(bucket)
    catalog = load_catalog()
    stack = resolve(load_spec(spec), catalog)
    cache = image_cache(stack, registry) if registry is not None else None
    artifacts = render_all(stack, bucket, cache)
    done = write_directory(output, artifacts, force)
    _echo_written(output, artifacts, done, fmt, list(render_warnings(stack, cache)))


def register(app: typer.Typer) -> None:
    app.command()(render)
