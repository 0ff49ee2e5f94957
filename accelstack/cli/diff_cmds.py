"""diff: what a change to the specs does to the planned resources and the cost, between two git
refs (or two directories of specs): the pull-request comment of a GitOps workflow."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from accelstack.cli.boundary import as_failure
from accelstack.cli.output import echo_json
from accelstack.errors import Problem, SpecError

if TYPE_CHECKING:
    from accelstack.catalog import Catalog

DiffFormat = Literal["text", "json", "markdown", "github-comment"]


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=False)


def _spec_names(names: list[str], folder: str) -> list[str]:
    """Spec files directly in `folder` (*.yaml, *.yml); Pulumi stack files skipped."""
    return sorted(
        n
        for n in names
        if Path(n).parent == Path(folder)
        and n.endswith((".yaml", ".yml"))
        and not Path(n).name.startswith("Pulumi.")
    )


def _from_ref(ref: str, specs: str, into: Path) -> tuple[str, dict[str, Path]]:
    """Write the specs of `specs` at `ref` under `into`; (label, {file name: path})."""
    sha = _git("rev-parse", "--verify", "--quiet", "--short", f"{ref}^{{commit}}")
    if sha.returncode != 0:
        raise SpecError([Problem(ref, "", "is neither a directory of specs nor a git ref here")])
    top = _git("rev-parse", "--show-prefix").stdout.strip()
    folder = str(Path(top, specs)) if top else specs
    listed = _git("ls-tree", "-r", "--name-only", "--full-name", ref, "--", specs)
    out: dict[str, Path] = {}
    for name in _spec_names(listed.stdout.splitlines(), folder):
        blob = _git("show", f"{ref}:{name}")
        target = into / Path(name).name
        target.write_text(blob.stdout, encoding="utf-8")
        out[target.name] = target
    return f"{ref} ({sha.stdout.strip()})", out


def _side(side: str, specs: str, into: Path) -> tuple[str, dict[str, Path]]:
    path = Path(side)
    if path.is_dir():
        names = [str(p) for p in path.iterdir() if p.is_file()]
        return side, {Path(n).name: Path(n) for n in _spec_names(names, side)}
    into.mkdir(parents=True)
    return _from_ref(side, specs, into)


def _stack_name(path: Path) -> str:
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return path.stem
    name = data.get("name") if isinstance(data, dict) else None
    return name if isinstance(name, str) and name else path.stem


def _planned(path: Path, catalog: Catalog, label: str) -> tuple[str, dict[str, Any]]:
    """(stack name, side row) of one spec: its plan document and priced verdict, or errors."""
    from accelstack.cli.plan_cmds import _plan_stack, plan_verdict, violations_of

    shown = f"{label}:{path.name}"
    try:
        stack, result = _plan_stack(path, catalog)
        verdict = plan_verdict(result, stack)
        found = [v.line() for v in violations_of(result, stack)]
    except Exception as exc:  # one broken spec must not hide the rest
        failure = as_failure(exc, f"diff {shown}")
        lines = [x.replace(str(path), shown) for x in str(failure).splitlines()]
        lines = lines or [type(failure).__name__]
        return _stack_name(path), {"file": shown, "errors": lines, "exit_code": failure.exit_code}
    cost = {
        "hourly_usd": round(verdict.cost.hourly_usd, 4),
        "monthly_usd": round(verdict.cost.monthly_usd, 2),
        "run_usd": round(verdict.run.run_usd, 2),
        "estimate": verdict.cost.estimate,
        "ok": verdict.ok,
        "verdict": verdict.one_line(),
        "violations": found,
    }
    return stack.name, {"file": shown, "plan": result.to_dict(), "cost": cost}


def _plan_sides(
    base: tuple[str, dict[str, Path]], head: tuple[str, dict[str, Path]]
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]], list[str]]:
    """Plan each changed spec on both sides; specs byte-identical on both are not planned
    (both sides run the same accelstack and catalog, so their plans are equal)."""
    from accelstack.catalog import load_catalog

    catalog = load_catalog()
    same = {
        n
        for n in base[1].keys() & head[1].keys()
        if base[1][n].read_bytes() == head[1][n].read_bytes()
    }
    rows: list[dict[str, dict[str, Any]]] = [{}, {}]
    for i, (label, files) in enumerate((base, head)):
        for name in sorted(files.keys() - same):
            stack, row = _planned(files[name], catalog, label)
            rows[i][stack] = row
    return rows[0], rows[1], sorted(_stack_name(head[1][n]) for n in same)


def _render(doc: dict[str, Any], fmt: DiffFormat) -> str:
    from accelstack.plan.diff_report import render_markdown, render_text

    if fmt == "text":
        return render_text(doc)
    return render_markdown(doc, comment=fmt == "github-comment")


def diff(
    base: Annotated[str, typer.Argument(help="git ref (origin/main) or directory of specs")],
    head: Annotated[str, typer.Argument(help="git ref (HEAD) or directory of specs")],
    specs: Annotated[
        str, typer.Option("--specs", help="the specs' directory inside the repository (refs)")
    ] = "stacks",
    fmt: Annotated[
        DiffFormat,
        typer.Option(
            "--format", help="text, json, markdown, or github-comment (markdown with a marker)"
        ),
    ] = "text",
    threshold_usd: Annotated[
        float | None,
        typer.Option(
            "--threshold-usd", help="github-comment: print nothing when monthly cost rises less"
        ),
    ] = None,
    threshold_percent: Annotated[
        float | None,
        typer.Option("--threshold-percent", help="the same, as a percentage of the base cost"),
    ] = None,
) -> None:
    """Compare the planned stacks of two git refs or directories: resources added, changed,
    replaced and removed (stateful replacements first), the cost delta and each side's
    verdict. Exit 0, or the exit code of a HEAD spec that does not plan."""
    from accelstack.plan.diff import below_threshold, diff_sides

    with tempfile.TemporaryDirectory(prefix="accelstack-diff-") as tmp:
        sides = _side(base, specs, Path(tmp, "base")), _side(head, specs, Path(tmp, "head"))
        old, new, same = _plan_sides(*sides)
    doc = diff_sides(old, new, (sides[0][0], sides[1][0]), same)
    quiet = below_threshold(doc, threshold_usd, threshold_percent)
    if fmt == "json":
        echo_json({**doc, "comment": not quiet})
    elif not (fmt == "github-comment" and quiet):
        typer.echo(_render(doc, fmt), nl=False)
    failed = [r["exit_code"] for r in new.values() if r.get("errors")]
    if failed:
        raise typer.Exit(max(failed))


def register(app: typer.Typer) -> None:
    app.command()(diff)
