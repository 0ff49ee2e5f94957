"""What `pulumi up` runs besides the specs and the stack config: the program inputs of a project.

The gate plans the specs and the stack config; it cannot plan the program (`__main__.py`), a
module or package that shadows an import, the requirements `pip install -r requirements.txt`
follows, a lock file, the policy pack or another virtualenv. So the deploy-input set is closed:
every file committed under the project folder is a program input except the data the gate reads
itself, and a change to any of them is named with its diff stat (`program_changes`), never quiet,
and fails `check --strict` until a reviewer accepts it (`ACCEPT_FILE`, docs/gitops.md).

Why every file, from Pulumi's own loader (pulumi/pulumi@1b5949891b3cefcb9974752b24a5ecef0acc86c8):
- the language host runs `runpy.run_path(<program folder>)` (sdk/python/cmd/
  pulumi-language-python-exec:188; the engine passes "." for the project folder,
  sdk/python/cmd/pulumi-language-python/main.go:1226-1227), and `run_path` of a folder puts it
  first on `sys.path` (https://docs.python.org/3/library/runpy.html#runpy.run_path): a committed
  `accelstack/`, `pulumi_aws/`, `yaml/` or `components.py` shadows the installed package;
- the pip toolchain runs `python -m pip install -r requirements.txt` in the project folder
  (sdk/python/toolchain/pip.go:543-551), in the `virtualenv` named relative to it
  (sdk/python/toolchain/toolchain.go:64-65); uv and poetry are picked by a `uv.lock` or
  `poetry.lock` found searching up from the program folder (toolchain.go:140-151);
- a `typechecker` option runs mypy or pyright over the program folder first (main.go:1107-1142).
pip follows `-r`/`-c` relative to the file that names them, `--find-links` relative to it when
that path exists (pypa/pip@6d309205789d368b2749d93fd6193d584811efd5
src/pip/_internal/req/req_file.py:360-397, 247-256) and expands `${VAR}` (req_file.py:47,
536-560): what a variable or a path outside the repository names is not in any review, so it is
listed as unseen.

Left out (data the gate reads and plans itself, or inert text): the spec files (the specs folder's
YAML and every spec a stack points at), the stack files (`Pulumi.<stack><ext>` in the stack
config folder), the project file's `config:` and `stackConfigDir` (its other settings are a
program input), the gate's own inputs (the ceiling, an in-repository catalog overlay: listed
first and enforced from the base, cli/trust.py), the acceptance file, Markdown (`*.md`) and
`.gitignore`.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from accelstack.errors import shown

if TYPE_CHECKING:
    from accelstack.projectfile import ProjectFile

#: The file a reviewer commits to accept the program inputs a change leaves (`accelstack accept`).
ACCEPT_FILE = "accelstack-accept.yaml"
#: Inert text, never read by `pulumi up` (unless a requirements file includes it: then it is in).
INERT_SUFFIXES = (".md",)
INERT_NAMES = (".gitignore",)
#: Toolchain files the language host finds searching up from the program folder.
UPWARD_FILES = ("uv.lock", "poetry.lock", "pyproject.toml", ".python-version")
#: The mode of the project file's settings (not a git file mode: a digest of the settings).
SETTINGS_MODE = "settings"
_IMPORTABLE = (".py", ".pyc", ".so", ".pyd", ".pth")
_ENV_VAR = re.compile(r"\$\{[A-Z0-9_]+\}")  # pip's ENV_VAR_RE (req_file.py:47)
_URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")


def blob_id(data: bytes) -> str:
    """Git's blob id of `data` (sha1 of `blob <size>\\0` + data), so a checkout's file and the
    same file read from a ref compare equal."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


