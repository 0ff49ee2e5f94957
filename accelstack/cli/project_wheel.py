"""The accelstack wheel an `init` project keeps in wheels/ (its requirements.txt installs it).

No public index carries a package named accelstack, and whoever registered that name would run
code wherever a project installs it (CI with deploy credentials included). So a project
installs accelstack from a wheel file it keeps, by relative path: the running accelstack,
either repacked from its installed files (checked against the install's RECORD hashes) or, in
a source checkout, built once per process with `pip wheel --no-deps --no-index` from a copy.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import importlib.metadata as md
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from accelstack.errors import AccelstackError

#: Where an `init` project keeps the wheel (relative to the project).
WHEEL_DIR = "wheels"

#: Files a wheel's .dist-info never carries: the installer writes them (PEP 376/610/627).
_INSTALL_ONLY = frozenset({"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"})

#: A requirements.txt line that installs accelstack (a kept wheel or an index pin).
_ACCELSTACK_LINE = re.compile(
    r"^\s*(\./)?(wheels/accelstack-\S+\.whl|accelstack\s*([=<>~!\[;]|$).*)$"
)

#: Zip entries get one fixed time so a refresh of the same version is byte-identical.
_EPOCH = (1980, 1, 1, 0, 0, 0)


class WheelError(AccelstackError):
    """The running accelstack cannot be written as a wheel."""


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
    return _build_checkout(module.parent.parent)


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


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"sha256={digest.decode()}"


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
        if entry.hash is not None and _record_hash(data) != f"{entry.hash.mode}={entry.hash.value}":
            raise WheelError(
                f"{dist.locate_file(entry)}: differs from the installed accelstack's RECORD; "
                "reinstall accelstack before writing its wheel into a project"
            )
        files.append(("/".join(parts), data))
    return files


def _wheel_name(dist: md.Distribution) -> str:
    tags = [v for k, v in _wheel_fields(dist) if k == "Tag"]
    name = re.sub(r"[-_.]+", "_", dist.metadata["Name"]).lower()
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
    files = sorted(_packed_files(dist), key=lambda f: (".dist-info/" in f[0], f[0]))
    info = next((p.split("/")[0] for p, _ in files if ".dist-info/" in p), None)
    if info is None:
        raise WheelError("the installed accelstack has no .dist-info in its RECORD")
    record = [f"{path},{_record_hash(data)},{len(data)}" for path, data in files]
    files.append((f"{info}/RECORD", ("\n".join([*record, f"{info}/RECORD,,"]) + "\n").encode()))
    return _wheel_name(dist), _zip(files)


def _zip(files: list[tuple[str, bytes]]) -> bytes:
    with tempfile.TemporaryFile() as raw:
        with zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as zf:
            for path, data in files:
                # no mode bits: pip installs each file with the default mode (none executable)
                zf.writestr(zipfile.ZipInfo(path, _EPOCH), data, zipfile.ZIP_DEFLATED)
        raw.seek(0)
        return raw.read()


def _build_checkout(root: Path) -> tuple[str, bytes]:
    """Build the wheel of a source checkout from a copy (a stale build/ cannot leak in)."""
    if not (root / "pyproject.toml").is_file():
        raise WheelError(
            f"{root}: accelstack runs from neither an installed wheel nor a source checkout "
            "(no pyproject.toml); install accelstack to write its wheel into a project"
        )
    with tempfile.TemporaryDirectory(prefix="accelstack-wheel-") as tmp:
        src, out = Path(tmp) / "src", Path(tmp) / "out"
        src.mkdir()
        for top in root.iterdir():
            if top.name in ("pyproject.toml", "README.md") or top.name.startswith("LICEN"):
                shutil.copy(top, src / top.name)
        skip = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
        shutil.copytree(root / "accelstack", src / "accelstack", ignore=skip)  # links followed
        cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
        done = subprocess.run(
            [*cmd, "--no-index", "-q", "-w", str(out), str(src)],
            capture_output=True,
            text=True,
            check=False,
        )
        wheels = sorted(out.glob("accelstack-*.whl"))
        if done.returncode != 0 or len(wheels) != 1:
            last = (done.stderr.strip().splitlines() or ["no wheel written"])[-1]
            raise WheelError(f"{root}: cannot build the accelstack wheel (pip wheel: {last})")
        return wheels[0].name, wheels[0].read_bytes()


def stale_wheels(directory: Path, keep: str) -> list[Path]:
    """Other accelstack wheels in the project's wheels/ (a refresh replaces them)."""
    folder = directory / WHEEL_DIR
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("accelstack-*.whl") if p.name != keep)
