"""The trial wrapper's record says what ran: one record per timed segment (shape_ran), the
shape as reported or marked as the spec's, the accelerators the world size ran on, the device's
own name and a Neuron host's instance type."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from accelstack.trial import runner

ENTRY = """\
from accelstack_trial import model_ran, shape_ran, step_done
shape_ran(layers=2, hidden_size=256, heads=4, sequence_length=128, micro_batch=2,
          training_stack="mine")
model_ran(params=4.2e6, name="tiny")
for _ in range(3):
    step_done()
shape_ran(layers=2, hidden_size=256, heads=4, sequence_length=256, micro_batch=1)
for _ in range(4):
    step_done()
shape_ran(layers=2, hidden_size=256, sequence_length=512)
step_done()  # one step only: no record
"""


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    records = tmp_path / "r.jsonl"
    monkeypatch.setenv("ACCELSTACK_TRIAL_RECORDS", str(records))
    for name in ("LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "NEURON_PARALLEL_COMPILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(runner, "_TIMER", runner._Timer())
    monkeypatch.delitem(sys.modules, "accelstack_trial", raising=False)
    return records


def _run(tmp_path: Path, source: str, records: Path) -> list[dict[str, object]]:
    entry = tmp_path / "e.py"
    entry.write_text(source)
    runner._TIMER = runner._Timer()  # each run its own timer (the fixture restores it)
    assert runner.main([str(entry)]) == 0
    return [json.loads(x) for x in records.read_text().splitlines()]


def test_one_record_per_segment_with_the_reported_shape(
    fresh: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("ACCELSTACK_TRIAL_SEQUENCE_LENGTH", "8192")
    first, second = _run(tmp_path, ENTRY, fresh)
    assert "segment 3 (512 tokens) reported 1 step(s)" in capsys.readouterr().err
    assert (first["sequence_length"], first["steps"], second["steps"]) == (128, 2, 3)
    assert first["tokens_per_step"] == 128 * 2 * 2 and second["tokens_per_step"] == 256 * 2
    assert first["shape_source"] == "reported" and first["heads"] == 4
    assert first["params_billion"] == pytest.approx(4.2e-3) and first["params_source"] == "given"
    assert first["training_stack"] == "mine" and second["training_stack"] == ""
    assert len(first["step_times_s"]) == 2 and first["benchmark"] == "entrypoint"
    assert first["devices"] == 2 and first["tokens_per_chip"] == 256


def test_the_spec_shape_is_marked_as_the_spec(
    fresh: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACCELSTACK_TRIAL_LAYERS", "80")
    monkeypatch.setenv("ACCELSTACK_TRIAL_SEQUENCE_LENGTH", "8192")
    (rec,) = _run(
        tmp_path, "import accelstack_trial as t\nfor _ in range(3): t.step_done(10)\n", fresh
    )
    assert (rec["shape_source"], rec["layers"], rec["sequence_length"]) == ("spec", 80, 8192)
    assert rec["heads"] is None and rec["devices"] == 1
    partial = (
        "import accelstack_trial as t\nt.shape_ran(layers=4)\nfor _ in range(3): t.step_done(10)\n"
    )
    fresh.unlink()
    (rec,) = _run(tmp_path, partial, fresh)
    assert rec["layers"] == 4 and rec["sequence_length"] == 8192
    assert rec["shape_source"] == "reported (sequence_length from the spec)"
    with pytest.raises(TypeError, match="unknown field"):
        runner.shape_ran(layer=4)


def test_the_world_size_is_counted_in_accelerators(
    fresh: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """64 processes on a trn2.48xlarge (4 logical NeuronCores per chip) ran on 16 chips."""
    monkeypatch.setenv("WORLD_SIZE", "64")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "64")
    monkeypatch.setenv("ACCELSTACK_TRIAL_RANKS_PER_DEVICE", "4")
    (rec,) = _run(
        tmp_path, "import accelstack_trial as t\nfor _ in range(3): t.step_done(640)\n", fresh
    )
    assert (rec["world_size"], rec["devices"], rec["nodes"]) == (64, 16, 1)
    assert rec["tokens_per_chip"] == 40


def test_the_device_names_itself(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """CPU: its model name; a Neuron host: the instance type `neuron-ls` prints first."""
    assert runner._device_model("cpu")
    assert runner._device_model("neuron") is None
    tool = tmp_path / "neuron-ls"
    tool.write_text("#!/bin/sh\necho 'instance-type: trn2.48xlarge'\necho 'instance-id: i-0abc'\n")
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert runner._host_instance_type("neuron") == "trn2.48xlarge"
    assert runner._host_instance_type("cpu") is None  # asked only on a Neuron host
    tool.write_text("#!/bin/sh\nexit 1\n")
    assert runner._host_instance_type("neuron") is None
