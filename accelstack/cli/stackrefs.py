"""The stacks a command works on: from spec files, spec or project folders (as the program
resolves them, `accelstack.stackconfig`), or from a git ref written out to a folder. Shared
by `check`, `diff` and the CI examples."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from accelstack.errors import Problem, SpecError
from accelstack.stackconfig import SPEC_KEY, StackRef


def refs_of_dir(path: Path, specs: str = "stacks") -> list[StackRef]:
    """Every stack of a project folder, or of the project a `stacks/` folder belongs to (the
    stacks whose Pulumi.<stack>.yaml points into it, and its specs' own stacks)."""
    from accelstack.stackconfig import project_root, project_stacks

    if (path / "Pulumi.yaml").is_file() or (path / specs).is_dir():
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


def _git(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=False, cwd=cwd)


def _show(ref: str, name: str, target: Path, cwd: Path | None) -> bool:
    """Write the blob `ref:name` (a repository path) to `target`; False when it is not there."""
    blob = subprocess.run(
        ["git", "show", f"{ref}:{name}"], capture_output=True, check=False, cwd=cwd
    )
    if blob.returncode != 0:
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(blob.stdout)
    return True


def _tracked(ref: str, folder: str, cwd: Path | None) -> list[str]:
    """Repository paths of the files directly in `folder` at `ref` (non-recursive)."""
    listed = _git("ls-tree", "--name-only", "--full-name", ref, "--", f"{folder}/", cwd=cwd)
    return listed.stdout.splitlines()


def _pointers(root: Path) -> list[str]:
    """The spec paths the stack files under `root` name (so they are fetched too)."""
    import yaml

    out = []
    for f in root.glob("Pulumi.*.yaml"):
        try:
            config = (yaml.safe_load(f.read_text(encoding="utf-8")) or {}).get("config") or {}
        except (yaml.YAMLError, AttributeError):
            continue  # the stack file's own problem is reported when its stack is read
        pointer = config.get(SPEC_KEY) if isinstance(config, dict) else None
        if isinstance(pointer, str):
            out.append(pointer)
    return out


def _from_ref(ref: str, specs: str, into: Path, cwd: Path | None = None) -> str:
    """Write the project at `ref` under `into`: its stack files, the specs of `specs`, and any
    spec a stack file points at elsewhere. Returns the side's label."""
    sha = _git("rev-parse", "--verify", "--quiet", "--short", f"{ref}^{{commit}}", cwd=cwd)
    if sha.returncode != 0:
        raise SpecError([Problem(ref, "", "is neither a directory of specs nor a git ref here")])
    top = _git("rev-parse", "--show-prefix", cwd=cwd).stdout.strip().rstrip("/")
    into.mkdir(parents=True, exist_ok=True)
    for folder in (top or ".", str(Path(top, specs)) if top else specs):
        for name in _tracked(ref, folder, cwd):
            base = Path(name).name
            if base.endswith((".yaml", ".yml")):
                rel = Path(name).relative_to(top) if top else Path(name)
                _show(ref, name, into / rel, cwd)
    for pointer in _pointers(into):
        target = into / pointer
        if not target.exists() and ".." not in Path(pointer).parts:
            _show(ref, str(Path(top, pointer)) if top else pointer, target, cwd)
    short = sha.stdout.strip()
    full_sha = len(ref) == 40 and all(c in "0123456789abcdef" for c in ref)
    return short if full_sha else f"{ref} ({short})"


def _refs_at(root: Path, specs: str) -> dict[str, StackRef]:
    from accelstack.stackconfig import project_stacks

    return {r.stack: r for r in project_stacks(root, specs)}


def side(side: str, specs: str, into: Path) -> tuple[str, dict[str, StackRef], Path]:
    """(label, {stack: ref}, project root) of one side: a folder, or a git ref written out."""
    path = Path(side)
    if path.is_dir():
        refs = refs_of_dir(path)
        return side, {r.stack: r for r in refs}, refs[0].root if refs else path
    label = _from_ref(side, specs, into)
    return label, _refs_at(into, specs), into


def changed_since(refs: list[StackRef], base: str, specs: str = "stacks") -> list[StackRef]:
    """The stacks of `refs` whose spec or stack config differs at git ref `base` (or is new
    there): what `check --base` and the CI examples check."""
    if not refs:
        return []
    root = refs[0].root
    with tempfile.TemporaryDirectory(prefix="accelstack-base-") as tmp:
        _from_ref(base, specs, Path(tmp), cwd=root)
        old = {r.stack: r.fingerprint() for r in _refs_at(Path(tmp), specs).values()}
    return [r for r in refs if old.get(r.stack) != r.fingerprint()]
