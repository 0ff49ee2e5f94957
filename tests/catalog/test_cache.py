"""The parsed-catalog cache (accelstack/catalog/cache.py): a fresh process with a warm cache gets
the catalog the files load to without parsing them or building the catalog's models; an edit
of any file it depends on is a new entry; an entry it cannot trust is never read; a broken or
unwritable cache is no cache, never an error."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import os
import pickle
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel

import accelstack.catalog.load as catalog_pkg
from accelstack.catalog import CATALOG_DIR, Catalog, cache, limits

from ..conftest import ROOT

pytestmark = pytest.mark.usefixtures("cache_dir")

#: Loads the catalog in a fresh process; prints whether its models were built and a digest of
#: what it loaded.
_PROBE = (
    "import hashlib, json\n"
    "from accelstack.catalog import Catalog, load_catalog\n"
    "c = load_catalog()\n"
    "built = Catalog.__pydantic_complete__\n"
    "dump = json.dumps(c.model_dump(mode='json'), sort_keys=True, default=str)\n"
    "print(json.dumps({'built': built, 'digest': hashlib.sha256(dump.encode()).hexdigest()}))\n"
)


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "cache"
    monkeypatch.setenv(cache.ENV, str(where))
    return where


def _probe(where: Path) -> dict[str, object]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), **{cache.ENV: str(where)})
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    result: dict[str, object] = json.loads(out.stdout)
    return result


def _entries(where: Path) -> list[Path]:
    return sorted(where.glob("catalog-*.pickle"))


def _overlay(tmp: Path, hours: int) -> Path:
    d = tmp / f"overlay-{hours}"
    d.mkdir()
    (d / "prices.yaml").write_text(yaml.safe_dump({"hours_per_month": hours}))
    return d


@pytest.mark.slow
def test_a_warm_cache_gives_the_same_catalog_without_building_its_models(
    cache_dir: Path,
) -> None:
    cold = _probe(cache_dir)
    assert cold["built"] is True and len(_entries(cache_dir)) == 1
    warm = _probe(cache_dir)
    assert warm == {"built": False, "digest": cold["digest"]}


def test_every_catalog_model_defers_its_build() -> None:
    """A model that builds at import costs its build on every hit too."""
    models = {
        obj
        for stem in sorted(p.stem for p in CATALOG_DIR.glob("*.py"))
        for _, obj in inspect.getmembers(_module(stem), inspect.isclass)
        if issubclass(obj, BaseModel) and obj.__module__.startswith("accelstack.catalog")
    }
    assert len(models) > 50
    eager = sorted(m.__qualname__ for m in models if not m.model_config.get("defer_build"))
    assert eager == []


def _module(stem: str) -> object:
    name = "accelstack.catalog" if stem == "__init__" else f"accelstack.catalog.{stem}"
    return importlib.import_module(name)


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_an_edited_file_is_a_new_entry_and_loads_the_edit(tmp_path: Path, cache_dir: Path) -> None:
    overlay = _overlay(tmp_path, 700)
    first = catalog_pkg._load.__wrapped__(CATALOG_DIR, overlay)
    (overlay / "prices.yaml").write_text(yaml.safe_dump({"hours_per_month": 701}))
    second = catalog_pkg._load.__wrapped__(CATALOG_DIR, overlay)
    assert (first.hours_per_month, second.hours_per_month) == (700, 701)
    assert len(_entries(cache_dir)) == 2


def test_the_key_covers_the_files_their_paths_the_code_and_the_versions(tmp_path: Path) -> None:
    src = [tmp_path / "models.py"]
    src[0].write_text("A = 1\n")
    base = cache.key([("a.yaml", b"x: 1\n")], src)
    assert cache.key([("a.yaml", b"x: 1\n")], src) == base
    assert cache.key([("a.yaml", b"x: 2\n")], src) != base
    assert cache.key([("b.yaml", b"x: 1\n")], src) != base
    assert cache.key([("a.yaml", b""), ("x: 1\n", b"")], src) != base  # length-prefixed
    src[0].write_text("A = 2\n")
    assert cache.key([("a.yaml", b"x: 1\n")], src) != base


def test_the_key_reads_every_module_the_catalog_package_imports() -> None:
    """A loaded catalog is built by the catalog package and the accelstack modules it imports;
    an edit of any of them must be a new key."""
    imported = set()
    for path in CATALOG_DIR.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "accelstack":
                imported |= {f"{a.name}.py" for a in node.names}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("accelstack."):
                top = (node.module or "").split(".")[1]
                imported |= set() if top == "catalog" else {f"{top}.py"}
    assert imported == set(cache.IMPORTED)
    assert {p.name for p in cache.sources()} >= {p.name for p in CATALOG_DIR.glob("*.py")}


def test_the_key_names_the_pydantic_version(monkeypatch: pytest.MonkeyPatch) -> None:
    import pydantic

    before = cache.key([])
    monkeypatch.setattr(pydantic, "VERSION", "0.0.0")
    assert cache.key([]) != before


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_a_corrupt_entry_is_a_miss_and_is_replaced(tmp_path: Path, cache_dir: Path) -> None:
    overlay = _overlay(tmp_path, 710)
    catalog_pkg._load.__wrapped__(CATALOG_DIR, overlay)
    (entry,) = _entries(cache_dir)
    entry.write_bytes(b"\x80\x05truncated")
    again = catalog_pkg._load.__wrapped__(CATALOG_DIR, overlay)
    assert again.hours_per_month == 710
    assert isinstance(pickle.loads(entry.read_bytes()), Catalog)


@pytest.mark.slow
@pytest.mark.parametrize(("what", "mode"), [("dir", 0o777), ("dir", 0o720), ("file", 0o666)])
def test_an_entry_others_can_write_is_never_read(
    tmp_path: Path, cache_dir: Path, what: str, mode: int
) -> None:
    """A planted entry (here: another overlay's catalog under this one's name) is read from a
    private cache, which shows the plant works, and never from one others can write."""
    overlay = _overlay(tmp_path, 720)
    catalog_pkg._load.__wrapped__(CATALOG_DIR, overlay)
    (entry,) = _entries(cache_dir)
    planted = catalog_pkg._parse(CATALOG_DIR, _overlay(tmp_path, 721))
    entry.write_bytes(pickle.dumps(planted))
    entry.chmod(0o600)
    assert catalog_pkg._load.__wrapped__(CATALOG_DIR, overlay).hours_per_month == 721
    (cache_dir if what == "dir" else entry).chmod(mode)
    try:
        assert catalog_pkg._load.__wrapped__(CATALOG_DIR, overlay).hours_per_month == 720
    finally:
        cache_dir.chmod(0o700)


def test_a_symlinked_entry_is_never_read(tmp_path: Path, cache_dir: Path) -> None:
    overlay = _overlay(tmp_path, 730)
    catalog_pkg._load.__wrapped__(CATALOG_DIR, overlay)
    (entry,) = _entries(cache_dir)
    elsewhere = tmp_path / "planted.pickle"
    elsewhere.write_bytes(pickle.dumps(catalog_pkg._parse(CATALOG_DIR, _overlay(tmp_path, 731))))
    entry.unlink()
    entry.symlink_to(elsewhere)
    assert cache.read(entry.name.removeprefix("catalog-").removesuffix(".pickle")) is None


def test_off_stores_nothing(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(cache.ENV, "off")
    assert (
        catalog_pkg._load.__wrapped__(CATALOG_DIR, _overlay(tmp_path, 740)).hours_per_month == 740
    )
    assert not cache_dir.exists()


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_a_cache_that_cannot_be_written_is_no_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory\n")
    monkeypatch.setenv(cache.ENV, str(blocker / "cache"))
    assert (
        catalog_pkg._load.__wrapped__(CATALOG_DIR, _overlay(tmp_path, 750)).hours_per_month == 750
    )


def test_the_newest_entries_are_kept(cache_dir: Path) -> None:
    for i in range(cache.KEEP + 3):
        cache.write(f"{i:04d}", {"entry": i})
        os.utime(cache_dir / f"catalog-{i:04d}.pickle", (1_000_000 + i, 1_000_000 + i))
    cache.write("last", {"entry": "last"})
    kept = {p.name for p in _entries(cache_dir)}
    assert len(kept) == cache.KEEP and "catalog-last.pickle" in kept
    assert "catalog-0000.pickle" not in kept
    assert not list(cache_dir.glob(".tmp-*"))


def test_the_default_place_is_the_users_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(cache.ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere")
    assert cache.cache_dir() == Path("/somewhere/accelstack")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache.cache_dir() == Path.home() / ".cache" / "accelstack"


@pytest.fixture
def fresh_limits() -> Iterator[None]:
    limits._shapes.cache_clear()
    yield
    limits._shapes.cache_clear()


@pytest.mark.usefixtures("fresh_limits")
def test_the_botocore_limits_are_read_from_the_cache_once_stored(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = limits._shapes()
    limits._shapes.cache_clear()
    monkeypatch.setattr(limits, "read_model", lambda path: pytest.fail(f"read {path} again"))
    assert limits._shapes() == first
    assert first[("iam", "roleNameType")]["max"] == 64
    assert len(list(cache_dir.glob("limits-*.pickle"))) == 1


@pytest.mark.usefixtures("fresh_limits")
def test_another_botocore_model_file_is_read_afresh(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A botocore upgrade (another model file, size or time) is a new entry."""
    limits._shapes()
    real = limits.model_file
    copies: dict[str, Path] = {}

    def copied(service: str) -> Path:
        if service not in copies:
            src = real(service)
            copies[service] = tmp_path / f"{service}-{src.name}"
            copies[service].write_bytes(src.read_bytes())
        return copies[service]

    reads: list[Path] = []
    model = limits.read_model
    monkeypatch.setattr(limits, "model_file", copied)
    monkeypatch.setattr(limits, "read_model", lambda path: reads.append(path) or model(path))
    limits._shapes.cache_clear()
    limits._shapes()
    assert sorted(p.name for p in reads) == sorted(p.name for p in copies.values())
    assert len(list(cache_dir.glob("limits-*.pickle"))) == 2


def test_a_cache_directory_may_be_a_link_to_a_private_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(~/.cache on another disk is common); what the link points to is checked."""
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(target)
    monkeypatch.setenv(cache.ENV, str(link))
    cache.write("entry", {"x": 1})
    assert cache.read("entry") == {"x": 1}
    target.chmod(0o777)
    assert cache.read("entry") is None
