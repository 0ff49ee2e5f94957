"""plan, check: the offline plan of a spec, and a whole directory of specs for GitOps."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from accelstack.cli.boundary import as_failure
from accelstack.cli.output import (
    CeilingOpt,
    FormatOpt,
    StackOpt,
    TextOrJson,
    echo_json,
    echo_overlay,
)
from accelstack.cli.planning import (
    accelerated_types,
    ceiling_for,
    instance_vcpus,
    plan_ref,
    plan_verdict,
    planned_row,
    rel_to,
    side_row,
    stack_warnings,
    verdict_doc,
    violation_doc,
    violations_of,
)
from accelstack.cli.programside import ProgramVerdict, program_verdict
from accelstack.cli.trust import ceiling_of, overlay_in_force
from accelstack.errors import EXIT_VERDICT, VerdictError

if TYPE_CHECKING:
    from accelstack.catalog import Catalog
    from accelstack.cost.ceiling import Ceiling
    from accelstack.plan.diffmodel import StackDiff
    from accelstack.plan.diffside import SideRow
    from accelstack.resolve import Stack
    from accelstack.stackconfig import StackRef


def _changes_against(
    base: str, ref: StackRef, head: SideRow, ceiling: Ceiling | None
) -> tuple[str, StackDiff]:
    """This stack diffed against the same stack at git ref `base` (absent there: added)."""
    import tempfile

    from accelstack.catalog import load_catalog
    from accelstack.cli.stackrefs import checkout_ref, refs_at
    from accelstack.plan.diff import stack_diff

    specs = rel_to(ref.spec.parent, ref.root)
    with tempfile.TemporaryDirectory(prefix="accelstack-against-") as tmp:
        label = checkout_ref(base, specs, Path(tmp), cwd=ref.root)
        old_ref = refs_at(Path(tmp), specs).get(ref.stack)
        old = planned_row(old_ref, load_catalog(), label, ceiling) if old_ref else None
    return label, stack_diff(ref.stack, old, head, accelerated_types(), instance_vcpus())


def _echo_changes(base: str, changes: StackDiff) -> None:
    """The change report `plan --against` prints first: rolls, stateful, inputs, counts."""
    from accelstack.plan.diff_report import change_lines

    for line in change_lines(changes, base):
        typer.echo(line)
    typer.echo("")


AgainstOpt = Annotated[
    str | None,
    typer.Option(
        "--against",
        help="git ref: first list what changes against this stack there (node rolls and "
        "stateful replacements first, before -> after values)",
    ),
]


def plan(
    spec: Annotated[Path, typer.Argument(help="spec file (stacks/NAME.yaml)")],
    fmt: Annotated[
        TextOrJson,
        typer.Option("--format", help="text (resource tree + cost report) or json (document)"),
    ] = "text",
    stack_name: StackOpt = None,
    ceiling: CeilingOpt = None,
    against: AgainstOpt = None,
) -> None:
    """Plan a spec offline: every resource, the cost report and the verdicts.

    Runs the Pulumi program under mocks, shows every resource and the cost report, then the
    deploy rules and the budget verdict (exit 1 on a violation, or when over budget or the
    organisation ceiling; exit 2 when the budget sets no limit: bad input).

    Examples:

      accelstack plan stacks/llama3-70b-trn2.yaml

      accelstack plan stacks/llama3-70b-trn2.yaml --stack prod --format json

      accelstack plan stacks/llama3-70b-trn2.yaml --against origin/main
    """
    from accelstack.cost.guard import render_report, verdict_dict
    from accelstack.stackconfig import ref_for_spec, ref_warnings

    ref = ref_for_spec(spec, stack_name)
    stack, result = plan_ref(ref)
    verdict = plan_verdict(result, stack, ceiling_for(ceiling, ref.root))
    found = violations_of(result, stack)
    warnings = stack_warnings(stack, result) + ref_warnings(ref)
    limit = ceiling_for(ceiling, ref.root)
    head = side_row(ref, (stack, result, verdict), str(spec))
    changes = _changes_against(against, ref, head, limit) if against else None
    if fmt == "json":
        doc = {**result.to_dict(), "cost": verdict_dict(verdict), "verdict": verdict_doc(verdict)}
        doc["violations"] = [violation_doc(v) for v in found]
        doc["warnings"] = warnings
        if changes is not None:
            doc["changes"] = {"base": changes[0], **changes[1].to_dict()}
        echo_json(doc)
    else:
        if changes is not None:
            _echo_changes(*changes)
        typer.echo(result.to_text(), nl=False)
        typer.echo("")
        for note in warnings:  # before the report, so the verdict stays the last line
            typer.echo(f"warning: {note}")
        typer.echo(render_report(verdict).rstrip("\n"))
        for v in found:
            typer.echo(f"violation: {v.line()}", err=True)
    if not verdict.ok:
        raise verdict.failure()
    if found:
        raise typer.Exit(EXIT_VERDICT)


def strict_errors(ref: StackRef, stack: Stack) -> list[str]:
    """What `pulumi up` refuses that an offline plan only warns about: placeholder values
    (documentation ranges, example accounts) and pools with no pinned AMI."""
    from accelstack.resolve.placeholders import stack_placeholders
    from accelstack.stackconfig import ALLOW_KEY, AMIS_KEY, awaits_pins

    out = [f"placeholder {line} (`pulumi up` refuses it)" for line in stack_placeholders(stack)]
    simulated = ref.config_file is None or awaits_pins(ref)  # planned as if pinned
    allowed = str(ref.config.get(ALLOW_KEY)).lower() == "true"
    missing = [
        p.name
        for p in stack.pools
        if p.ami_parameter and not allowed and (simulated or not p.image_id)
        if not p.allow_unpinned_ami
    ]
    if missing:
        where = ref.config_file.name if ref.config_file else f"stack {ref.stack} (no stack file)"
        out.append(
            f"{where}: no AMI pinned in {AMIS_KEY} for pool(s) {', '.join(missing)} (`pulumi up` "
            f"refuses it); run `accelstack amis pin` for stack {ref.stack}"
        )
    return out


def _check_one(
    ref: StackRef, catalog: Catalog, ceiling: Ceiling | None, strict: bool = False
) -> dict[str, Any]:
    """One stack's plan and verdict, or its error: the row `check` prints (`strict`: also
    what `pulumi up` refuses, as errors)."""
    from accelstack.cli.stackrefs import ref_label
    from accelstack.stackconfig import ref_warnings

    label = ref_label(ref)
    try:
        stack, result = plan_ref(ref, catalog)
        verdict = plan_verdict(result, stack, ceiling)
        found = [v.line() for v in violations_of(result, stack)]
        found += strict_errors(ref, stack) if strict else []
    except Exception as exc:  # one broken spec must not hide the rest
        from accelstack.spec.secrets import redact

        failure = as_failure(exc, f"check {label}")
        lines = [redact(x) for x in str(failure).splitlines()] or [type(failure).__name__]
        return {"file": label, "ok": False, "exit_code": failure.exit_code, "errors": lines}
    return {
        "file": label,
        "pulumi_stack": ref.stack,
        "stack": stack.name,
        "ok": verdict.ok and not found,
        "exit_code": verdict.exit_code or (VerdictError.exit_code if found else 0),
        "errors": ([] if verdict.ok else [verdict.one_line()]) + found,
        "violations": found,
        "resources": len(result.resources),
        "hourly_usd": round(verdict.cost.hourly_usd, 4),
        "monthly_usd": round(verdict.cost.monthly_usd, 2),
        "run_usd": round(verdict.run.run_usd, 2),
        "estimate": verdict.cost.estimate,
        "warnings": stack_warnings(stack, result) + ref_warnings(ref),
        "verdict": verdict_doc(verdict),
    }


def _echo_checked(row: dict[str, Any]) -> None:
    if "resources" in row:
        est = " (estimate)" if row["estimate"] else ""
        typer.echo(
            f"{'ok  ' if row['ok'] else 'FAIL'} {row['file']}: {row['resources']} resources, "
            f"${row['hourly_usd']:,.2f}/h, run ${row['run_usd']:,.0f}{est}"
        )
    else:
        typer.echo(f"FAIL {row['file']}")
    for note in row.get("warnings", []):
        typer.echo(f"  warning: {note}")
    for line in row["errors"]:
        typer.echo(f"  {line}", err=True)


BaseOpt = Annotated[
    str | None,
    typer.Option(
        "--base",
        help="git ref: check only the stacks whose deploy inputs changed since (spec, "
        "Pulumi.<stack>.yaml, project file, ceiling, overlay, program inputs)",
    ),
]
StrictOpt = Annotated[
    bool,
    typer.Option(
        "--strict",
        help="fail on everything `pulumi up` refuses (placeholder values, unpinned AMIs) "
        "and on program inputs no reviewer accepted",
    ),
]


def check(
    paths: Annotated[
        list[Path],
        typer.Argument(help="spec files, spec folders (stacks/) or project folders (.)"),
    ],
    fmt: FormatOpt = "text",
    stack_name: StackOpt = None,
    ceiling: CeilingOpt = None,
    base: BaseOpt = None,
    specs: Annotated[
        str, typer.Option("--specs", help="the specs' folder in a project folder")
    ] = "stacks",
    strict: StrictOpt = False,
) -> None:
    """Validate, plan and price every stack: the GitOps gate.

    With --base, only the stacks whose deploy inputs changed (spec, stack file, project file,
    ceiling, catalog overlay, program inputs) are planned, judged by the ceiling and overlay
    of the CI setting or of the base ref (never the change's own; a change to them is listed
    first). A change to the program inputs (every other committed file: the program, modules,
    requirements, lock files, the policy pack) is listed with its diff stat; the gate cannot
    plan it, so --strict fails until a reviewer accepts it (`accelstack accept`).

    Each stack is resolved as the program resolves it (the spec its Pulumi.<stack>.yaml
    points at, the stack's name prefix, region and AMI pins): hourly and run cost and
    warnings; non-zero on any failure (1 over budget, over the organisation ceiling, or a
    deploy rule; 2 bad spec, or a budget with no limit).

    Examples:

      accelstack check stacks/

      accelstack check . --base origin/main --ceiling org-ceiling.yaml

      accelstack check . --strict
    """
    from accelstack.catalog.overlay import overlay_dir
    from accelstack.cli.stackrefs import stack_refs

    refs = stack_refs(paths, stack_name, specs)
    if base is None:
        echo_overlay(overlay_dir())
        program = _program_here(refs[0].root, specs) if strict else ProgramVerdict()
        _check_rows(refs, ceiling_for(ceiling, refs[0].root), fmt, [], strict, program)
        return
    _check_since(base, refs, specs, ceiling, fmt, strict)


def _check_since(
    base: str, refs: list[StackRef], specs: str, ceiling: Path | None, fmt: str, strict: bool
) -> None:
    """`check --base`: the stacks whose deploy inputs changed, judged by the trusted gate."""
    from accelstack.cli.stackrefs import base_side

    with base_side(base, specs, refs[0].root, ceiling) as old:
        program = program_verdict(old.program, old.head_program, base)
        refs = old.changed(refs)
        if not refs:
            typer.echo(f"no stack changed since {base}")
            return
        with overlay_in_force(old.gate):  # the base ref's overlay and ceiling, not the PR's
            echo_overlay(old.gate.overlay, old.overlay_label(base))
            _check_rows(refs, ceiling_of(old.gate), fmt, old.gate_changes, strict, program)


def _program_here(root: Path, specs: str) -> ProgramVerdict:
    """Without a base: whether an acceptance file still names the checkout's program inputs."""
    from accelstack.cli.gittree import checkout_tree
    from accelstack.cli.programside import gate_data, program_side, spec_data
    from accelstack.cli.trust import head_files
    from accelstack.stackconfig import project_stacks

    data = gate_data(head_files(None, root), root) + spec_data(project_stacks(root, specs), root)
    return program_verdict(None, program_side(checkout_tree(root), root, specs, data), None)


def _check_rows(
    refs: list[StackRef],
    limit: Ceiling | None,
    fmt: str,
    gate: list[str],
    strict: bool = False,
    program: ProgramVerdict | None = None,
) -> None:
    """Plan and judge `refs`; print the rows (gate-input and program-input changes first);
    exit on a failure (`--strict`: also on program inputs no reviewer accepted)."""
    from accelstack.catalog import load_catalog

    program = program or ProgramVerdict()
    refused = program.refusal if strict else None
    catalog = load_catalog()  # a broken catalog is one line, not one per spec
    rows = [_check_one(ref, catalog, limit, strict) for ref in refs]
    passed = sum(1 for r in rows if r["ok"])
    if fmt == "json":
        doc = {"ok": passed == len(rows) and not refused, "passed": passed, "total": len(rows)}
        echo_json({"gate_changes": gate, **program.to_dict(), **doc, "stacks": rows})
    else:
        for line in gate:
            typer.echo(f"GATE INPUT: {line}")
        for line in program.lines():
            typer.echo(f"PROGRAM INPUT: {line}")
        for row in rows:
            _echo_checked(row)
        typer.echo(f"{passed} of {len(rows)} specs passed")
        if refused:
            typer.echo(f"FAIL program inputs: {refused}")
    if passed < len(rows):
        raise typer.Exit(max(r["exit_code"] for r in rows))
    if refused:
        raise typer.Exit(EXIT_VERDICT)


def register(app: typer.Typer) -> None:
    app.command()(plan)
    app.command()(check)
