"""Build the wheel from a copy of the sources.

An in-tree `pip wheel` reuses the checkout's build/lib, so a file deleted from the sources
could still ship; building from a fresh copy (links kept: accelstack/components, templates,
presets, policypack and ci are links) tests exactly what is checked in."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def source_copy(work: Path) -> Path:
    """The package sources (what pyproject.toml builds from) copied to `work`/src."""
    src = work / "src"
    src.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in ("accelstack", "components", "templates", "stacks", "policies", "examples"):
        shutil.copytree(ROOT / name, src / name, symlinks=True, ignore=skip)
    return src


def build_wheel(work: Path) -> Path:
    """Copy the package sources under `work`/src and build the wheel into `work` (setuptools
    of the test environment, no build isolation)."""
    src = source_copy(work)
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    subprocess.run(
        [*pip_wheel, "-q", "-w", str(work), str(src)],
        check=True,
        capture_output=True,
    )
    (wheel,) = work.glob("accelstack-*.whl")
    return wheel


def build_editable(src: Path, out: Path) -> Path:
    """The PEP 660 editable wheel of the checkout `src`, as `pip install -e` builds it in its
    isolated build environment (here: the test environment's setuptools, no network)."""
    out.mkdir(parents=True, exist_ok=True)
    code = "import sys; from setuptools import build_meta as b; b.build_editable(sys.argv[1])"
    subprocess.run([sys.executable, "-c", code, str(out)], cwd=src, check=True, capture_output=True)
    (wheel,) = out.glob("accelstack-*.editable-*.whl")
    return wheel
