"""botocore's shape verdicts kept in the on-disk cache (accelstack/plan/updates.py): a request
botocore has judged before is answered without importing `botocore.validate`, with the same
verdict, and another model file or validator is judged afresh."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from accelstack.plan import updates
from accelstack.plan.updates import Request, problems

from ..conftest import ROOT

#: A request botocore refuses (desiredSize is an integer, minSize has a minimum of 0) and one
#: it accepts
REFUSED = Request("eks", "UpdateNodegroupConfig", {"clusterName": "c", "nodegroupName": "n",
                  "scalingConfig": {"minSize": -1, "desiredSize": "two", "maxSize": 4}})  # fmt: skip
ACCEPTED = Request("eks", "UpdateNodegroupConfig", {"clusterName": "c", "nodegroupName": "n",
                   "scalingConfig": {"minSize": 1, "desiredSize": 2, "maxSize": 4}})  # fmt: skip

_CHILD = """
import json, sys
from accelstack.plan.updates import Request, problems
reqs = [Request(**r) for r in json.loads(sys.argv[1])]
found = [problems(r) for r in reqs]
print(json.dumps([found, "botocore.validate" in sys.modules]))
"""


@pytest.fixture(autouse=True)
def _process_caches() -> Iterator[None]:
    """Each test starts and ends with this process's verdicts unread (a failed test leaves no
    planted verdict behind for the next one)."""
    updates._verdicts.cache_clear()
    updates._verdict_entry.cache_clear()
    yield
    updates._verdicts.cache_clear()
    updates._verdict_entry.cache_clear()


def _in_fresh_process(cache: Path, *reqs: Request) -> tuple[list[list[str]], bool]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), ACCELSTACK_CACHE_DIR=str(cache))
    arg = json.dumps([{"service": r.service, "operation": r.operation, "params": r.params}
                      for r in reqs])  # fmt: skip
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, arg], env=env, capture_output=True, text=True, check=True
    )
    found, imported = json.loads(out.stdout)
    return found, imported


@pytest.mark.slow
def test_a_verdict_seen_before_comes_from_the_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first, imported = _in_fresh_process(cache, REFUSED, ACCEPTED)
    assert imported  # judged by botocore
    assert first[1] == [] and len(first[0]) == 1
    assert "Invalid type for parameter scalingConfig.desiredSize" in first[0][0]
    assert "minSize" in first[0][0]
    again, imported = _in_fresh_process(cache, REFUSED, ACCEPTED)
    assert (again, imported) == (first, False)


def test_the_cached_verdict_equals_botocores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACCELSTACK_CACHE_DIR", str(tmp_path))
    fresh = problems(REFUSED)
    assert fresh == updates._validated(REFUSED) and fresh
    updates._verdicts.cache_clear()  # a new process: the verdicts read back from disk
    calls: list[Any] = []
    monkeypatch.setattr(updates, "_validated", lambda req: calls.append(req) or ["judged"])
    assert problems(REFUSED) == fresh and calls == []
    assert problems(ACCEPTED) == ["judged"] and calls == [ACCEPTED]  # a new request: judged


def test_another_model_file_is_judged_afresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The entry is named by the model file (and the validator): a botocore upgrade that
    changes either is a miss, never a stale verdict."""
    monkeypatch.setenv("ACCELSTACK_CACHE_DIR", str(tmp_path))
    problems(REFUSED)
    real = updates._verdict_entry("eks")
    copied = tmp_path / "botocore" / "data" / "eks" / "2017-11-01" / "service-2.json"
    copied.parent.mkdir(parents=True)
    copied.write_text("{}")
    (tmp_path / "botocore" / "validate.py").write_text("")
    monkeypatch.setattr("accelstack.catalog.limits.model_file", lambda service: copied)
    updates._verdict_entry.cache_clear()
    assert updates._verdict_entry("eks") != real
    updates._verdicts.cache_clear()
    assert updates._verdicts("eks") == {}


def test_an_entry_keeps_the_newest_verdicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry is bounded: past `VERDICTS_KEPT` requests the oldest verdict is dropped."""
    monkeypatch.setenv("ACCELSTACK_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(updates, "VERDICTS_KEPT", 3)
    monkeypatch.setattr(updates, "_validated", lambda req: [])
    reqs = [Request("eks", "UpdateNodegroupConfig", {"n": i}) for i in range(5)]
    for req in reqs:
        problems(req)
    digests = [updates._request_digest(r) for r in reqs]
    updates._verdicts.cache_clear()
    assert list(updates._verdicts("eks")) == digests[2:]


def test_the_model_checked_is_the_file_the_entry_is_named_by() -> None:
    """botocore validates against the model file the key stamps (never one a loader would find
    elsewhere, such as ~/.aws/models)."""
    from accelstack.catalog.limits import model_file, read_model

    model = updates._service_model("eks")
    assert model.api_version == read_model(model_file("eks"))["metadata"]["apiVersion"]
    assert "UpdateNodegroupConfig" in model.operation_names
