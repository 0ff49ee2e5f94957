"""Time a short trial of a training entrypoint; append one throughput record per node.

Pure standard library (torch is only asked for its version and, when CUDA is initialised, to
synchronise before a step is timed), so `accelstack trial` copies this file next to the launch
script as `accelstack_trial.py` and the training host needs nothing installed from accelstack.

How the trial job uses it (what `accelstack trial` renders): torchrun starts

    accelstack_trial.py ENTRYPOINT [ARGS...]

in every worker. The wrapper runs ENTRYPOINT as `__main__` in the same process (like
`python ENTRYPOINT ARGS`), and the entrypoint reports each finished optimizer step:

    try:
        from accelstack_trial import step_done  # present only under a trial
    except ImportError:
        def step_done(tokens=None): pass
    ...
    for step in range(int(os.environ.get("ACCELSTACK_MAX_STEPS", total_steps))):
        loss = train_step(batch)
        loss.item()          # materialise the step (XLA: xm.mark_step(); wait for the device)
        step_done()          # or step_done(tokens=N): tokens of this step, whole job

The entrypoint should also say which model actually ran, once, so a proxy model is not
recorded under the full model's size:

    try:
        from accelstack_trial import model_ran
    except ImportError:
        def model_ran(module=None, params=None, name=None): pass
    model_ran(module=model, name="llama3-8b-proxy")   # counts the parameters (measured)
    # or model_ran(params=7.5e9, name="...")          # a size you give

Without it the record carries the spec's size, marked `params_source: spec`.
The entrypoint stops after ACCELSTACK_MAX_STEPS steps (the same variable the Neuron
pre-compile phase sets). The first step holds compilation and warm-up: it is reported as
`compile_s` (from the wrapper's start) and left out of the step time. When the entrypoint
returns, local rank 0 of each node appends one JSON line to ACCELSTACK_TRIAL_RECORDS (fields
in `RECORD_FIELDS`); nothing is written during Neuron's pre-compile pass
(NEURON_PARALLEL_COMPILE=1) or when fewer than two steps were reported (exit 3).
Inside the package, `from accelstack.trial.runner import step_done` reaches the same timer.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import json
import os
import platform
import runpy
import statistics
import sys
import time
from importlib import metadata
from typing import Any

SCHEMA = "accelstack-trial/1"
#: Every record carries these keys (accelstack calibrate reads them).
RECORD_FIELDS = (
    "schema",
    "date",
    "stack",
    "pool",
    "instance_type",
    "nodes",
    "world_size",
    "steps",
    "compile_s",
    "step_time_s",
    "tokens_per_step",
    "tokens_per_s",
    "params_billion",
    "active_params_billion",
    "params_source",
    "model",
    "device_kind",
    "expected_device_kind",
    "layers",
    "hidden_size",
    "sequence_length",
    "global_batch",
    "precision",
    "framework",
    "sdk",
    "host",
)
#: Versions recorded when the distribution is installed.
FRAMEWORK_DISTRIBUTIONS = ("torch", "torch-neuronx", "torch-xla", "neuronx-distributed")
EXIT_TOO_FEW_STEPS = 3


class _Timer:
    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.marks: list[float] = []
        self.tokens: list[int | None] = []
        self.params: float | None = None  # parameters of the model that ran
        self.params_source = "spec"
        self.model: str | None = None

    def step_done(self, tokens: int | None = None) -> None:
        _sync_cuda()
        self.marks.append(time.perf_counter())
        self.tokens.append(tokens)


_TIMER = _Timer()


def _timer() -> _Timer:
    """The wrapper's timer, also when the entrypoint imported the packaged module."""
    host = sys.modules.get("accelstack_trial")
    return getattr(host, "_TIMER", _TIMER) if host is not None else _TIMER


def step_done(tokens: int | None = None) -> None:
    """Mark the end of one optimizer step; `tokens`: tokens of this step, whole job."""
    _timer().step_done(tokens)


def model_ran(module: Any = None, params: float | None = None, name: str | None = None) -> None:
    """Record the model that ran: `module`'s parameters counted (measured), else `params`
    (given); `name` is a free label."""
    timer = _timer()
    if module is not None and hasattr(module, "parameters"):
        timer.params = float(sum(p.numel() for p in module.parameters()))
        timer.params_source = "measured"
    elif params is not None:
        timer.params = float(params)
        timer.params_source = "given"
    timer.model = name


def _sync_cuda() -> None:
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    if cuda is not None and cuda.is_available() and cuda.is_initialized():
        cuda.synchronize()


def _device_kind() -> str:
    """The device kind the step actually ran on: nvidia when CUDA was in use, neuron when
    the host has Neuron devices, else cpu (a record says what ran, not what was asked for)."""
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    if cuda is not None and cuda.is_available() and cuda.is_initialized():
        return "nvidia"
    if os.path.exists("/dev/neuron0"):
        return "neuron"
    return "cpu"


