"""diff: what a change to the specs does to the planned resources and the cost, between two git
refs (or two directories of specs): the pull-request comment of a GitOps workflow."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from accelstack.cli.boundary import as_failure
from accelstack.cli.output import CeilingOpt, StackOpt
from accelstack.cli.programside import (
    ProgramSide,
    changes_between,
    gate_data,
    program_side,
    spec_data,
)
from accelstack.cli.stackrefs import deploy_fingerprint, side
from accelstack.cli.trust import GateFiles, base_files, ceiling_of, gate_changes, head_files
from accelstack.errors import Problem, SpecError
from accelstack.stackconfig import StackRef

if TYPE_CHECKING:
    from collections.abc import Callable

    from accelstack.cost.ceiling import Ceiling
    from accelstack.plan.diffmodel import DiffDocument
    from accelstack.plan.diffside import SideRow

    #: Plans one base stack (ref, side label) into its diff side row.
    BasePlanner = Callable[[StackRef, str], SideRow]
    Rows = dict[str, SideRow]

DiffFormat = Literal["text", "json", "markdown", "github-comment"]
NO_GATE = GateFiles(None, None)


def _plan_sides(
    base: tuple[str, dict[str, StackRef], Path],
    head: tuple[str, dict[str, StackRef], Path],
    ceiling: Ceiling | None,
    gates: tuple[GateFiles, GateFiles] = (NO_GATE, NO_GATE),
    base_planner: BasePlanner | None = None,
    programs: tuple[str, str] = ("", ""),
) -> tuple[Rows, Rows, list[str]]:
    """Plan each changed stack on both sides; a stack whose deploy inputs are identical on
    both (`deploy_fingerprint`: spec, stack file, project file, ceiling, overlay, and the
    digest of the program inputs, `programs`) and whose side's usage file is the same
    (cli/usagefile.py) is not planned (both sides run the same accelstack and catalog).
    `base_planner`: the base's own accelstack plans the base side (cli/crossversion.py)."""
    from accelstack.catalog import load_catalog
    from accelstack.cli.planning import planned_row
    from accelstack.cli.usagefile import usage_bytes

    catalog = load_catalog()
    usage_same = usage_bytes(base[2]) == usage_bytes(head[2])
    same = {
        n
        for n in base[1].keys() & head[1].keys()
        if usage_same
        and deploy_fingerprint(base[1][n], gates[0], programs[0])
        == deploy_fingerprint(head[1][n], gates[1], programs[1])
    }
    rows: list[Rows] = [{}, {}]
    for i, (label, refs, _) in enumerate((base, head)):
        for name in sorted(refs.keys() - same):
            if i == 0 and base_planner is not None:
                rows[i][name] = base_planner(refs[name], label)
            else:
                rows[i][name] = planned_row(refs[name], catalog, label, ceiling, with_usage=True)
    _name_deleted(rows[1], base[1], head[1])
    return rows[0], rows[1], sorted(same)


def _name_deleted(rows: Rows, old: dict[str, StackRef], new: dict[str, StackRef]) -> None:
    """A head stack whose spec this change deletes (its stack file still points at it) is
    headlined as such, not as a file that cannot be read."""
    from dataclasses import replace

    from accelstack.cli.planning import rel_to

    for name, row in rows.items():
        ref, was = new.get(name), old.get(name)
        if not row.broken or ref is None or was is None or ref.spec.exists():
            continue
        rel = rel_to(ref.spec, ref.root)
        if (was.root / rel).is_file():
            by = ref.config_file.name if ref.config_file else f"stack {name}"
            headline = f"cannot plan: {rel} is deleted by this change, but {by} deploys it"
            rows[name] = replace(row, headline=headline)


def _per_stack(values: list[str] | None) -> dict[str, float]:
    """`--stack-threshold NAME=USD` values as {stack: USD}; one line on a malformed one."""
    out: dict[str, float] = {}
    for v in values or []:
        name, sep, usd = v.partition("=")
        try:
            out[name.strip()] = float(usd) if sep and name.strip() else float("nan")
        except ValueError:
            out[name.strip()] = float("nan")
        if out[name.strip()] != out[name.strip()] or out[name.strip()] < 0:
            raise SpecError(
                [Problem("--stack-threshold", "", f"is {v!r}; allowed: STACK=USD, e.g. prod=500")]
            )
    return out


