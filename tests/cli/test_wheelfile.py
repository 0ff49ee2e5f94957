"""accelstack writes its own wheel from a source checkout, without pip or setuptools
(accelstack/cli/wheelfile.py): the same files and metadata as setuptools builds from the same
checkout, the same bytes every time, a RECORD that matches, and one line for a checkout it
cannot carry."""

from __future__ import annotations

import email
import io
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from accelstack.cli.wheelfile import WheelError, checkout_wheel, record_hash

from ..conftest import ROOT
from ..helpers_wheel import build_wheel, source_copy


def _files(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def _fields(metadata: bytes) -> dict[str, object]:
    """METADATA's fields, requirements compared as packaging reads them (setuptools writes
    `pydantic<3,>=2.7` for pyproject's `pydantic>=2.7,<3`)."""
    msg = email.message_from_bytes(metadata)
    fields: dict[str, object] = {k: sorted(msg.get_all(k) or []) for k in set(msg.keys())}
    fields["Requires-Dist"] = sorted(str(Requirement(r)) for r in msg.get_all("Requires-Dist"))
    fields["body"] = msg.get_payload()
    return fields


@pytest.mark.slow  # builds the wheel with setuptools (pip wheel in a subprocess)
def test_the_checkout_wheel_carries_what_setuptools_builds(tmp_path: Path) -> None:
    built = build_wheel(tmp_path)
    name, data = checkout_wheel(tmp_path / "src")
    assert name == built.name
    ours, theirs = _files(data), _files(built.read_bytes())
    info = name.split("-py3")[0] + ".dist-info"
    package = {n for n in theirs if not n.startswith(info)}
    assert {n for n in ours if not n.startswith(info)} == package
    assert all(ours[n] == theirs[n] for n in package)
    assert _fields(ours[f"{info}/METADATA"]) == _fields(theirs[f"{info}/METADATA"])
    for meta in ("entry_points.txt", "top_level.txt"):
        assert ours[f"{info}/{meta}"] == theirs[f"{info}/{meta}"], meta
    assert {n for n in ours if n.startswith(info)} == {n for n in theirs if n.startswith(info)}


def test_the_checkout_wheel_is_reproducible_and_its_record_matches() -> None:
    name, data = checkout_wheel(ROOT)
    assert name == "accelstack-0.1.0-py3-none-any.whl"
    assert checkout_wheel(ROOT)[1] == data  # the same bytes for the same sources
    files = _files(data)
    record = files.pop("accelstack-0.1.0.dist-info/RECORD").decode().splitlines()
    listed = {}
    for line in record:
        path, digest, size = line.rsplit(",", 2)
        listed[path] = (digest, size)
    assert listed.pop("accelstack-0.1.0.dist-info/RECORD") == ("", "")
    assert listed == {p: (record_hash(b), str(len(b))) for p, b in files.items()}
    assert "accelstack/ci/accelstack-ci.sh" in files  # package data through the links
    assert "accelstack/components/__init__.py" in files
    assert not any("__pycache__" in p or p.startswith("tests/") for p in files)


def test_a_checkout_the_writer_cannot_carry_is_one_line(tmp_path: Path) -> None:
    src = source_copy(tmp_path)
    text = (src / "pyproject.toml").read_text(encoding="utf-8")
    (src / "pyproject.toml").write_text(
        text.replace('version = "0.1.0"', 'dynamic = ["version"]'), encoding="utf-8"
    )
    with pytest.raises(WheelError) as err:
        checkout_wheel(src)
    assert "\n" not in str(err.value) and "[project] dynamic" in str(err.value)
    assert "pip install ." in str(err.value)
