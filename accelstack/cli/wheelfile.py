"""Wheel files written by accelstack itself, with no build tool: the running accelstack as the
wheel an `init` project keeps (`accelstack.cli.project_wheel`), whether it runs from an installed
wheel (repacked from its files) or from a source checkout (an editable install, a checkout on
the path: assembled from the checkout's files as its pyproject.toml declares them).

No pip and no setuptools: `make demo` builds a runtime-only virtualenv (Python 3.11's
`python -m venv` carries setuptools 65.5), and pyproject.toml's `license = "Apache-2.0"` needs
setuptools>=77 (PEP 639 license expressions), so a build through the installed setuptools
fails there, and a build with isolation needs the network. The wheel format is small and
fixed (PEP 427: https://packaging.python.org/en/latest/specifications/binary-distribution-format/;
core metadata 2.4: https://packaging.python.org/en/latest/specifications/core-metadata/;
pyproject.toml's [project] table: https://packaging.python.org/en/latest/specifications/pyproject-toml/),
and tests/cli/test_wheelfile.py holds the result to what setuptools builds from the same
checkout, file for file and field for field.
"""

from __future__ import annotations

import base64
import hashlib
import re
import tempfile
import tomllib
import zipfile
from collections.abc import Iterator
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from accelstack.errors import AccelstackError

#: Zip entries get one fixed time so the same version gives the same bytes.
_EPOCH = (1980, 1, 1, 0, 0, 0)

#: The [project] keys the checkout build writes into METADATA (anything else is refused, so a
#: pyproject.toml change this module does not carry fails loudly, not as a thinner wheel).
_PROJECT_KEYS = frozenset(
    {
        "name",
        "version",
        "description",
        "readme",
        "requires-python",
        "license",
        "dependencies",
        "optional-dependencies",
        "scripts",
    }
)


class WheelError(AccelstackError):
    """The running accelstack cannot be written as a wheel."""


def record_hash(data: bytes) -> str:
    """A RECORD hash (PEP 376 / the wheel spec: urlsafe base64 sha256, no padding)."""
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"sha256={digest.decode()}"


def archive(files: list[tuple[str, bytes]], info: str) -> bytes:
    """The wheel's bytes: `files` (archive path, bytes), the package first, then `info`
    (the .dist-info folder) with a RECORD of them all."""
    ordered = sorted(files, key=lambda f: (f[0].startswith(f"{info}/"), f[0]))
    record = [f"{path},{record_hash(data)},{len(data)}" for path, data in ordered]
    ordered.append((f"{info}/RECORD", ("\n".join([*record, f"{info}/RECORD,,"]) + "\n").encode()))
    with tempfile.TemporaryFile() as raw:
        with zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as zf:
            for path, data in ordered:
                # no mode bits: pip installs each file with the default mode (none executable)
                zf.writestr(zipfile.ZipInfo(path, _EPOCH), data, zipfile.ZIP_DEFLATED)
        raw.seek(0)
        return raw.read()


def normalized_name(name: str) -> str:
    """A distribution name as wheel file names and .dist-info folders spell it."""
    return re.sub(r"[-_.]+", "_", name).lower()


def checkout_wheel(root: Path) -> tuple[str, bytes]:
    """(file name, bytes) of the pure-Python wheel of the checkout at `root`."""
    pyproject = root / "pyproject.toml"
    try:
        doc = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise WheelError(f"{pyproject}: cannot read it ({exc})") from None
    project: dict[str, Any] = doc.get("project") or {}
    unknown = sorted(set(project) - _PROJECT_KEYS)
    if unknown or (root / "MANIFEST.in").exists():
        what = f"[project] {', '.join(unknown)}" if unknown else "MANIFEST.in"
        raise WheelError(
            f"{root}: the checkout declares {what}, which accelstack's own wheel writer does "
            "not carry; install accelstack (pip install .) and write the wheel from there"
        )
    setuptools = doc.get("tool", {}).get("setuptools", {})
    name, version = normalized_name(project["name"]), str(project["version"])
    info = f"{name}-{version}.dist-info"
    files = list(_package_files(root, setuptools))
    files += [
        (f"{info}/METADATA", metadata(project, root).encode()),
        (f"{info}/WHEEL", _wheel_text().encode()),
        (f"{info}/top_level.txt", "".join(f"{t}\n" for t in _top_levels(files)).encode()),
    ]
    scripts = project.get("scripts") or {}
    if scripts:
        lines = "".join(f"{k} = {v}\n" for k, v in sorted(scripts.items()))
        files.append((f"{info}/entry_points.txt", f"[console_scripts]\n{lines}".encode()))
    return f"{name}-{version}-py3-none-any.whl", archive(files, info)


