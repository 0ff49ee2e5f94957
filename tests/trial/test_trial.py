"""The "prototype on both" loop: `accelstack trial` -> a real torchrun run on 127.0.0.1 (CPU,
gloo) -> one record per node -> `accelstack calibrate` -> `price` uses the measured MFU."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from accelstack.catalog import Catalog, load_catalog
from accelstack.cli import main
from accelstack.cost.calibrate import measure, record_mfu
from accelstack.cost.estimate import training_flops
from accelstack.render.output import write_artifacts
from accelstack.render.trial import WRAPPER, render_trial
from accelstack.resolve import resolve
from accelstack.spec import load_spec
from accelstack.trial import runner

from .. import factories
from ..conftest import ROOT, STACKS

ENTRY = ROOT / "tests" / "fixtures" / "trial" / "tiny_train.py"
TORCHRUN = Path(sys.executable).parent / "torchrun"
NPROC = 2
STEPS = 5


def _spec_file(tmp: Path, name: str = "trialrun", params: float = 4160e-9) -> Path:
    """A p5 spec sized like the fixture's model (64 x 64 + 64 parameters), or `params`."""
    d: dict[str, Any] = factories.preset("llama3-70b-p5")
    d["name"] = name
    d["budget"] = {"max_hourly_usd": 100}  # one p5.48xlarge and the cluster around it
    d["pools"][0]["nodes"] = 1
    d["storage"] = {}
    d["workload"].update(
        {
            "model": {"params_billion": params},
            "tokens_billion": 0.001,
            "sequence_length": 128,
            "global_batch_size": 16,
            "entrypoint": str(ENTRY),
            "args": ["--note", "it's $(not run)"],
        }
    )
    (tmp / "stacks").mkdir(exist_ok=True)
    path = tmp / "stacks" / f"{name}.yaml"
    path.write_text("# a comment calibrate keeps\n" + yaml.safe_dump(d, sort_keys=False))
    return path


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run_trial_script(script: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "PET_"))}
    for k in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK"):
        env.pop(k, None)
    port = _free_port()
    env.update(
        {
            "PATH": f"{TORCHRUN.parent}{os.pathsep}{env.get('PATH', '')}",
            "ACCELSTACK_ORCHESTRATOR": "standalone",
            "ACCELSTACK_NNODES": "1",
            "ACCELSTACK_NODE_RANK": "0",
            "ACCELSTACK_HEAD_ADDR": "127.0.0.1",
            "ACCELSTACK_RDZV_PORT": str(port),
            "ACCELSTACK_RDZV_ID": f"trial-{port}",
            "GLOO_SOCKET_IFNAME": "lo",
            "OMP_NUM_THREADS": "1",
            # no EFA or GPU on a CPU runner: the fabric self-check has its own tests
            "ACCELSTACK_SKIP_FABRIC_CHECK": "1",
            "ACCELSTACK_CHECKPOINT_DIR": str(script.parent / "checkpoints"),  # not the /fsx default
            "ACCELSTACK_NCCL_TRACE_DIR": str(script.parent / "nccl-trace"),  # nor the FSx state dir
        }
    )
    return subprocess.run(
        ["bash", str(script)],
        env=env,
        cwd=script.parent,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.slow
def test_trial_calibrate_price_end_to_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], catalog: Catalog
) -> None:
    pytest.importorskip("torch", reason="run `pip install torch==2.13.0` (CPU build)")
    spec_path = _spec_file(tmp_path)
    stack = resolve(load_spec(spec_path), catalog)
    out = tmp_path / "trial"
    records = out / "records.jsonl"
    arts = render_trial(stack, STEPS, str(records), procs_per_node_override=NPROC)
    write_artifacts(out, arts, force=False)
    done = _run_trial_script(out / "trial-h100.sh")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = records.read_text().splitlines()
    assert len(lines) == 1, "one record per node"
    rec = json.loads(lines[0])
    assert set(runner.RECORD_FIELDS) <= set(rec)
    assert rec["instance_type"] == "p5.48xlarge" and rec["world_size"] == NPROC
    assert rec["nodes"] == 1 and rec["steps"] == STEPS - 1
    assert rec["tokens_per_step"] == 16 * 128 and rec["tokens_per_s"] > 0
    assert rec["framework"]["torch"] and rec["sdk"] == stack.image
    assert rec["compile_s"] > 0 and rec["step_time_s"] > 0
    # the record says what ran: the model counted by model_ran(), the device found
    assert rec["params_source"] == "measured" and rec["model"] == "tiny-linear"
    assert rec["params_billion"] == pytest.approx(4160e-9)
    assert rec["device_kind"] == "cpu" and rec["expected_device_kind"] == "nvidia"
    per_token = training_flops(4160e-9, 1, None, None, 128).per_token
    # the world size is the accelerators that ran: 2 of the p5.48xlarge's 8
    assert rec["devices"] == NPROC and rec["shape_source"] == "spec"
    want = rec["tokens_per_s"] * per_token / (NPROC * 989e12)
    assert record_mfu(catalog, rec) == pytest.approx(want)
    # a CPU run cannot calibrate a p5 pool: refused in one line, the spec untouched
    before = spec_path.read_text()
    assert main(["calibrate", str(records), "--spec", str(spec_path)]) == 2
    err = capsys.readouterr().err
    assert f"{records}: line 1: ran on device kind 'cpu', but p5.48xlarge" in err
    assert len(err.strip().splitlines()) == 1 and spec_path.read_text() == before