@dataclass(frozen=True)
class Tree:
    """One side's files: repository-relative path -> git mode, the project folder in it
    (repository-relative, '' at the top), each file's blob id and its content."""

    files: Mapping[str, str]
    prefix: str
    blob: Callable[[str], str]
    read: Callable[[str], bytes | None]

    def rel(self, path: str) -> str:
        """A repository path as the project names it ('../uv.lock' above it)."""
        return posixpath.relpath(path, self.prefix or ".")

    def full(self, rel: str) -> str:
        """A project-relative path as the repository names it ('' when it leaves it)."""
        joined = posixpath.normpath(posixpath.join(self.prefix or ".", rel))
        return "" if joined == ".." or joined.startswith("../") else joined.lstrip("./")


@dataclass(frozen=True)
class Entry:
    """One program input: its project-relative path, git mode and blob id."""

    path: str
    mode: str
    blob: str


@dataclass(frozen=True)
class ProgramSet:
    """A project's program inputs, and what they name that no review can see."""

    entries: Mapping[str, Entry]
    unseen: tuple[str, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)

    def digest(self) -> str:
        """One fingerprint of the whole set (what an acceptance names)."""
        h = hashlib.sha256()
        for path in sorted(self.entries):
            e = self.entries[path]
            h.update(f"{e.path}\0{e.mode}\0{e.blob}\n".encode())
        for note in self.unseen:
            h.update(f"unseen\0{note}\n".encode())
        return f"sha256:{h.hexdigest()}"


def _excluded(rel: str, specs: str, stack_files: re.Pattern[str], data: Iterable[str]) -> bool:
    name = posixpath.basename(rel)
    if name.endswith(INERT_SUFFIXES) or name in INERT_NAMES or rel == ACCEPT_FILE:
        return True
    if posixpath.dirname(rel) == specs and name.endswith((".yaml", ".yml")):
        return True
    if stack_files.fullmatch(rel):
        return True
    return any(rel == d or (d.endswith("/") and rel.startswith(d)) for d in data)


def _stack_files(project: ProjectFile | None) -> re.Pattern[str]:
    """Where Pulumi keeps the stack files: `Pulumi.<stack><ext>` in the stack config folder."""
    if project is None or project.path is None:
        return re.compile(r"(?!)")
    folder = f"{re.escape(project.stack_config_dir)}/" if project.stack_config_dir else ""
    return re.compile(rf"{folder}Pulumi\.[^/]+{re.escape(project.extension)}")


def _settings_entry(project: ProjectFile | None) -> Entry | None:
    if project is None or project.path is None:
        return None
    text = json.dumps(project.settings, sort_keys=True, default=str).encode()
    return Entry(project.path.name, SETTINGS_MODE, blob_id(text))


def program_set(
    tree: Tree, project: ProjectFile | None, specs: str = "stacks", data: Iterable[str] = ()
) -> ProgramSet:
    """The program inputs of the project at `tree.prefix`: every file under it but the data
    (module doc; `data`: more project-relative files, or folders ending in '/', the caller
    excludes: the specs stacks point at, the ceiling, an overlay), the toolchain files above
    it, what its requirements pull in from elsewhere in the repository, and the project
    file's settings besides its config."""
    data, specs = tuple(data), posixpath.normpath(specs.replace("\\", "/")).strip("/")
    stacks = _stack_files(project)
    project_name = project.path.name if project is not None and project.path else ""
    entries: dict[str, Entry] = {}
    inside = f"{tree.prefix}/" if tree.prefix else ""
    for path, mode in tree.files.items():
        if not path.startswith(inside):
            continue
        rel = path[len(inside) :]
        if rel == project_name:
            continue
        if not _excluded(rel, specs, stacks, data):
            entries[rel] = Entry(rel, mode, tree.blob(path))
    entries.update(_upward(tree))
    found, unseen = _requirements(tree)
    entries.update({e.path: e for e in found})
    unseen += _outside_venv(project)
    settings = _settings_entry(project)
    if settings is not None:
        entries[settings.path] = settings
    return ProgramSet(entries, tuple(unseen), project.settings if project is not None else {})