def _emit(doc: DiffDocument, fmt: DiffFormat, quiet: bool) -> None:
    """Print the document; every credential-looking value is redacted (the comment is public
    to everyone who can read the pull request)."""
    from accelstack.plan import diff_report as formats
    from accelstack.spec.secrets import redact

    if fmt == "json":
        text = formats.render_json(doc, comment=not quiet)
    elif fmt == "github-comment" and quiet:
        text = formats.render_quiet(doc)
    elif fmt == "text":
        text = formats.render_text(doc)
    else:
        text = formats.render_markdown(doc, comment=fmt == "github-comment")
    typer.echo(redact(text), nl=False)


DiffFormatOpt = Annotated[
    DiffFormat,
    typer.Option(
        "--format", help="text, json, markdown, or github-comment (markdown with a marker)"
    ),
]
ThresholdOpt = Annotated[
    float | None,
    typer.Option(
        "--threshold-usd",
        help="github-comment: quiet unless some stack's monthly cost moves this much",
    ),
]


def diff(
    base: Annotated[str, typer.Argument(help="git ref (origin/main); a folder with --dirs")],
    head: Annotated[str, typer.Argument(help="git ref (HEAD); a folder with --dirs")],
    specs: Annotated[
        str, typer.Option("--specs", help="the specs' directory inside the repository (refs)")
    ] = "stacks",
    fmt: DiffFormatOpt = "text",
    threshold_usd: ThresholdOpt = None,
    threshold_percent: Annotated[
        float | None,
        typer.Option("--threshold-percent", help="the same, as a percentage of a stack's base"),
    ] = None,
    stack_threshold: Annotated[
        list[str] | None,
        typer.Option("--stack-threshold", help="STACK=USD: that stack's own threshold (repeat)"),
    ] = None,
    stack_name: StackOpt = None,
    ceiling: CeilingOpt = None,
    dirs: Annotated[
        bool,
        typer.Option("--dirs", help="BASE and HEAD are project or spec folders, not git refs"),
    ] = False,
) -> None:
    """What a change does to every stack: rolls, replacements, resources, cost.

    Compares the stacks of two git refs (two folders with --dirs: a folder never stands in
    for a ref of the same name), each resolved as the program does (its
    Pulumi.<stack>.yaml): edits AWS or Pulumi would refuse, node rolls (replacements carried
    to what depends on them) and stateful replacements first, then resources with before ->
    after values and monthly cost, and the verdicts (a base that keeps another accelstack
    wheel than the head is planned by its own version). Below every threshold,
    `github-comment` prints a "no longer applies" body for CI to update its earlier comment.
    Exit 0; 1 when an edit is refused (create-before-delete collision, a control-plane zone
    move, a protected resource replaced); or the exit code of a HEAD stack that does not plan.

    Examples:

      accelstack diff origin/main HEAD --format github-comment --threshold-usd 100

      accelstack diff origin/main HEAD --stack prod --stack-threshold prod=1000

      accelstack diff old-project/ new-project/ --dirs
    """
    from accelstack.plan.diff import below_threshold

    per_stack = _per_stack(stack_threshold)
    try:
        doc, old, new = _diff_doc(base, head, specs, stack_name, ceiling, dirs)
    except Exception as exc:  # the comment (or JSON) still says why: CI posts or updates it
        failure = as_failure(exc, f"diff {base} {head}")
        if fmt != "text":  # text: the one error line on stderr is the whole answer
            _emit(_unlisted(base, head, failure), fmt, quiet=False)
        raise failure from None
    _emit(doc, fmt, below_threshold(doc, threshold_usd, threshold_percent, per_stack))
    _exit(doc, [*new.values(), *old.values()])


def _exit(doc: DiffDocument, rows: list[SideRow]) -> None:
    """The exit code of a stack that did not plan, else 1 when an edit is refused (a verdict
    said no: the change as written would stop `pulumi up`)."""
    failed = [r.exit_code for r in rows if r.broken]
    if failed:
        raise typer.Exit(max(failed))
    if any(s.refused() for s in doc.stacks):
        raise typer.Exit(1)


def _unlisted(base: str, head: str, failure: Exception) -> DiffDocument:
    """The document of a diff whose stacks could not be listed (a broken project file, a ref
    that does not exist): no stack, the reason first, never quiet."""
    from dataclasses import replace

    from accelstack.plan.diff import diff_document

    lines = str(failure).splitlines() or [type(failure).__name__]
    return replace(diff_document({}, {}, (base, head)), ok=False, errors=tuple(lines))


