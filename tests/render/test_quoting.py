"""Property: every user value (entrypoint, args, env values) reaches the program verbatim.

Hypothesis draws hostile strings (quotes, `$()`, backticks, globs, newlines, unicode, leading
dashes); the spec is rendered into a node script, bash runs the whole script, and a fake
torchrun (tests/shims/argv/torchrun) dumps the argv and environment it received as JSON.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accelstack.render import render_manifest, render_node_script, shquote

from ..helpers_render import run_script, unchecked_variant

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: same YAML 1.1
HOSTILE = [
    "$(touch pwned)",
    "`touch pwned`",
    "'",
    '"',
    "\\",
    "\n",
    "\r\n",
    "*",
    "?",
    "~",
    "${HOME}",
    "$HOME",
    "!!",
    ";",
    "&&",
    "|",
    ">",
    "<",
    "-",
    "--",
    "--flag=x y",
    "",
    " ",
    "\t",
    "é",
    "😀",
    "\u2028",
    "\x7f",
    "#",
    "a'b\"c",
    "%s",
    "{a,b}",
    "$'x'",
]

# Any text but NUL (argv cannot carry it: render refuses it, tested in test_render.py) and
# lone surrogates (not valid in UTF-8 files).
text = st.one_of(
    st.sampled_from(HOSTILE),
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=30),
    st.lists(st.sampled_from(HOSTILE), max_size=4).map("".join),
)
entrypoints = text.filter(lambda s: bool(s) and not s.startswith("-")).map(lambda s: s[:200])
env_names = st.from_regex(r"\AUSER_[A-Z0-9_]{1,8}\Z")


@pytest.mark.slow
@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    entrypoint=entrypoints,
    args=st.lists(text, max_size=6),
    env=st.dictionaries(env_names, text, max_size=3),
    preset=st.sampled_from(["trn1-multinode", "llama3-70b-p5"]),
)
def test_user_values_reach_the_program_verbatim(
    entrypoint: str, args: list[str], env: dict[str, str], preset: str
) -> None:
    stack = unchecked_variant(preset, entrypoint=entrypoint, args=tuple(args), env=env)
    script = render_node_script(stack, None, "standalone", bucket="cache-bucket")
    with tempfile.TemporaryDirectory() as tmp:
        proc, dump = run_script(
            script, Path(tmp), {"ACCELSTACK_NNODES": "1", "ACCELSTACK_ARGV_ENV": ",".join(env)}
        )
        assert proc.returncode == 0, proc.stderr
        assert dump is not None
        assert not (Path(tmp) / "pwned").exists()
    argv = dump["argv"]
    i = argv.index(
        "--rdzv_id=trn1-multinode" if preset.startswith("trn1") else "--rdzv_id=llama3-70b-p5"
    )
    assert argv[i + 1] == entrypoint
    assert argv[i + 2 :] == args
    assert dump["env"] == env


@pytest.mark.slow
@settings(max_examples=30, deadline=None)
@given(args=st.lists(text, max_size=6), env=st.dictionaries(env_names, text, max_size=3))
def test_manifests_carry_the_script_verbatim(args: list[str], env: dict[str, str]) -> None:
    """The ConfigMap in each manifest holds exactly the node script, whatever the values."""
    stack = unchecked_variant("llama3-70b-trn2", args=tuple(args), env=env)
    for kind, orch in (("pytorchjob", "pytorchjob"), ("job", "standalone")):
        docs = list(yaml.load_all(render_manifest(stack, kind, bucket="b-1"), Loader=LOADER))
        (cm,) = [d for d in docs if d and d["kind"] == "ConfigMap"]
        assert cm["data"] == {"launch-trn2.sh": render_node_script(stack, None, orch, bucket="b-1")}


@pytest.mark.parametrize("value", HOSTILE)
def test_shquote_is_one_word(value: str) -> None:
    import subprocess

    out = subprocess.run(
        ["bash", "-c", f"printf '%s\\0' {shquote(value)}"],
        capture_output=True,
        check=True,
        env={**os.environ, "LC_ALL": "C"},
    )
    assert out.stdout == value.encode() + b"\0"
