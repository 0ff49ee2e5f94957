"""`accelstack validate` over a corpus of specs: the outputs a refactor must keep byte for byte.

    python tools/validate_corpus.py            # compare: print the cases whose output moved
    python tools/validate_corpus.py --record   # rewrite the recorded outputs (a deliberate
                                               # message change; review the diff, then commit)

tests/golden/validate/corpus.jsonl holds one case per line: the spec's YAML text, the file
stem it is written as (stacks/<stem>.yaml in an empty project folder) and what `validate`
printed for it, as text and as JSON, with the exit codes. The specs were collected on
2026-11-28 (accelstack f384f35) from every spec the test suite handed to the spec loader
(presets, factories' edits, the fuzz test's mutations), one case per distinct output: 753
cases, 660 refused, 92 valid, 1 over no budget. tests/cli/test_validate_corpus.py replays them.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "golden" / "validate" / "corpus.jsonl"
#: The date the outputs were recorded on (EKS support windows are judged on it)
TODAY = "2026-11-22"
#: What each replay records: field -> extra validate arguments
FORMATS = {"": [], "json_": ["--format", "json"]}


def load_cases(path: Path = CORPUS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line]


def _run(argv: list[str], cwd: Path) -> tuple[int, str, str]:
    """`accelstack ARGV` in-process, in `cwd`: (exit code, stdout, stderr)."""
    from accelstack.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    finally:
        os.chdir(old)
    return code, out.getvalue(), err.getvalue()


def replay(case: dict[str, Any], folder: Path) -> dict[str, Any]:
    """The case's outputs from the accelstack on sys.path (`folder`: an empty project)."""
    stacks = folder / "stacks"
    stacks.mkdir(exist_ok=True)
    spec = stacks / f"{case['stem']}.yaml"
    spec.write_text(case["yaml"], encoding="utf-8")
    got: dict[str, Any] = {}
    try:
        for prefix, extra in FORMATS.items():
            code, out, err = _run(["validate", f"stacks/{case['stem']}.yaml", *extra], folder)
            got |= {f"{prefix}exit": code, f"{prefix}stdout": out, f"{prefix}stderr": err}
    finally:
        spec.unlink()
    return got


def moved(case: dict[str, Any], got: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """field -> (recorded, now) of every output that differs."""
    return {k: (case[k], v) for k, v in got.items() if case[k] != v}


def _replays(cases: list[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            yield case, replay(case, Path(tmp))


def main(argv: list[str]) -> int:
    os.environ["ACCELSTACK_TODAY"] = TODAY
    os.environ.pop("ACCELSTACK_CATALOG_DIR", None)
    cases = load_cases()
    if "--record" in argv:
        lines = [json.dumps(c | got, sort_keys=True) for c, got in _replays(cases)]
        CORPUS.write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"recorded {len(lines)} cases in {CORPUS}")
        return 0
    bad = [(c["id"], moved(c, got)) for c, got in _replays(cases) if moved(c, got)]
    for case_id, diff in bad:
        print(f"case {case_id}: {sorted(diff)}")
    print(f"{len(cases) - len(bad)} of {len(cases)} cases unchanged")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