def _env_num(name: str, kind: type = int) -> Any:
    raw = os.environ.get(name, "")
    try:
        return kind(raw) if raw else None
    except ValueError:
        return None


def _active_params(timer: _Timer) -> float | None:
    """The spec's active size of a mixture of experts, when the model that ran is the spec's
    (not counted, or counted within 1% of its total): the FLOPs calibrate counts."""
    active: float | None = _env_num("ACCELSTACK_TRIAL_ACTIVE_PARAMS_BILLION", float)
    total: float | None = _env_num("ACCELSTACK_TRIAL_PARAMS_BILLION", float)
    if active is None or not timer.params:
        return active
    same = total is not None and abs(timer.params / 1e9 - total) <= 0.01 * total
    return active if same else None


def _framework() -> dict[str, str]:
    out = {}
    for dist in FRAMEWORK_DISTRIBUTIONS:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    out["python"] = platform.python_version()
    return out


def build_record(timer: _Timer) -> dict[str, Any]:
    """The node's record from the step marks and the trial's environment."""
    marks = timer.marks
    durations = [b - a for a, b in itertools.pairwise(marks)]
    step_time = statistics.fmean(durations)
    seq = _env_num("ACCELSTACK_TRIAL_SEQUENCE_LENGTH")
    batch = _env_num("ACCELSTACK_TRIAL_GLOBAL_BATCH")
    given = [t for t in timer.tokens[1:] if t is not None]
    per_step = statistics.fmean(given) if given else (seq or 0) * (batch or 0)
    world = _env_num("WORLD_SIZE") or 1
    local = _env_num("LOCAL_WORLD_SIZE") or world
    return {
        "schema": SCHEMA,
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "stack": os.environ.get("ACCELSTACK_TRIAL_STACK", ""),
        "pool": os.environ.get("ACCELSTACK_TRIAL_POOL", ""),
        "instance_type": os.environ.get("ACCELSTACK_TRIAL_INSTANCE_TYPE", ""),
        "nodes": max(1, world // max(1, local)),
        "world_size": world,
        "steps": len(durations),
        "compile_s": marks[0] - timer.start,
        "step_time_s": step_time,
        "tokens_per_step": per_step,
        "tokens_per_s": per_step / step_time if step_time > 0 else 0.0,
        "params_billion": (
            timer.params / 1e9
            if timer.params
            else _env_num("ACCELSTACK_TRIAL_PARAMS_BILLION", float)
        ),
        "active_params_billion": _active_params(timer),
        "params_source": timer.params_source if timer.params else "spec",
        "model": timer.model or os.environ.get("ACCELSTACK_TRIAL_MODEL", ""),
        "device_kind": _device_kind(),
        "expected_device_kind": os.environ.get("ACCELSTACK_TRIAL_DEVICE_KIND", ""),
        "layers": _env_num("ACCELSTACK_TRIAL_LAYERS"),
        "hidden_size": _env_num("ACCELSTACK_TRIAL_HIDDEN_SIZE"),
        "sequence_length": seq,
        "global_batch": batch,
        "precision": os.environ.get("ACCELSTACK_TRIAL_PRECISION", "bf16"),
        "framework": _framework(),
        "sdk": os.environ.get("ACCELSTACK_TRIAL_SDK", ""),
        "host": platform.node(),
    }


#: Prefix of the record line printed to standard output (collected from pod logs).
RECORD_PREFIX = "ACCELSTACK_TRIAL_RECORD "


def append_record(path: str, record: dict[str, Any]) -> None:
    """One line, one write, O_APPEND: lines from several nodes on shared storage stay whole."""
    line = (json.dumps(record, sort_keys=True) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def _run_entrypoint(argv: list[str]) -> None:
    entry = argv[0]
    sys.argv = list(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(entry)))
    try:
        runpy.run_path(entry, run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (None, 0):
            raise


def main(argv: list[str] | None = None) -> int:
    """`accelstack_trial.py ENTRYPOINT [ARGS...]`: run, time, record (local rank 0)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if args else 2
    sys.modules.setdefault("accelstack_trial", sys.modules[__name__])
    _run_entrypoint(args)
    if os.environ.get("NEURON_PARALLEL_COMPILE") == "1" or _env_num("LOCAL_RANK") not in (0, None):
        return 0
    timer = _timer()
    if len(timer.marks) < 2:
        print(
            f"accelstack trial: the entrypoint reported {len(timer.marks)} step(s); at least 2 "
            "are needed (call step_done() after every step)",
            file=sys.stderr,
        )
        return EXIT_TOO_FEW_STEPS
    path = os.environ.get("ACCELSTACK_TRIAL_RECORDS", "trial-records.jsonl")
    record = build_record(timer)
    append_record(path, record)
    # also to the log: on Kubernetes the pod's files go with the pod
    print(RECORD_PREFIX + json.dumps(record, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