def test_calibrate_then_price_uses_the_measurement(tmp_path: Path, capsys) -> None:
    spec_path = _spec_file(tmp_path, params=8.03)
    records = tmp_path / "records.jsonl"
    records.write_text(json.dumps(_fake_record(sdk=_image(spec_path))) + "\n")
    assert main(["calibrate", str(records), "--spec", str(spec_path)]) == 0
    assert "wrote calibration to" in capsys.readouterr().out
    text = spec_path.read_text()
    assert text.startswith("# a comment calibrate keeps\n") and "calibration:" in text
    (m,) = load_spec(spec_path).calibration
    assert (m.instance_type, m.steps, m.file) == ("p5.48xlarge", 9, "records.jsonl")
    assert (m.nodes, m.world_size, m.device_kind) == (1, 8, "nvidia")
    assert m.model == "llama3-8b 8.03B (given)"
    assert 0.3 < m.mfu < 0.5
    assert main(["price", str(spec_path)]) == 0
    price = capsys.readouterr().out
    assert "MFU basis: measured (records.jsonl, 2026-11-20, 9 steps on 1 node(s)" in price
    # the spec's pool has 1 node: nothing to carry; 8 nodes: carried through the scaling model
    assert "carried" not in price and "WARNING" not in price
    d = yaml.safe_load(spec_path.read_text())
    d["pools"][0]["nodes"] = 8
    d["budget"] = {"max_hourly_usd": 1000}  # eight p5.48xlarge and the cluster around them
    spec_path.write_text(yaml.safe_dump(d, sort_keys=False))
    assert main(["price", str(spec_path), "--format", "json"]) == 0
    t = json.loads(capsys.readouterr().out)["training"]
    # 8 nodes: carried through the step model (the node term, and the batch term: the spec's
    # 16 x 128 tokens spread over 64 chips; the record names no per-chip batch of its own)
    assert t["mfu_source"].endswith("carried through the step model (x0.578): 8 -> 64 chips")
    assert t["mfu"] < m.mfu and t["mfu_basis"] == "measured"
    assert t["mfu_range"]["high"] - t["mfu_range"]["low"] > 0.1 * m.mfu


def _image(spec_path: Path) -> str:
    return resolve(load_spec(spec_path)).image or ""


