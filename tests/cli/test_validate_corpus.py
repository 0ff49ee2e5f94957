"""`validate` prints, byte for byte, what it printed before the rules moved onto the resolved
stack: every case of tests/golden/validate/corpus.jsonl (753 specs the suite used, one per
distinct output; tools/validate_corpus.py says where they came from), as text and as JSON, with
the same exit codes. A deliberate message change re-records it (`tools/validate_corpus.py
--record`), in its own commit, saying which cases moved and why."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import validate_corpus

CASES = validate_corpus.load_cases()
CHUNKS = 8


def test_the_corpus_covers_refusals_and_valid_specs() -> None:
    codes = {c["exit"] for c in CASES}
    assert codes == {0, 2}  # a spec without a budget is bad input (2), like every refusal
    assert len(CASES) >= 700
    # every case is in both formats
    assert all({"stdout", "json_stdout", "json_exit"} <= set(c) for c in CASES)


@pytest.mark.slow
@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_validate_output_is_byte_identical(
    chunk: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACCELSTACK_TODAY", validate_corpus.TODAY)
    moved = {}
    for case in CASES[chunk::CHUNKS]:
        diff = validate_corpus.moved(case, validate_corpus.replay(case, tmp_path))
        if diff:
            moved[case["id"]] = diff
    assert moved == {}