def _wheel_text() -> str:
    from accelstack import __version__

    return (
        "Wheel-Version: 1.0\n"
        f"Generator: accelstack ({__version__})\n"
        "Root-Is-Purelib: true\n"
        "Tag: py3-none-any\n\n"
    )


def _top_levels(files: list[tuple[str, bytes]]) -> list[str]:
    return sorted({path.split("/")[0] for path, _ in files})


def metadata(project: dict[str, Any], root: Path) -> str:
    """Core metadata 2.4 of the [project] table (its readme as the long description)."""
    head = [
        "Metadata-Version: 2.4",
        f"Name: {project['name']}",
        f"Version: {project['version']}",
    ]
    if project.get("description"):
        head.append(f"Summary: {project['description']}")
    head += _license(project.get("license"))
    if project.get("requires-python"):
        head.append(f"Requires-Python: {project['requires-python']}")
    readme = project.get("readme")
    body = ""
    if readme:
        if not isinstance(readme, str) or not readme.endswith(".md"):
            raise WheelError(f"{root}: readme {readme!r}: only a markdown file name is carried")
        head.append("Description-Content-Type: text/markdown")
        body = (root / readme).read_text(encoding="utf-8")
    head += [f"Requires-Dist: {_requirement(r)}" for r in project.get("dependencies") or []]
    for extra, reqs in (project.get("optional-dependencies") or {}).items():
        head.append(f"Provides-Extra: {extra}")
        head += [f'Requires-Dist: {_requirement(r)}; extra == "{extra}"' for r in reqs]
    return "\n".join(head) + "\n\n" + body


def _license(value: object) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, str):  # the PEP 621 table form
        raise WheelError("pyproject.toml: license must be an SPDX expression string")
    return [f"License-Expression: {value}"]


def _requirement(text: str) -> str:
    """A requirement without spaces around its operators (a marker keeps its own)."""
    spec, sep, marker = text.partition(";")
    return re.sub(r"\s+", "", spec) + (f"; {marker.strip()}" if sep else "")


def _package_files(root: Path, setuptools: dict[str, Any]) -> Iterator[tuple[str, bytes]]:
    """(archive path, bytes) of every module and package-data file, as setuptools' `find`
    (a package is a folder with __init__.py whose dotted name matches `include`; links
    followed) and `package-data` (globs per package) select them."""
    include = setuptools.get("packages", {}).get("find", {}).get("include") or ["*"]
    data: dict[str, list[str]] = setuptools.get("package-data") or {}
    for package in _packages(root, include):
        folder = root.joinpath(*package.split("."))
        prefix = package.replace(".", "/")
        chosen = {p for p in folder.glob("*.py") if p.is_file()}
        for pattern in data.get(package, []):
            chosen |= {p for p in folder.glob(pattern) if p.is_file()}
        for path in sorted(chosen):
            rel = path.relative_to(folder).as_posix()
            yield f"{prefix}/{rel}", path.read_bytes()


def _packages(root: Path, include: list[str]) -> list[str]:
    found: list[str] = []
    todo = [p for p in sorted(root.iterdir()) if p.is_dir()]
    while todo:
        folder = todo.pop()
        if "." in folder.name or not (folder / "__init__.py").is_file():
            continue
        dotted = ".".join(folder.relative_to(root).parts)
        if any(fnmatchcase(dotted, pat) for pat in include):
            found.append(dotted)
        todo += [p for p in sorted(folder.iterdir()) if p.is_dir() and p.name != "__pycache__"]
    return sorted(found)
