"""The Pulumi project file as Pulumi reads it, and the one rule for reading deploy inputs.

Pulumi takes the project from the first of `Pulumi.json`, `Pulumi.yaml`, `Pulumi.yml` in its
folder (pulumi/pulumi@1b5949891b3cefcb9974752b24a5ecef0acc86c8
sdk/go/common/workspace/paths.go:212-221 `findProjectInDir` tries `encoding.Exts` in order,
sdk/go/common/encoding/marshal.go:38-43: `.json`, `.yaml`, `.yml`); the gate refuses a folder
holding more than one, so the file a reviewer edits is the file Pulumi reads. A stack's config
file is `Pulumi.<stack><the project file's extension>` in the folder named by `stackConfigDir`
(paths.go:87-93); `main` moves the program (refused: the gate plans the program beside the
project file); `runtime` names the language host and its options (`virtualenv`, `toolchain`:
pip, poetry or uv, `typechecker`: mypy or pyright; sdk/python/cmd/pulumi-language-python/
main.go:233-289 `parseOptions` refuses any other value). Project-level `config:` gives every
stack defaults (`key: value`, or `key: {default: ..}` / `{value: ..}`).

Config keys are namespaced as Pulumi namespaces them (`config_key`): a key without a `:` is
the project's own (`spec:` in a project named `accelstack` is `accelstack:spec`:
sdk/go/common/workspace/loaders.go:61-89 for stack files, pkg/workspace/config.go:159-168 for
project config), and `ns:config:name` is the old spelling of `ns:name`
(sdk/go/common/resource/config/key.go:45-70).

`regular_file` is the one rule every reader of a deploy input (spec, stack file, project
file, ceiling) applies: a symbolic link, or a path through one inside the project, is refused,
so `check` never follows a committed link out of the checkout and `diff` never reads link text.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from accelstack.errors import Problem, SpecError, did_you_mean, shown

#: The project file names Pulumi looks for, in its order (see the module doc).
PROJECT_FILES = ("Pulumi.json", "Pulumi.yaml", "Pulumi.yml")
#: The Python language host's runtime options and the values it accepts
#: (sdk/python/cmd/pulumi-language-python/main.go:233-289 `parseOptions`).
TOOLCHAINS = ("pip", "poetry", "uv")
TYPECHECKERS = ("mypy", "pyright")
#: Top-level keys of a project file whose effect the gate plans: the config defaults and where
#: the stack files live. Every other setting (runtime and its options, main, plugins,
#: packages, backend, options) decides what `pulumi up` runs: a program input
#: (`ProjectFile.settings`, `accelstack.programinputs`).
PLANNED_KEYS = ("config", "stackConfigDir")


def regular_file(path: Path, root: Path | None = None) -> Path:
    """`path` when it is a regular file reached through no symbolic link below `root`; one
    line (exit 2) otherwise. A missing file is returned as is (its reader says so)."""
    folder = root.absolute() if root is not None else None
    probe = path.absolute()
    while True:
        try:
            mode = os.lstat(probe).st_mode
        except FileNotFoundError:
            mode = None
        except OSError as exc:
            raise SpecError([Problem(str(path), "", f"cannot be read: {exc.strerror}")]) from None
        if mode is not None and stat.S_ISLNK(mode):
            raise SpecError(
                [
                    Problem(
                        str(path),
                        "",
                        f"{'is' if probe == path.absolute() else f'lies under {probe.name}, which is'}"
                        " a symbolic link; allowed: a regular file inside the project (the "
                        "gate reviews the file itself, never what a link points at)",
                    )
                ]
            )
        if folder is None or probe == folder or probe.parent == probe:
            return path
        if not probe.is_relative_to(folder):
            return path
        probe = probe.parent


@dataclass(frozen=True)
class ProjectFile:
    """What the project file says about where stacks live and what they default to."""

    path: Path | None  # None: no project file
    stack_config_dir: str = ""
    main: str = ""
    defaults: dict[str, Any] = field(default_factory=dict)
    name: str = ""
    #: The python runtime's options (`virtualenv`, `toolchain`, `typechecker`), as written
    options: dict[str, str] = field(default_factory=dict)
    #: Every setting besides `PLANNED_KEYS`, as Pulumi reads it (a program input)
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def extension(self) -> str:
        return self.path.suffix if self.path is not None else ".yaml"

    def stack_folder(self, root: Path) -> Path:
        return root / self.stack_config_dir if self.stack_config_dir else root

    def raw(self) -> bytes:
        return self.path.read_bytes() if self.path is not None else b"<no project file>"


def project_files(root: Path) -> list[Path]:
    """Every project file in `root`, in Pulumi's order (a folder of that name is none)."""
    return [root / n for n in PROJECT_FILES if (root / n).is_file() or (root / n).is_symlink()]


def find_project_file(root: Path) -> Path | None:
    """The project file Pulumi would read in `root` (None when there is none)."""
    found = project_files(root)
    return found[0] if found else None


def config_key(project: str, key: object, file: str, where: str = "config") -> str:
    """`key` as Pulumi names it: `project:key` when it has no namespace, `ns:name` for the
    old `ns:config:name`; one line (exit 2) for a key Pulumi cannot parse."""
    text = str(key)
    parts = text.split(":")
    if len(parts) == 1:
        return f"{project}:{text}"
    if len(parts) == 2:
        return text
    if len(parts) == 3 and parts[1] == "config":
        return f"{parts[0]}:{parts[2]}"
    raise SpecError(
        [
            Problem(
                file,
                f"{where}.{text}",
                "is not a configuration key Pulumi can read; allowed: <namespace>:<name> "
                "(or a name alone, in the project's namespace)",
            )
        ]
    )


