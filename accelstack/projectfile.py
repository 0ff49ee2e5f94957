"""The Pulumi project file as Pulumi reads it, and the one rule for reading deploy inputs.

Pulumi takes the project from `Pulumi.yaml`, `Pulumi.yml` or `Pulumi.json` (the first found in
that order); a stack's config file is `Pulumi.<stack><same extension>` in the folder named by
`stackConfigDir` (default: the project folder); `main` moves the program; project-level
`config:` gives every stack defaults (`key: value`, or `key: {default: ..}` / `{value: ..}`).
Each of these changes what `pulumi up` deploys, so the gate reads them here
(`accelstack.stackconfig`) and fingerprints the whole file.

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

from accelstack.errors import Problem, SpecError, shown

#: The project file names Pulumi looks for, in its order.
PROJECT_FILES = ("Pulumi.yaml", "Pulumi.yml", "Pulumi.json")


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

    @property
    def extension(self) -> str:
        return self.path.suffix if self.path is not None else ".yaml"

    def stack_folder(self, root: Path) -> Path:
        return root / self.stack_config_dir if self.stack_config_dir else root

    def raw(self) -> bytes:
        return self.path.read_bytes() if self.path is not None else b"<no project file>"


def find_project_file(root: Path) -> Path | None:
    """The project file Pulumi would read in `root` (None when there is none)."""
    for name in PROJECT_FILES:
        if (root / name).is_file() or (root / name).is_symlink():
            return root / name
    return None


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
    text = path.read_text(encoding="utf-8")
    return json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)


def read_project(root: Path) -> ProjectFile:
    """The project file of `root` as Pulumi reads it; one line per problem (exit 2)."""
    path = find_project_file(root)
    if path is None:
        return ProjectFile(None)
    file = str(path)
    regular_file(path, root)
    try:
        doc = _load(path) or {}
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise SpecError([Problem(file, "", f"cannot be read: {first}")]) from None
    if not isinstance(doc, dict):
        raise SpecError([Problem(file, "", "must be a mapping (name, runtime, ...)")])
    config = doc.get("config") or {}
    if isinstance(config, str):  # Pulumi's older form: the stack config folder
        config, folder = {}, doc.get("config")
    else:
        folder = doc.get("stackConfigDir")
    if not isinstance(config, dict):
        raise SpecError([Problem(file, "config", "must be a mapping of config keys")])
    defaults = {}
    for key, value in config.items():
        found, default = _default(value)
        if found:
            defaults[str(key)] = default
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
    return ProjectFile(path, _inside(folder, file, "stackConfigDir"), main, defaults)
