"""The accelstack wheel an `init` project keeps in wheels/ (its requirements.txt installs it).

No public index carries a package named accelstack, and whoever registered that name would run
code wherever a project installs it (CI with deploy credentials included). So a project
installs accelstack from a wheel file it keeps, by relative path: the running accelstack,
either repacked from its installed files (checked against the install's RECORD hashes: a wheel
or `git+file` install) or, when it runs from a source checkout (an editable install, a checkout
on the path), assembled from the checkout's files (`accelstack.cli.wheelfile`: no pip, no
setuptools, no network, so a runtime-only virtualenv such as `make demo`'s works too).
"""

from __future__ import annotations

import functools
import importlib.metadata as md
import re
from pathlib import Path

from accelstack.cli.wheelfile import (
    WheelError,
    archive,
    checkout_wheel,
    normalized_name,
    record_hash,
)

#: Where an `init` project keeps the wheel (relative to the project).
WHEEL_DIR = "wheels"

#: Files a wheel's .dist-info never carries: the installer writes them (PEP 376/610/627).
_INSTALL_ONLY = frozenset({"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"})

#: A requirements.txt line that installs accelstack (a kept wheel or an index pin).
_ACCELSTACK_LINE = re.compile(
    r"^\s*(\./)?(wheels/accelstack-\S+\.whl|accelstack\s*([=<>~!\[;]|$).*)$"
)


def requirement_line(wheel_name: str) -> str:
    """The requirements.txt line for the kept wheel (pip resolves it from the project dir)."""
    return f"./{WHEEL_DIR}/{wheel_name}"


def requirements_with(text: str, wheel_name: str) -> str:
    """`text` with its accelstack line pointing at the kept wheel (appended if it had none)."""
    line = requirement_line(wheel_name)
    out: list[str] = []
    for old in text.splitlines():
        if _ACCELSTACK_LINE.match(old):
            if line not in out:
                out.append(line)
            continue
        out.append(old)
    if line not in out:
        out.append(line)
    return "\n".join(out) + "\n"


@functools.cache
def running_wheel() -> tuple[str, bytes]:
    """(file name, bytes) of the running accelstack as a wheel; computed once per process."""
    import accelstack

    module = Path(accelstack.__file__).resolve()
    dist = _installed_distribution(module)
    if dist is not None:
        return _repack(dist)
    root = module.parent.parent
    if not (root / "pyproject.toml").is_file():
        raise WheelError(
            f"{module.parent}: accelstack runs from neither an installed wheel nor a source "
            "checkout (no pyproject.toml beside it); install accelstack with pip (a wheel, a "
            "checkout or git+file) to write its wheel into a project"
        )
    return checkout_wheel(root)


def _installed_distribution(module: Path) -> md.Distribution | None:
    """The installed distribution whose own files hold the imported package, else None
    (an editable install or a checkout on the path: its RECORD lists no package files). Only an
    installed .dist-info counts: a checkout's `accelstack.egg-info` (left by `pip install -e`,
    found first when the checkout is the working directory) lists its sources, not a RECORD."""
    for dist in md.distributions(name="accelstack"):
        if not dist.read_text("RECORD"):
            continue
        own = [e for e in dist.files or [] if e.parts == ("accelstack", "__init__.py")]
        if own and Path(str(dist.locate_file(own[0]))).resolve() == module:
            return dist
    return None


def _packed_files(dist: md.Distribution) -> list[tuple[str, bytes]]:
    """(archive path, bytes) of every installed file the wheel carried, RECORD-checked."""
    files: list[tuple[str, bytes]] = []
    for entry in dist.files or []:
        parts = entry.parts
        if parts[0] in ("..", "/") or "__pycache__" in parts or entry.suffix == ".pyc":
            continue  # console scripts (regenerated from entry_points.txt) and byte code
        if parts[0].endswith(".dist-info") and parts[-1] in _INSTALL_ONLY:
            continue
        data = Path(str(dist.locate_file(entry))).read_bytes()
        if entry.hash is not None and record_hash(data) != f"{entry.hash.mode}={entry.hash.value}":
            raise WheelError(
                f"{dist.locate_file(entry)}: differs from the installed accelstack's RECORD; "
                "reinstall accelstack before writing its wheel into a project"
            )
        files.append(("/".join(parts), data))
    return files


def _wheel_name(dist: md.Distribution) -> str:
    tags = [v for k, v in _wheel_fields(dist) if k == "Tag"]
    name = normalized_name(dist.metadata["Name"])
    return f"{name}-{dist.version}-{tags[0] if tags else 'py3-none-any'}.whl"


def _wheel_fields(dist: md.Distribution) -> list[tuple[str, str]]:
    text = dist.read_text("WHEEL") or ""
    return [
        (k.strip(), v.strip())
        for k, _, v in (line.partition(":") for line in text.splitlines())
        if v
    ]


def _repack(dist: md.Distribution) -> tuple[str, bytes]:
    """The installed files as a wheel again: the package, then .dist-info with a new RECORD."""
    files = _packed_files(dist)
    info = next((p.split("/")[0] for p, _ in files if ".dist-info/" in p), None)
    if info is None:
        raise WheelError("the installed accelstack has no .dist-info in its RECORD")
    return _wheel_name(dist), archive(files, info)


def stale_wheels(directory: Path, keep: str) -> list[Path]:
    """Other accelstack wheels in the project's wheels/ (a refresh replaces them)."""
    folder = directory / WHEEL_DIR
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("accelstack-*.whl") if p.name != keep)