def _upward(tree: Tree) -> dict[str, Entry]:
    """The toolchain files in the folders above the project, up to the repository's top."""
    out: dict[str, Entry] = {}
    folder = tree.prefix
    while folder:
        folder = posixpath.dirname(folder)
        for name in UPWARD_FILES:
            path = posixpath.join(folder, name) if folder else name
            if path in tree.files:
                rel = tree.rel(path)
                out[rel] = Entry(rel, tree.files[path], tree.blob(path))
    return out


def _outside_venv(project: ProjectFile | None) -> list[str]:
    venv = (project.options if project is not None else {}).get("virtualenv", "")
    pure = posixpath.normpath(venv.replace("\\", "/")) if venv else ""
    if pure and (posixpath.isabs(pure) or pure == ".." or pure.startswith("../")):
        return [
            f"runtime.options.virtualenv is {shown(venv)}, outside the project: the packages "
            "the program runs with there are in no review"
        ]
    return []


# ---- requirements: what `pip install -r requirements.txt` reads ------------------------------


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) with continuations joined and comments removed, as pip reads."""
    out: list[tuple[int, str]] = []
    buffer, start = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = re.sub(r"(^|\s+)#.*$", "", raw)
        if not buffer:
            start = number
        if line.endswith("\\"):
            buffer += line[:-1]
            continue
        buffer += line
        if buffer.strip():
            out.append((start, buffer.strip()))
        buffer = ""
    if buffer.strip():
        out.append((start, buffer.strip()))
    return out


_INCLUDES = {"-r": "r", "--requirement": "r", "-c": "r", "--constraint": "r"}
_PATH_OPTIONS = {
    **{"-f": "f", "--find-links": "f", "-e": "p", "--editable": "p"},
    **{"-i": "i", "--index-url": "i", "--extra-index-url": "i"},
}


def _references(line: str) -> list[tuple[str, str]]:
    """(kind, value) of what one requirements line names: 'r' a nested requirements or
    constraints file, 'f' a find-links location, 'p' a local path or URL to install, 'i' a
    package index."""
    words = line.split()
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(words):
        word, _, inline = words[i].partition("=")
        kind = _INCLUDES.get(word) or _PATH_OPTIONS.get(word)
        if kind is not None:
            value = inline or (words[i + 1] if i + 1 < len(words) else "")
            i += 1 if inline else 2
            out.append((kind, value))
            continue
        if i == 0 and not word.startswith("-"):
            value = line.split("@", 1)[1].strip().split()[0] if " @ " in line else words[0]
            out.append(("p", value))
        i += 1
    return out


def _local(value: str) -> str | None:
    """The local path a requirement value names (None: a URL, or a plain package name)."""
    if value.startswith("file:"):
        return re.sub(r"^file:(//)?", "", value)
    if _URL.match(value) or not value:
        return None
    looks_like_path = value.startswith((".", "/", "~")) or "/" in value or "\\" in value
    if looks_like_path or value.endswith((".whl", ".zip", ".tar.gz")):
        return value
    return None


@dataclass
class _Walk:
    tree: Tree
    found: dict[str, Entry] = field(default_factory=dict)
    unseen: list[str] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)

    def add(self, path: str, named_by: str) -> bool:
        """Add the repository path (a file, or every file under a folder); False when the
        repository holds neither."""
        under = [p for p in self.tree.files if p == path or p.startswith(path.rstrip("/") + "/")]
        for p in under:
            rel = self.tree.rel(p)
            self.found[rel] = Entry(rel, self.tree.files[p], self.tree.blob(p))
        if not under:
            self.unseen.append(
                f"{named_by} names {shown(path)}, which the repository does not hold"
            )
        return bool(under)

    def resolve(self, value: str, base: str, named_by: str) -> str | None:
        """The repository path `value` names, relative to repository folder `base`."""
        if _ENV_VAR.search(value) or value.startswith(("/", "~")):
            self.unseen.append(f"{named_by} names {shown(value)}: outside any review")
            return None
        joined = posixpath.normpath(posixpath.join(base or ".", value.replace("\\", "/")))
        if joined == ".." or joined.startswith("../"):
            self.unseen.append(f"{named_by} names {shown(value)}, outside the repository")
            return None
        return "" if joined == "." else joined


def _walk_file(walk: _Walk, path: str) -> None:
    """One requirements file (repository path) and the files it names, recursively."""
    if path in walk.seen:
        return
    walk.seen.add(path)
    data = walk.tree.read(path)
    if data is None:
        return
    here = posixpath.dirname(path)
    text = data.decode("utf-8", "replace")
    for number, line in _logical_lines(text):
        named_by = f"{walk.tree.rel(path)}:{number}"
        for variable in _ENV_VAR.findall(line):
            walk.unseen.append(f"{named_by} uses {variable}, set outside any review")
        for kind, value in _references(line):
            if _URL.match(value) and kind in "if":  # packages from there are in no review
                walk.unseen.append(f"{named_by} installs from {shown(value)}")
                continue
            # -r/-c/--find-links name a path (or a URL); a requirement may be a package name
            local = _local(value) if kind == "p" else (None if _URL.match(value) else value)
            if not local or _ENV_VAR.search(local):
                continue
            target = walk.resolve(local, _base_of(walk.tree, kind, local, here), named_by)
            if target is not None and walk.add(target, named_by) and kind == "r":
                _walk_file(walk, target)


def _base_of(tree: Tree, kind: str, local: str, here: str) -> str:
    """The folder a path in a requirements file is relative to: the file's own for -r/-c and
    for a --find-links path that exists there; else the project folder, where pip runs
    (pip.go:543-551)."""
    if kind == "r":
        return here
    if kind == "f":
        beside = posixpath.normpath(posixpath.join(here or ".", local))
        if any(p == beside or p.startswith(beside + "/") for p in tree.files):
            return here
    return tree.prefix


def _requirements(tree: Tree) -> tuple[list[Entry], list[str]]:
    """What `requirements.txt` (the file the pip toolchain installs) pulls in, and what it
    names that no review can see."""
    start = posixpath.join(tree.prefix, "requirements.txt") if tree.prefix else "requirements.txt"
    walk = _Walk(tree)
    if start in tree.files:
        _walk_file(walk, start)
    return list(walk.found.values()), walk.unseen


# ---- changes between two sides ---------------------------------------------------------------

ChangeKind = Literal["added", "changed", "deleted"]


@dataclass(frozen=True)
class ProgramChange:
    """One program input that differs between the sides: how, why it matters, its diff stat."""

    path: str
    change: ChangeKind
    why: str
    stat: str

    def line(self) -> str:
        return f"{self.path} {self.change} ({self.stat}): {self.why}"

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "change": self.change, "why": self.why, "stat": self.stat}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ProgramChange:
        return cls(str(d["path"]), d["change"], str(d["why"]), str(d["stat"]))


def why(path: str, project: ProjectFile | None = None) -> str:
    """What `pulumi up` does with a program input (see the module doc)."""
    top, _, rest = path.partition("/")
    name = posixpath.basename(path)
    venv = (project.options if project is not None else {}).get("virtualenv", "")
    if project is not None and project.path is not None and path == project.path.name:
        return "the project's settings besides config (runtime, toolchain, virtualenv, main)"
    if path == "__main__.py":
        return "the program `pulumi up` runs"
    if venv and (path == venv or path.startswith(venv.rstrip("/") + "/")):
        return "the virtualenv the program runs in"
    if top == "policies":
        return "the policy pack (`pulumi preview --policy-pack policies`)"
    if name in UPWARD_FILES or name.endswith(".lock"):
        return "the Python toolchain's dependencies (pip, uv or poetry)"
    if "requirements" in name or top == "wheels":
        return "what `pip install -r requirements.txt` installs"
    module = top.split(".")[0]
    if (not rest and name.endswith(_IMPORTABLE)) or (rest and path.endswith(_IMPORTABLE)):
        return (
            f"importable by the program (the project folder is first on sys.path): shadows "
            f"any installed `{module}`"
        )
    return "a file in the project folder, which `pulumi up` can read or run"


def diff_stat(before: bytes | None, after: bytes | None) -> str:
    """`+added -removed` lines, or the sizes of a binary file."""
    a, b = before or b"", after or b""
    if b"\0" in a or b"\0" in b:
        return f"binary, {len(a):,} -> {len(b):,} bytes"
    try:
        old, new = a.decode("utf-8").splitlines(), b.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        return f"binary, {len(a):,} -> {len(b):,} bytes"
    added = removed = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new).get_opcodes():
        if tag != "equal":
            removed += i2 - i1
            added += j2 - j1
    return f"+{added} -{removed}"


def program_changes(
    base: tuple[ProgramSet, Tree],
    head: tuple[ProgramSet, Tree],
    project: ProjectFile | None = None,
) -> list[ProgramChange]:
    """Every program input added, changed or deleted from base to head, in path order, with
    its diff stat; then what no review can see, when that changed."""
    (old, old_tree), (new, new_tree) = base, head
    out: list[ProgramChange] = []
    for path in sorted(old.entries.keys() | new.entries.keys()):
        a, b = old.entries.get(path), new.entries.get(path)
        if a == b:
            continue
        kind: ChangeKind = "added" if a is None else "deleted" if b is None else "changed"
        stat = _stat_of(path, a, b, (old, old_tree), (new, new_tree))
        out.append(ProgramChange(path, kind, why(path, project), stat))
    for note in sorted(set(new.unseen) - set(old.unseen)):
        out.append(ProgramChange("(unseen)", "added", note, "not in the repository"))
    return out


def _content(path: str, entry: Entry | None, side: tuple[ProgramSet, Tree]) -> bytes | None:
    program, tree = side
    if entry is None:
        return None
    if entry.mode == SETTINGS_MODE:
        return json.dumps(program.settings, sort_keys=True, indent=1, default=str).encode()
    return tree.read(tree.full(path))


def _stat_of(
    path: str,
    a: Entry | None,
    b: Entry | None,
    old: tuple[ProgramSet, Tree],
    new: tuple[ProgramSet, Tree],
) -> str:
    if (a is not None and a.mode == "120000") or (b is not None and b.mode == "120000"):
        return "a symbolic link"
    stat = diff_stat(_content(path, a, old), _content(path, b, new))
    return (
        stat if a is None or b is None or a.mode == b.mode else f"{stat}, mode {a.mode} -> {b.mode}"
    )


# ---- acceptance ------------------------------------------------------------------------------


def read_acceptance(data: bytes | None, file: str) -> str | None:
    """The fingerprint an acceptance file names (None: no file); one line when it is not one."""
    import yaml

    from accelstack.errors import Problem, SpecError

    if data is None:
        return None
    try:
        doc = yaml.safe_load(data.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError):
        doc = None
    value = doc.get("fingerprint") if isinstance(doc, dict) else None
    if not isinstance(value, str) or not re.fullmatch(r"sha256:[0-9a-f]{64}", value):
        raise SpecError(
            [
                Problem(
                    file,
                    "fingerprint",
                    f"is {shown(value)}; allowed: the sha256:... that `accelstack accept` writes",
                )
            ]
        )
    return value


def acceptance_text(program: ProgramSet, changes: list[ProgramChange], base: str | None) -> str:
    """The acceptance file `accelstack accept` writes: the fingerprint, and (for the reviewer)
    the changes it accepts."""
    lines = [
        "# The program inputs a reviewer accepted (accelstack accept; docs/gitops.md). The gate",
        "# cannot plan a change to the program, its packages or its requirements: check --strict",
        "# passes only while this names their fingerprint. Guard this file with CODEOWNERS.",
        f"fingerprint: {program.digest()}",
    ]
    if base is not None:
        lines.append(f"# accepted changes since {base}:" if changes else f"# none since {base}")
        lines += [f"#   {c.line()}" for c in changes]
    return "\n".join(lines) + "\n"