def test_measurement_on_another_sdk_is_flagged(tmp_path: Path, catalog: Catalog, capsys) -> None:
    spec_path = _spec_file(tmp_path, params=8.03)
    rec = _fake_record(sdk="nvcr.io/nvidia/pytorch:24.01-py3")
    records = tmp_path / "old.jsonl"
    records.write_text(json.dumps(rec) + "\n")
    assert main(["calibrate", str(records), "--spec", str(spec_path)]) == 0
    capsys.readouterr()
    assert main(["price", str(spec_path), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["training"]["mfu_basis"] == "measured"
    assert "measured on nvcr.io/nvidia/pytorch:24.01-py3" in doc["training"]["mfu_warning"]
    assert any("stale" in d for d in doc["depends_on_estimate"])
    # compare prints the same source for that type; other types keep their curves
    types = ["--instance-types", "p5.48xlarge,trn1.32xlarge", "--chips", "16"]
    assert main(["compare", str(spec_path), *types]) == 0
    text = capsys.readouterr().out
    assert "MFU measured: old.jsonl, 2026-11-20, 9 steps on 1 node(s); carried through" in text
    assert "the step model (x" in text and "; WARNING: measured on" in text
    assert "trainium bf16 step model" in text
    assert main(["compare", str(spec_path), "--instance-types", "p5.48xlarge"]) == 0
    only = capsys.readouterr().out
    assert "this pick depends on an estimate: " in only
    assert "the measured MFU may be stale (measured on nvcr.io" in only


def _fake_record(**over: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "schema": runner.SCHEMA,
        "date": "2026-11-20T10:00:00+00:00",
        "pool": "h100",
        "instance_type": "p5.48xlarge",
        "device_kind": "nvidia",
        "nodes": 1,
        "world_size": 8,
        "steps": 9,
        "tokens_per_s": 65000.0,  # 8.03B, 6N FLOPs per token: MFU 0.40 on 8 H100
        "params_billion": 8.03,
        "params_source": "given",
        "model": "llama3-8b",
        "sequence_length": 128,
        "precision": "bf16",
        "sdk": "x",
    }
    rec.update(over)
    return rec


def test_calibrate_averages_records_and_replaces_the_block(tmp_path: Path, capsys) -> None:
    cat = load_catalog()
    spec_path = _spec_file(tmp_path, params=8.03)
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(json.dumps(_fake_record(tokens_per_s=60000.0)) + "\n")
    b.write_text(
        json.dumps(_fake_record(tokens_per_s=70000.0, date="2026-11-21T00:00:00+00:00")) + "\n\n"
    )
    (m,) = measure(cat, [a, b])
    assert m.records == 2 and m.tokens_per_second == 65000.0 and m.file == "b.jsonl"
    assert m.mfu == pytest.approx(record_mfu(cat, _fake_record(tokens_per_s=65000.0)))
    for _ in range(2):  # twice: the block is replaced, not duplicated
        assert main(["calibrate", str(a), str(b), "--spec", str(spec_path)]) == 0
    assert spec_path.read_text().count("calibration:") == 1
    assert len(load_spec(spec_path).calibration) == 1


def test_calibrate_bad_records_exit_2_and_write_nothing(tmp_path: Path, capsys) -> None:
    spec_path = _spec_file(tmp_path)
    before = spec_path.read_text()
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(_fake_record()) + "\n{not json\n")
    assert main(["calibrate", str(bad), "--spec", str(spec_path)]) == 2
    assert f"{bad}: line 2" in capsys.readouterr().err
    bad.write_text(json.dumps({"instance_type": "p5.48xlarge"}) + "\n")
    assert main(["calibrate", str(bad), "--spec", str(spec_path)]) == 2
    assert "lacks nodes, world_size, device_kind, steps, tokens_per_s" in capsys.readouterr().err
    bad.write_text(json.dumps(_fake_record(instance_type="p9.48xlarge")) + "\n")
    assert main(["calibrate", str(bad), "--spec", str(spec_path)]) == 2
    # another device kind than the pool's: a Neuron record naming the p5 pool
    bad.write_text(json.dumps(_fake_record(device_kind="neuron")) + "\n")
    assert main(["calibrate", str(bad), "--spec", str(spec_path)]) == 2
    assert "ran on device kind 'neuron', but p5.48xlarge (pool h100) is nvidia" in (
        capsys.readouterr().err
    )
    # an MFU no training step reaches (the CPU-record symptom: 1.9e-7) or above the peak
    for tokens, says in (
        (0.03, "MFU 1.83e-07 (0.03 tokens/s on 8 x NVIDIA H100 80GB SXM) is below 0.05"),
        (200_000.0, "executes at least 1,204 TFLOP/s per accelerator (200,000.0 tokens/s on 8;"),
    ):
        bad.write_text(json.dumps(_fake_record(tokens_per_s=tokens)) + "\n")
        assert main(["calibrate", str(bad), "--spec", str(spec_path)]) == 2
        err = capsys.readouterr().err
        assert says in err
        assert len(err.strip().splitlines()) == 1
    assert spec_path.read_text() == before


def test_trial_cli_renders_one_node_per_pool(tmp_path: Path, capsys) -> None:
    out = tmp_path / "t"
    spec = STACKS / "mixed-trn2-p5.yaml"
    assert main(["trial", str(spec), "-o", str(out), "--steps", "7"]) == 0
    printed = capsys.readouterr().out
    names = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    scripts = [n for n in names if n.startswith("trial-") and n.endswith(".sh")]
    assert len(scripts) == 2 and WRAPPER in names and "README.md" in names
    # an EKS stack: each pool's trial also as a manifest (tests/render/test_trial.py)
    assert [n for n in names if n.endswith(".yaml")] == ["trial-h100.yaml", "trial-trn2.yaml"]
    for name in scripts:
        text = (out / name).read_text()
        assert "ACCELSTACK_MAX_STEPS=7" in text or "ACCELSTACK_MAX_STEPS='7'" in text
        assert f"./{WRAPPER}" in text and "/workspace/" in text  # the user's entrypoint follows
    assert (out / WRAPPER).read_text() == Path(runner.__file__).read_text()
    assert "warning" not in printed
    assert main(["trial", str(spec), "-o", str(out), "--steps", "1"]) == 2
    big = STACKS / "llama3-70b-p5.yaml"
    assert main(["trial", str(big), "-o", str(tmp_path / "big")]) == 0
    assert "warning: pool h100: 70.6B needs 3 nodes of p5.48xlarge" in capsys.readouterr().out


def test_runner_needs_two_steps_and_skips_precompile(tmp_path: Path, monkeypatch) -> None:
    entry = tmp_path / "e.py"
    entry.write_text("from accelstack_trial import step_done\nstep_done()\n")
    records = tmp_path / "r.jsonl"
    monkeypatch.setenv("ACCELSTACK_TRIAL_RECORDS", str(records))
    monkeypatch.setattr(runner, "_TIMER", runner._Timer())
    monkeypatch.delitem(sys.modules, "accelstack_trial", raising=False)
    assert runner.main([str(entry)]) == runner.EXIT_TOO_FEW_STEPS
    assert not records.exists()
    entry.write_text("from accelstack_trial import step_done\nfor _ in range(3): step_done(100)\n")
    monkeypatch.setattr(runner, "_TIMER", runner._Timer())
    monkeypatch.setenv("NEURON_PARALLEL_COMPILE", "1")
    assert runner.main([str(entry)]) == 0 and not records.exists()
    monkeypatch.delenv("NEURON_PARALLEL_COMPILE")
    monkeypatch.setattr(runner, "_TIMER", runner._Timer())
    assert runner.main([str(entry)]) == 0
    (rec,) = [json.loads(x) for x in records.read_text().splitlines()]
    assert rec["steps"] == 2 and rec["tokens_per_step"] == 100


def test_calibration_with_an_unknown_type_is_refused(tmp_path: Path, capsys) -> None:
    spec_path = _spec_file(tmp_path)
    d = yaml.safe_load(spec_path.read_text())
    d["calibration"] = [
        {
            "instance_type": "p5.48xlarg",
            "params_billion": 1,
            "mfu": 0.3,
            "tokens_per_second": 10,
            "file": "r.jsonl",
            "date": "2026-11-20",
            "steps": 9,
            "sdk": "x",
        }
    ]
    spec_path.write_text(yaml.safe_dump(d))
    assert main(["validate", str(spec_path)]) == 2
    err = capsys.readouterr().err
    assert "calibration[0].instance_type: 'p5.48xlarg' is not a known accelerated" in err
    assert "did you mean 'p5.48xlarge'" in err.lower()


def test_calibrate_refuses_a_spec_the_stack_rules_refuse_and_writes_nothing(
    tmp_path: Path, capsys
) -> None:
    """46 user tags pass the spec rules but not the tag count on the resolved stack: the spec is
    reported in one line before the records are read, and stays as it was."""
    spec_path = _spec_file(tmp_path)
    records = tmp_path / "records.jsonl"
    records.write_text(json.dumps(_fake_record(sdk=_image(spec_path))) + "\n")
    data = yaml.safe_load(spec_path.read_text())
    data["tags"] = {f"team-{i}": "x" for i in range(46)}
    spec_path.write_text(yaml.safe_dump(data, sort_keys=False))
    before = spec_path.read_text()
    assert main(["calibrate", str(records), "--spec", str(spec_path)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"error: {spec_path}: tags: 46 tags;")
    assert spec_path.read_text() == before
