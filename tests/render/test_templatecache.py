"""Compiled templates in the on-disk cache (accelstack/render/templatecache.py): a fresh process
renders the same files without compiling a template again; an edited template is compiled
afresh; with the cache off nothing is kept."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import jinja2
import pytest

from accelstack.render.artifacts import TEMPLATES_DIR
from accelstack.render.templatecache import KEEP, KIND, TemplateCache

from ..conftest import ROOT

#: Renders a preset in a fresh process: the digest of every file, and how many templates
#: Jinja compiled from source
_CHILD = """
import hashlib, json, sys
import jinja2
compiled = []
real = jinja2.Environment.compile
def counting(self, source, name=None, filename=None, raw=False, defer_init=False):
    compiled.append(name)
    return real(self, source, name, filename, raw, defer_init)
jinja2.Environment.compile = counting
from accelstack.render import render
from accelstack.resolve import resolve
from accelstack.spec import load_spec
stack = resolve(load_spec(sys.argv[1]))
files = {a.path: hashlib.sha256(a.content.encode()).hexdigest() for a in render(stack)}
print(json.dumps([files, sorted(set(compiled))]))
"""


def _render(cache: str, spec: Path) -> tuple[dict[str, str], list[str]]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), ACCELSTACK_CACHE_DIR=cache)
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(spec)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    files, compiled = json.loads(out.stdout)
    return files, compiled


@pytest.mark.slow
def test_a_fresh_process_renders_the_same_files_without_compiling(tmp_path: Path) -> None:
    spec = ROOT / "stacks" / "llama3-70b-trn2.yaml"
    first, compiled = _render(str(tmp_path), spec)
    assert compiled and first
    kept = list(tmp_path.glob(f"{KIND}-*.pickle"))
    assert len(kept) == len(compiled)
    again, recompiled = _render(str(tmp_path), spec)
    assert (again, recompiled) == (first, [])
    off, compiled_off = _render("off", spec)
    assert off == first and compiled_off == compiled


def test_an_edited_template_is_compiled_afresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACCELSTACK_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "t.j2").write_text("one {{ x }}")

    def env() -> jinja2.Environment:
        loader = jinja2.FileSystemLoader(str(tmp_path))
        return jinja2.Environment(loader=loader, bytecode_cache=TemplateCache())

    assert env().get_template("t.j2").render(x=1) == "one 1"
    assert env().get_template("t.j2").render(x=1) == "one 1"  # from the cache
    (tmp_path / "t.j2").write_text("two {{ x }}")
    assert env().get_template("t.j2").render(x=1) == "two 1"
    kept = sorted(p.name for p in (tmp_path / "cache").glob(f"{KIND}-*"))
    digest = hashlib.sha1(b"two {{ x }}").hexdigest()[:24]
    assert len(kept) == 2 and any(digest in k for k in kept)


def test_the_cache_keeps_every_template_of_several_checkouts() -> None:
    templates = list(TEMPLATES_DIR.rglob("*.j2"))
    assert 4 * len(templates) <= KEEP


def test_an_environment_with_other_options_compiles_afresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same template source under other whitespace options is other code: the cache never
    hands one environment the code another compiled."""
    monkeypatch.setenv("ACCELSTACK_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "t.j2").write_text("{% if x %}\n  yes\n{% endif %}\nend")

    def env(**options: bool) -> jinja2.Environment:
        loader = jinja2.FileSystemLoader(str(tmp_path))
        return jinja2.Environment(loader=loader, bytecode_cache=TemplateCache(), **options)

    plain = env().get_template("t.j2").render(x=True)
    trimmed = env(trim_blocks=True, lstrip_blocks=True).get_template("t.j2").render(x=True)
    assert (plain, trimmed) == ("\n  yes\n\nend", "  yes\nend")
    assert env(trim_blocks=True, lstrip_blocks=True).get_template("t.j2").render(x=True) == trimmed
    assert len(list((tmp_path / "cache").glob(f"{KIND}-*"))) == 2