def _diff_doc(
    base: str, head: str, specs: str, stack_name: str | None, ceiling: Path | None, dirs: bool
) -> tuple[DiffDocument, Rows, Rows]:
    """The diff document of two refs (or folders), and the base and head sides' rows; it
    names the accelstack version that planned each side (`crossversion.planned_with`)."""
    from dataclasses import replace

    from accelstack.cli import crossversion as xv
    from accelstack.cli.planning import accelerated_types, ceiling_for, instance_vcpus
    from accelstack.cli.usagefile import usage_changes
    from accelstack.plan.diff import diff_document

    with tempfile.TemporaryDirectory(prefix="accelstack-diff-") as tmp:
        sides = (
            side(base, specs, Path(tmp, "base"), dirs),
            side(head, specs, Path(tmp, "head"), dirs),
        )
        programs = _programs(sides, (base, head), specs, ceiling, dirs)
        if stack_name is not None:
            sides = (_only(sides[0], stack_name), _only(sides[1], stack_name))
        digests = (programs[0].digest, programs[1].digest)
        if dirs:
            planned_with = xv.planned_with(None, None)
            limit = ceiling_for(ceiling, sides[1][2])
            old, new, same = _plan_sides(*sides, limit, programs=digests)
            gate: list[str] = []
        else:
            wheels = (xv.kept_wheel(base), xv.kept_wheel(head))
            planned_with = xv.planned_with(*wheels)
            site = (
                xv.unpack(wheels[0], base, Path(tmp, "wheel"))
                if wheels[0] != wheels[1] and wheels[0]
                else None
            )
            old, new, same, gate = _plan_trusted(
                sides, base, ceiling, Path(tmp, "trusted"), (site, planned_with.base), digests
            )
        gate += usage_changes(sides[0][2], sides[1][2])  # each side reads its own
        changes = changes_between(*programs)
        accepted = programs[1].accepted() if changes else None
    labels = (sides[0][0], sides[1][0])
    doc = diff_document(old, new, labels, same, accelerated_types(), gate, instance_vcpus())
    doc = replace(doc, program_changes=tuple(changes), program_accepted=accepted)
    return replace(doc, planned_with=planned_with), old, new


def _programs(
    sides: tuple[Side, Side],
    names: tuple[str, str],
    specs: str,
    ceiling: Path | None,
    dirs: bool,
) -> tuple[ProgramSide, ProgramSide]:
    """Both sides' program inputs: read from each ref (or each folder with --dirs), with the
    specs their stacks deploy and the gate's own files left out."""
    from accelstack.cli.gittree import folder_tree, ref_tree

    here = sides[1][2] if dirs else Path.cwd()  # the gate's files, named as the head has them
    gate = gate_data(head_files(ceiling, here), here)
    own = [gate + spec_data(refs.values(), root) for _, refs, root in sides]
    data = own[0] + own[1]
    out = []
    for (_, _, root), name, alone in zip(sides, names, own, strict=True):
        files = folder_tree(root) if dirs else ref_tree(name, Path.cwd())
        out.append(program_side(files, root, specs, data, alone))
    return out[0], out[1]


Side = tuple[str, dict[str, StackRef], Path]


def _plan_trusted(
    sides: tuple[Side, Side],
    base: str,
    ceiling: Path | None,
    into: Path,
    old_wheel: tuple[Path | None, str] = (None, ""),
    programs: tuple[str, str] = ("", ""),
) -> tuple[Rows, Rows, list[str], list[str]]:
    """Both refs planned with the gate inputs trusted from outside the change: the ceiling and
    catalog overlay of the CI setting, else the base ref's; their changes listed first.
    `old_wheel`: (the base's unpacked wheel, its version) when the base's own accelstack
    plans the base side; `programs`: each side's program-input digest."""
    from accelstack.cli.crossversion import old_planner
    from accelstack.cli.trust import overlay_in_force

    head_gate = head_files(ceiling, Path.cwd())
    trusted = base_files(head_gate, base, Path.cwd(), into)
    site, version = old_wheel
    planner = old_planner(site, trusted, version) if site is not None else None
    with overlay_in_force(trusted):
        gates = (trusted, head_gate)
        old, new, same = _plan_sides(*sides, ceiling_of(trusted), gates, planner, programs)
    return old, new, same, gate_changes(trusted, head_gate)


def _only(
    side: tuple[str, dict[str, StackRef], Path], name: str
) -> tuple[str, dict[str, StackRef], Path]:
    return side[0], {k: v for k, v in side[1].items() if k == name}, side[2]


def register(app: typer.Typer) -> None:
    app.command()(diff)
