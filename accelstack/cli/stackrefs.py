"""The stacks a command works on: from spec files, spec or project folders (as the program
resolves them, `accelstack.stackconfig`), or from a git ref written out to a folder. Shared
by `check`, `diff` and the CI examples."""

from __future__ import annotations

import contextlib
import hashlib
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from accelstack.cli.gittree import blobs, checkout_tree, git, ref_tree, tree
from accelstack.cli.programside import (
    ProgramSide,
    changes_between,
    gate_data,
    program_side,
    spec_data,
)
from accelstack.cli.trust import GateFiles, base_files, gate_changes, head_files
from accelstack.errors import Problem, SpecError
from accelstack.programinputs import ProgramChange
from accelstack.stackconfig import StackRef


def refs_of_dir(path: Path, specs: str = "stacks") -> list[StackRef]:
    """Every stack of a project folder, or of the project a `stacks/` folder belongs to (the
    stacks whose Pulumi.<stack>.yaml points into it, and its specs' own stacks)."""
    from accelstack.projectfile import find_project_file
    from accelstack.stackconfig import project_root, project_stacks

    if find_project_file(path) is not None or (path / specs).is_dir():
        return project_stacks(path.resolve(), specs)
    root = project_root(path)
    folder = path.resolve()
    specs = str(folder.relative_to(root)) if folder.is_relative_to(root) else str(path)
    return [r for r in project_stacks(root, specs) if r.spec.resolve().parent == folder]


def refs_of_file(path: Path, stack_name: str | None) -> list[StackRef]:
    """A spec file's own stack (or `--stack`), plus every stack whose config deploys it."""
    from accelstack.stackconfig import project_root, project_stacks, ref_for_spec

    own = ref_for_spec(path, stack_name)
    if stack_name:
        return [own]
    others = [
        r
        for r in project_stacks(project_root(path.parent))
        if r.config_file is not None and r.stack != own.stack and r.spec.resolve() == path.resolve()
    ]
    return [own, *others]


def stack_refs(
    paths: list[Path], stack_name: str | None = None, specs: str = "stacks"
) -> list[StackRef]:
    """The stacks to check: spec files and project or spec folders (Pulumi stack files are
    read as the stacks they configure, never as specs)."""
    refs: list[StackRef] = []
    for path in paths:
        if path.is_dir():
            found = refs_of_dir(path, specs)
            refs += [r for r in found if stack_name is None or r.stack == stack_name]
        elif path.is_file() and not path.name.startswith("Pulumi."):
            refs += refs_of_file(path, stack_name)
        elif not path.is_file():
            raise SpecError([Problem(str(path), "", "is neither a spec file nor a directory")])
    if not refs:
        raise SpecError([Problem(", ".join(map(str, paths)), "", "has no *.yaml specs")])
    return refs


def ref_label(ref: StackRef, given: Path | None = None) -> str:
    """How a row names its stack: the spec path, plus the stack when a stack file sets it."""
    shown_path = str(given) if given is not None else _rel_path(ref.spec)
    if ref.config_file is None and ref.stack == ref.spec.stem:
        return shown_path
    return f"{shown_path} [stack {ref.stack}]"


def _rel_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


#: The files a side written out from a git ref holds: the data the gate plans (specs, stack
#: files, the project file in any form, the ceiling, the catalog overlay). The program inputs
#: are read from the ref itself (`programside.program_side`).
INPUT_SUFFIXES = (".yaml", ".yml", ".json")


def _write_out(ref: str, top: str, into: Path, cwd: Path | None) -> None:
    """Every deploy-input file under `top` at `ref`, written under `into` as committed: a
    committed symbolic link becomes a link (with its committed text), so the readers refuse it
    exactly as they refuse one in a checkout (`accelstack.projectfile.regular_file`)."""
    rows = [r for r in tree(ref, f"{top}/" if top else ".", cwd) if r[2].endswith(INPUT_SUFFIXES)]
    rows = [r for r in rows if r[0] in ("100644", "100755", "120000")]
    for (mode, _, name), blob in zip(rows, blobs([r[1] for r in rows], cwd), strict=True):
        rel = Path(name).relative_to(top) if top else Path(name)
        if ".." in rel.parts or rel.is_absolute():
            continue
        target = into / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if mode == "120000":
            target.symlink_to(blob.decode("utf-8", "replace"))
        else:
            target.write_bytes(blob)


def checkout_ref(ref: str, specs: str, into: Path, cwd: Path | None = None) -> str:
    """Write the project at `ref` under `into` (every deploy input: specs, stack files where
    the project file keeps them, the project file, ceiling and overlay files). Returns the
    side's label."""
    sha = git("rev-parse", "--verify", "--quiet", "--short", f"{ref}^{{commit}}", cwd=cwd)
    if sha.returncode != 0:
        raise SpecError([Problem(ref, "", "is not a git ref here (folders: diff --dirs)")])
    top = git("rev-parse", "--show-prefix", cwd=cwd).stdout.strip().rstrip("/")
    into.mkdir(parents=True, exist_ok=True)
    _write_out(ref, top, into, cwd)
    short = sha.stdout.strip()
    full_sha = len(ref) == 40 and all(c in "0123456789abcdef" for c in ref)
    return short if full_sha else f"{ref} ({short})"


