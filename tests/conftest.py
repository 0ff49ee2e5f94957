"""Shared fixtures. Topic-specific helpers live in tests/helpers_*.py, not here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from accelstack.catalog import Catalog, load_catalog

ROOT = Path(__file__).resolve().parents[1]
STACKS = ROOT / "stacks"
PRESETS = sorted(STACKS.glob("*.yaml"))
UPDATE_GOLDEN = os.environ.get("ACCELSTACK_UPDATE_GOLDEN") == "1"

# Tests never reach AWS: no credentials from the developer's machine, a fake region default.
for var in ("AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
    os.environ.pop(var, None)
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
# The bundled catalog only: a developer's catalog overlay must not change what tests see.
os.environ.pop("ACCELSTACK_CATALOG_DIR", None)
# Facts that change with time (EKS support windows) are judged on a pinned date, so golden
# files do not drift; tests that need another date set ACCELSTACK_TODAY themselves.
os.environ["ACCELSTACK_TODAY"] = "2026-11-22"


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return load_catalog()


def preset_ids() -> list[str]:
    return [p.stem for p in PRESETS]


def compare_golden(actual: str, golden: Path) -> None:
    """Compare text with a golden file; ACCELSTACK_UPDATE_GOLDEN=1 rewrites it instead."""
    if UPDATE_GOLDEN or not golden.exists():
        if not UPDATE_GOLDEN and os.environ.get("CI"):
            pytest.fail(f"golden file {golden} is missing; run `make golden` and commit it")
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(actual)
        return
    expected = golden.read_text()
    if actual != expected:
        import difflib

        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(True), actual.splitlines(True), str(golden), "actual", n=2
            )
        )
        pytest.fail(f"{golden} differs (run `make golden` if intended):\n{diff[:6000]}")