def namespaced(config: dict[Any, Any], project: str, file: str) -> dict[str, Any]:
    """A config mapping with every key as Pulumi names it (`config_key`); two keys naming
    the same setting (`spec` and `accelstack:spec` in project `accelstack`) are refused,
    since Pulumi would keep either."""
    out: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    for key, value in config.items():
        full = config_key(project, key, file)
        if full in out:
            raise SpecError(
                [
                    Problem(
                        file,
                        f"config.{key}",
                        f"sets {full} again (as config.{spelled[full]}); keep one",
                    )
                ]
            )
        out[full], spelled[full] = value, str(key)
    return out


def _inside(value: Any, file: str, key: str) -> str:
    """A project-relative folder/path (no '..', not absolute); one line otherwise."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise SpecError([Problem(file, key, f"must be a path, found {shown(value)}")])
    pure = PurePosixPath(value.replace("\\", "/"))
    if pure.is_absolute() or ".." in pure.parts:
        raise SpecError(
            [
                Problem(
                    file,
                    key,
                    f"is {shown(value)}; allowed: a folder inside the project (relative, no "
                    "'..'), so reviews and `accelstack diff` see what it names",
                )
            ]
        )
    return "" if str(pure) == "." else str(pure)


_DECLARATION = frozenset({"type", "default", "value", "description", "secret", "items"})


def _default(value: Any) -> tuple[bool, Any]:
    """(set?, value) of one project-level config entry: a plain value, or a declaration
    whose `value` or `default` Pulumi gives every stack."""
    if isinstance(value, dict) and set(value) <= _DECLARATION:
        for key in ("value", "default"):
            if key in value:
                return True, value[key]
        return False, None
    return True, value


def _load(path: Path) -> Any:
    text = path.read_text(encoding="utf-8-sig")  # Pulumi strips a UTF-8 BOM (loaders.go:30-49)
    return json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)


def _one_project_file(root: Path) -> Path | None:
    """The project file of `root`; several (Pulumi reads only the first) are refused."""
    found = project_files(root)
    if len(found) > 1:
        raise SpecError(
            [
                Problem(
                    str(found[1]),
                    "",
                    f"is a second project file beside {found[0].name}, which Pulumi reads "
                    f"instead (the first of {', '.join(PROJECT_FILES)}); keep one, so the file "
                    "a review sees is the file Pulumi reads",
                )
            ]
        )
    return found[0] if found else None


def _document(path: Path) -> dict[str, Any]:
    file = str(path)
    try:
        doc = _load(path) or {}
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise SpecError([Problem(file, "", f"cannot be read: {first}")]) from None
    if not isinstance(doc, dict):
        raise SpecError([Problem(file, "", "must be a mapping (name, runtime, ...)")])
    name = doc.get("name")
    if not isinstance(name, str) or not name.strip():
        raise SpecError([Problem(file, "name", f"must be the project's name, found {shown(name)}")])
    return doc


def _runtime_options(doc: dict[str, Any], file: str) -> dict[str, str]:
    """The python runtime's options, checked as the language host checks them."""
    runtime = doc.get("runtime")
    name = runtime.get("name") if isinstance(runtime, dict) else runtime
    if name != "python":
        raise SpecError(
            [
                Problem(
                    file,
                    "runtime",
                    f"is {shown(name)}; allowed: python (the accelstack program is the Python "
                    "program the gate plans)",
                )
            ]
        )
    options = (runtime.get("options") if isinstance(runtime, dict) else None) or {}
    if not isinstance(options, dict):
        raise SpecError([Problem(file, "runtime.options", "must be a mapping")])
    choices = {"toolchain": TOOLCHAINS, "typechecker": TYPECHECKERS}
    for key, value in options.items():
        allowed_values = choices.get(str(key))
        if not isinstance(value, str) or (allowed_values and value not in allowed_values):
            what = ", ".join(allowed_values) if allowed_values else "a string"
            raise SpecError(
                [
                    Problem(
                        file,
                        f"runtime.options.{key}",
                        f"is {shown(value)}; allowed: {what}"
                        + did_you_mean(value, allowed_values or ()),
                    )
                ]
            )
    return {str(k): str(v) for k, v in options.items()}


def _defaults(config: dict[Any, Any], project: str, file: str) -> dict[str, Any]:
    defaults = {}
    for key, value in namespaced(config, project, file).items():
        found, default = _default(value)
        if found:
            defaults[key] = default
    return defaults


def read_project(root: Path) -> ProjectFile:
    """The project file of `root` as Pulumi reads it; one line per problem (exit 2)."""
    path = _one_project_file(root)
    if path is None:
        return ProjectFile(None)
    file = str(path)
    regular_file(path, root)
    doc = _document(path)
    config = doc.get("config") or {}
    if isinstance(config, str):  # Pulumi's older form: the stack config folder
        config, folder = {}, doc.get("config")
    else:
        folder = doc.get("stackConfigDir")
    if not isinstance(config, dict):
        raise SpecError([Problem(file, "config", "must be a mapping of config keys")])
    main = _inside(doc.get("main"), file, "main")
    if main:
        raise SpecError(
            [
                Problem(
                    file,
                    "main",
                    f"is {shown(doc.get('main'))}; allowed: the project folder itself (the "
                    "accelstack program is the __main__.py beside the project file, the one "
                    "the gate plans)",
                )
            ]
        )
    name = str(doc["name"])
    return ProjectFile(
        path,
        _inside(folder, file, "stackConfigDir"),
        main,
        _defaults(config, name, file),
        name,
        _runtime_options(doc, file),
        {str(k): v for k, v in doc.items() if k not in PLANNED_KEYS},
    )