def refs_at(root: Path, specs: str) -> dict[str, StackRef]:
    from accelstack.stackconfig import project_stacks

    return {r.stack: r for r in project_stacks(root, specs)}


def side(
    side: str, specs: str, into: Path, dirs: bool = False
) -> tuple[str, dict[str, StackRef], Path]:
    """(label, {stack: ref}, project root) of one side: a git ref written out, or (`dirs`, the
    explicit `--dirs`) a folder. A folder named like a ref never stands in for the ref."""
    if dirs:
        path = Path(side)
        if not path.is_dir():
            raise SpecError(
                [Problem(side, "", "is not a directory (diff --dirs compares folders)")]
            )
        refs = refs_of_dir(path)
        return side, {r.stack: r for r in refs}, refs[0].root if refs else path
    label = checkout_ref(side, specs, into)
    return label, refs_at(into, specs), into


@dataclass
class BaseSide:
    """The project at a base ref, written out, the gate inputs trusted from it, and both
    sides' program inputs (the base ref's, the checkout's)."""

    label: str
    refs: dict[str, StackRef]
    gate: GateFiles  # what the gate enforces: the CI setting, else the base ref's
    head_gate: GateFiles  # the checkout's own (the change under review)
    program: ProgramSide  # the base ref's program inputs
    head_program: ProgramSide  # the checkout's

    @property
    def program_changes(self) -> list[ProgramChange]:
        """The program inputs the change adds, edits or deletes (it cannot plan them)."""
        return changes_between(self.program, self.head_program)

    def overlay_label(self, base: str) -> str | None:
        """How to name the overlay the gate judges by when it is the base ref's copy of the
        checkout's overlay folder (None: the folder itself, a CI setting outside it)."""
        head = self.head_gate.overlay
        if head is None or self.gate.overlay == head:
            return None
        return f"{head} as committed at {base}"

    @property
    def gate_changes(self) -> list[str]:
        return gate_changes(self.gate, self.head_gate)

    def changed(self, refs: list[StackRef]) -> list[StackRef]:
        """The stacks of `refs` whose deploy inputs differ here (or that are new)."""
        base, head = self.program.digest, self.head_program.digest
        old = {n: deploy_fingerprint(r, self.gate, base) for n, r in self.refs.items()}
        return [r for r in refs if old.get(r.stack) != deploy_fingerprint(r, self.head_gate, head)]


def deploy_fingerprint(ref: StackRef, gate: GateFiles, program: str = "") -> str:
    """One fingerprint of everything that decides a stack's deploy and its verdict: the
    stack's own inputs (`StackRef.fingerprint`: spec, stack file, project file, config), the
    gate's (the ceiling and the catalog overlay) and the project's program inputs (their
    digest, `accelstack.programinputs`: every other file `pulumi up` can read or run)."""
    text = f"{ref.fingerprint()}:{gate.digest()}:{program}"
    return hashlib.sha256(text.encode()).hexdigest()


@contextlib.contextmanager
def base_side(base: str, specs: str, cwd: Path, ceiling: Path | None = None) -> Iterator[BaseSide]:
    """The base ref's project and trusted gate inputs, and both sides' program inputs,
    alive for the `with` block (`cwd`: the checkout's project folder)."""
    from accelstack.stackconfig import project_stacks

    with tempfile.TemporaryDirectory(prefix="accelstack-base-") as tmp:
        label = checkout_ref(base, specs, Path(tmp, "tree"), cwd=cwd)
        head = head_files(ceiling, cwd)
        trusted = base_files(head, base, cwd, Path(tmp, "trusted"))
        refs = refs_at(Path(tmp, "tree"), specs)
        own = gate_data(head, cwd) + spec_data(project_stacks(cwd, specs), cwd)
        data = own + spec_data(refs.values(), Path(tmp, "tree"))
        old = program_side(ref_tree(base, cwd), Path(tmp, "tree"), specs, data)
        new = program_side(checkout_tree(cwd), cwd, specs, data, own)
        yield BaseSide(label, refs, trusted, head, old, new)


def changed_since(
    refs: list[StackRef], base: str, specs: str = "stacks", ceiling: Path | None = None
) -> list[StackRef]:
    """The stacks of `refs` whose deploy inputs (`deploy_fingerprint`) differ at git ref
    `base` (or are new there): what `stacks --base`, `check --base` and the CI examples use."""
    if not refs:
        return []
    with base_side(base, specs, refs[0].root, ceiling) as old:
        return old.changed(refs)
