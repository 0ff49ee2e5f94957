"""init: a new deployable Pulumi project from a preset (`accelstack init DIR --from PRESET`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import typer

from accelstack.cli import completion
from accelstack.errors import Problem, SpecError

_DirArg = Annotated[Path, typer.Argument(help="the new project's directory (created; empty)")]
_FromOpt = Annotated[
    str,
    typer.Option(
        "--from",
        help="preset name (the bundled presets) or a spec path",
        autocompletion=completion.presets,
    ),
]
_StackOpt = Annotated[
    str | None, typer.Option("--stack", help="stack (and spec) name; default the preset's")
]
_ForceOpt = Annotated[bool, typer.Option(help="write into a non-empty directory")]
_ProjectArg = Annotated[Path, typer.Argument(help="the `init` project's directory")]

#: Pulumi project names: letters, digits, '-', '_', '.' (the project file reference).
_PROJECT_RE = re.compile(r"[^A-Za-z0-9_.-]+")


def project_name(directory: Path) -> str:
    """The Pulumi project's name: the directory's name with other characters as '-'."""
    name = _PROJECT_RE.sub("-", directory.resolve().name).strip("-.")
    return name or "accelstack-project"


def _check_empty(directory: Path, force: bool) -> None:
    if directory.exists() and not directory.is_dir():
        raise SpecError([Problem(str(directory), "", "exists and is not a directory")])
    if directory.is_dir() and any(directory.iterdir()) and not force:
        raise SpecError(
            [Problem(str(directory), "", "is not empty; pass --force to write into it anyway")]
        )


def project_files(
    project: str, stack: str, preset: str, region: str, version: str, wheel: str | None = None
) -> dict[str, str]:
    """Relative path -> text of every project file except the spec and its stack config
    (requirements.txt names the kept wheel `wheel`, by default version's pure-Python one)."""
    from accelstack.cli import project_files as pf
    from accelstack.cli.project_readme import README

    values = {
        "@PROJECT@": project,
        "@STACK@": stack,
        "@PRESET@": preset,
        "@REGION@": region,
        "@VERSION@": version,
        "@WHEEL@": wheel or f"accelstack-{version}-py3-none-any.whl",
    }

    def fill(text: str) -> str:
        for key, value in values.items():
            text = text.replace(key, value)
        return text

    return {
        "Pulumi.yaml": fill(pf.PULUMI_YAML),
        "__main__.py": pf.MAIN_PY,
        "requirements.txt": fill(pf.REQUIREMENTS),
        ".gitignore": pf.GITIGNORE,
        "policies/PulumiPolicy.yaml": pf.POLICY_PACK_YAML,
        "policies/__main__.py": pf.POLICY_PACK_MAIN,
        WORKFLOW: ci_file("github-actions.yml"),
        CI_SCRIPT: ci_file("accelstack-ci.sh"),
        "README.md": fill(README) + "\n" + _run_section(stack, region),
    }


#: The CI examples' shared shell steps and the GitHub workflow, written into every project
#: as they are (one source: examples/ci, packaged as accelstack/ci; they run unchanged there).
CI_SCRIPT = "ci/accelstack-ci.sh"
WORKFLOW = ".github/workflows/accelstack.yml"


def ci_file(name: str) -> str:
    """The packaged copy of examples/ci/NAME (accelstack/ci links to examples/ci)."""
    return (Path(__file__).resolve().parent.parent / "ci" / name).read_text(encoding="utf-8")


def _run_section(stack: str, region: str) -> str:
    """The run sequence for the new project's stack (the default job controller's manifest)."""
    from accelstack.catalog import load_catalog
    from accelstack.render import render_runbook, runbook_context

    cat = load_catalog()
    chart = cat.controller_chart(cat.default_job_controller())
    return render_runbook(
        runbook_context(
            name=stack,
            region=region,
            namespace=cat.defaults.training_namespace,
            spec=f"stacks/{stack}.yaml",
            kind=(chart.manifest_kind if chart else None) or "job",
            nodes="NODES",
        )
    )


def init(
    directory: _DirArg,
    preset: _FromOpt,
    stack: _StackOpt = None,
    force: _ForceOpt = False,
) -> None:
    """Start a deployable Pulumi project from a preset.

    Writes Pulumi.yaml, the program entry, stacks/STACK.yaml, Pulumi.STACK.yaml,
    requirements.txt, the CrossGuard pack (policies/), a CI workflow and a README.

    Examples:

      accelstack init my-cluster --from llama3-70b-trn2

      accelstack init team-a --from trn1-finetune --stack team-a
    """
    from accelstack import __version__
    from accelstack.catalog import load_catalog
    from accelstack.cli.project_wheel import running_wheel
    from accelstack.cli.specfiles import (
        check_name,
        preset_path,
        resolved_target,
        schema_text,
        source_spec,
        spec_file_text,
        stack_config_text,
    )
    from accelstack.resolve.retarget import retarget
    from accelstack.spec.roundtrip import load_roundtrip, read_stash

    _check_empty(directory, force)
    src = preset_path(preset, directory / "stacks")
    catalog = load_catalog()
    name = stack or source_spec(src, catalog).name  # the preset itself must be valid
    check_name(name)
    data, stash = load_roundtrip(src), read_stash(src)
    result = retarget(data, catalog, name=name, source=str(src), stash=stash)
    resolved_target(result, catalog)  # every rule on the resolved clone, before anything is written
    wheel_name, wheel_data = running_wheel()
    files = project_files(
        project_name(directory), name, src.stem, result.spec.region, __version__, wheel_name
    )
    files[f"stacks/{name}.yaml"] = spec_file_text(src, result, command="init")
    stack_file = directory / f"Pulumi.{name}.yaml"  # with --force: merged, keys kept
    files[f"Pulumi.{name}.yaml"] = stack_config_text(name, result.spec.region, stack_file)
    files["schema/spec.schema.json"] = schema_text()
    written = _write_project(directory, files, wheel_name, wheel_data)
    typer.echo(f"wrote a Pulumi project in {directory} (stack {name}, from {src.stem}):")
    for rel in written:
        typer.echo(f"  {rel}")
    for step in next_steps(directory, name):
        typer.echo(step)


def _write_project(
    directory: Path, files: dict[str, str], wheel_name: str, wheel_data: bytes
) -> list[str]:
    """Write the project's files atomically and its kept wheel, every target checked first (a
    symlink or a directory is refused, even with --force); returns what was written, sorted."""
    from accelstack.cli.project_wheel import WHEEL_DIR
    from accelstack.files import check_target, make_dirs, write_text_atomic

    wheel_rel = f"{WHEEL_DIR}/{wheel_name}"
    for rel in [*files, wheel_rel]:
        check_target(directory / rel)
    for rel, text in sorted(files.items()):
        make_dirs((directory / rel).parent)
        write_text_atomic(directory / rel, text, 0o755 if rel.endswith(".sh") else None)
    _write_wheel(directory, wheel_name, wheel_data)
    return sorted([*files, wheel_rel])


def _write_wheel(directory: Path, wheel_name: str, wheel: bytes) -> list[Path]:
    """Write the kept wheel into DIR/wheels; other accelstack wheels there go (the one
    requirements.txt names is the only one pip installs). Returns the removed files."""
    from accelstack.cli.project_wheel import WHEEL_DIR, stale_wheels
    from accelstack.files import make_dirs, os_failure, write_bytes_atomic

    make_dirs(directory / WHEEL_DIR)
    write_bytes_atomic(directory / WHEEL_DIR / wheel_name, wheel, 0o644)
    stale = stale_wheels(directory, wheel_name)
    for old in stale:
        try:
            old.unlink()
        except OSError as exc:
            raise os_failure(old, exc) from None
    return stale


def wheel(directory: _ProjectArg = Path(".")) -> None:
    """Write (or refresh) the accelstack wheel an `init` project installs.

    Writes the running accelstack as DIR/wheels/accelstack-VERSION-py3-none-any.whl, removes
    other accelstack wheels there and points requirements.txt's accelstack line at it (its
    other lines are kept). No package index carries accelstack: the project installs it from
    this file. Commit both.

    Examples:

      accelstack wheel .
    """
    from accelstack import __version__
    from accelstack.cli.project_files import REQUIREMENTS
    from accelstack.cli.project_wheel import WHEEL_DIR, requirements_with, running_wheel
    from accelstack.files import check_target, write_text_atomic

    if not directory.is_dir():
        raise SpecError([Problem(str(directory), "", "is not a directory (an `init` project)")])
    wheel_name, data = running_wheel()
    requirements = directory / "requirements.txt"
    check_target(requirements)
    check_target(directory / WHEEL_DIR / wheel_name)
    fresh = REQUIREMENTS.replace("@VERSION@", __version__).replace("@WHEEL@", wheel_name)
    old = requirements.read_text(encoding="utf-8") if requirements.exists() else fresh
    removed = _write_wheel(directory, wheel_name, data)
    write_text_atomic(requirements, requirements_with(old, wheel_name))
    typer.echo(f"wrote {directory / WHEEL_DIR / wheel_name}; requirements.txt installs it")
    for path in removed:
        typer.echo(f"removed {path}")


def next_steps(directory: Path, name: str) -> list[str]:
    """What to do after `init`, in order (the README says the same)."""
    return [
        "next:",
        f"  cd {directory}",
        f"  edit stacks/{name}.yaml: replace the placeholder CIDRs and example account "
        "(`accelstack validate` lists them; `pulumi up` refuses them)",
        f"  pulumi stack init {name}",
        f"  accelstack amis pin stacks/{name}.yaml --stack {name}   # `pulumi up` refuses unpinned AMIs",
        "  pulumi up --policy-pack policies   (see README.md)",
    ]


def register(app: typer.Typer) -> None:
    app.command()(init)
    app.command()(wheel)
