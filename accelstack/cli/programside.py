"""One side's program inputs (`accelstack.programinputs`): read from a git ref, a checkout or a
folder, with the data the gate reads itself left out (the specs the side's stacks deploy, its
stack files, the gate's own ceiling and overlay); what changed between two sides, and whether
a reviewer accepted it (`accelstack-accept.yaml`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from accelstack.programinputs import (
    ACCEPT_FILE,
    ProgramChange,
    ProgramSet,
    Tree,
    program_changes,
    program_set,
    read_acceptance,
)

if TYPE_CHECKING:
    from accelstack.cli.trust import GateFiles
    from accelstack.projectfile import ProjectFile
    from accelstack.stackconfig import StackRef


@dataclass(frozen=True)
class ProgramSide:
    """A side's program inputs, the files they were read from, and its project file."""

    program: ProgramSet  # compared with the other side (the data of both left out)
    tree: Tree
    project: ProjectFile
    own: str  # the digest of this side's inputs alone (what an acceptance names)

    @property
    def digest(self) -> str:
        return self.program.digest()

    def acceptance(self) -> str | None:
        """The fingerprint this side's acceptance file names (None: it has none)."""
        path = self.tree.full(ACCEPT_FILE)
        return read_acceptance(self.tree.read(path) if path else None, ACCEPT_FILE)

    def accepted(self) -> bool:
        """The acceptance file names exactly this side's program inputs."""
        return self.acceptance() == self.own


def _inside(path: Path | None, root: Path) -> str | None:
    if path is None:
        return None
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None


def gate_data(gate: GateFiles | None, root: Path) -> list[str]:
    """The gate's own inputs inside the project (its ceiling file, an overlay folder, the
    usage file): left out of the program inputs, since the gate lists their changes first
    and enforces the ceiling and overlay from the base (cli/trust.py) and prices each side's
    usage file itself (cli/usagefile.py), which the program never reads."""
    if gate is None:
        return []
    from accelstack.cli.usagefile import usage_data

    ceiling, overlay = _inside(gate.ceiling, root), _inside(gate.overlay, root)
    return [x for x in (ceiling, f"{overlay}/" if overlay else None) if x] + usage_data(root)


def spec_data(refs: Iterable[StackRef], root: Path) -> list[str]:
    """The spec files `refs` deploy, relative to the project folder `root`."""
    return [p for p in (_inside(r.spec, root) for r in refs) if p]


def program_side(
    tree: Tree, root: Path, specs: str, data: Iterable[str] = (), own: Iterable[str] | None = None
) -> ProgramSide:
    """The program inputs of the project at `root` (read from `tree`), with `data` left out:
    the specs the stacks of EITHER side deploy (`spec_data`: a spec is data on both sides,
    even where no stack points at it yet) and the gate's own files (`gate_data` of the
    checkout), so both sides leave out the same paths. `own`: the data of this side alone
    (its own stacks' specs and the gate's files), for the digest an acceptance names, so
    `accelstack accept` and `check` agree whatever the base."""
    from accelstack.projectfile import read_project

    project = read_project(root)
    program = program_set(tree, project, specs, data)
    alone = program if own is None else program_set(tree, project, specs, own)
    return ProgramSide(program, tree, project, alone.digest())


def changes_between(old: ProgramSide, new: ProgramSide) -> list[ProgramChange]:
    """The program inputs the change adds, edits or deletes, each with its diff stat."""
    return program_changes((old.program, old.tree), (new.program, new.tree), new.project)


@dataclass(frozen=True)
class ProgramVerdict:
    """What `check` says of the program inputs: the changes since the base (none without
    one), whether the head accepts them, and the line `--strict` fails on (None: nothing)."""

    changes: tuple[ProgramChange, ...] = ()
    accepted: bool | None = None
    refusal: str | None = None

    def lines(self) -> list[str]:
        """One line per change, as `check` prints them (credential-looking text redacted)."""
        from accelstack.spec.secrets import redact

        return [redact(c.line()) for c in self.changes]

    def to_dict(self) -> dict[str, object]:
        from accelstack.spec.secrets import redact

        return {
            "program_changes": [
                {k: redact(v) for k, v in c.to_dict().items()} for c in self.changes
            ],
            "program_accepted": self.accepted,
            "program_refused": self.refusal,
        }


def program_verdict(old: ProgramSide | None, new: ProgramSide, base: str | None) -> ProgramVerdict:
    """The program inputs' verdict for `check`: with a base, each change since it, accepted
    only when the head's acceptance file names exactly the head's inputs; without one, an
    acceptance file that no longer names them (they changed since)."""
    named = new.acceptance()
    if old is None:
        if named is None or named == new.own:
            return ProgramVerdict()
        return ProgramVerdict(
            accepted=False,
            refusal=f"{ACCEPT_FILE} names {named}, but the program inputs are now {new.own}: "
            "they changed after they were accepted; a reviewer runs `accelstack accept` again",
        )
    changes = tuple(changes_between(old, new))
    if not changes:
        return ProgramVerdict()
    accepted = named == new.own
    refusal = (
        None
        if accepted
        else f"{len(changes)} program input(s) changed since {base} and are not accepted "
        "(the gate cannot plan them): a reviewer runs `accelstack accept . --base "
        f"{base}` and commits {ACCEPT_FILE}"
    )
    return ProgramVerdict(changes, accepted, refusal)
