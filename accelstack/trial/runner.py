"""Time a short trial of a training entrypoint; append one throughput record per node and
timed segment.

Pure standard library (torch is only asked for its version and, when CUDA is initialised, to
synchronise before a step is timed and for the device's name), so `accelstack trial` copies
this file next to the launch script as `accelstack_trial.py` and the training host needs
nothing installed from accelstack.

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
        from accelstack_trial import model_ran, shape_ran
    except ImportError:
        def model_ran(module=None, params=None, name=None): pass
        def shape_ran(**what): pass
    model_ran(module=model, name="llama3-8b-proxy")   # counts the parameters (measured)
    # or model_ran(params=7.5e9, name="...")          # a size you give
    shape_ran(layers=4, hidden_size=4096, heads=32, kv_heads=8, vocab=128256,
              sequence_length=8192, micro_batch=1)    # the shape that ran (SHAPE_FIELDS)

Without model_ran the record carries the spec's size (`params_source: spec`); without
shape_ran its layers, hidden size and sequence are the spec's (`shape_source: spec`). Each
shape_ran call starts a new timed segment (one record each): the reference benchmark
(`accelstack trial --reference`) times one segment per sequence length.

The entrypoint stops after ACCELSTACK_MAX_STEPS steps per segment (the same variable the
Neuron pre-compile phase sets). The first step of a segment holds compilation and warm-up:
it is reported as `compile_s` (from the wrapper's start, or from the segment's shape_ran)
and left out of the step time. When the entrypoint returns, local rank 0 of each node appends
one JSON line per segment of at least two steps to ACCELSTACK_TRIAL_RECORDS (fields in
`RECORD_FIELDS`); nothing is written during Neuron's pre-compile pass
(NEURON_PARALLEL_COMPILE=1) or when no segment has two steps (exit 3). The device the steps
ran on is named from torch (CUDA) or /proc/cpuinfo (CPU), and a Neuron host's instance type
from `neuron-ls` (its first lines name it: "instance-type: trn2.48xlarge",
https://awsdocs-neuron.readthedocs-hosted.com/en/latest/tools/neuron-sys-tools/neuron-ls.html).
Inside the package, `from accelstack.trial.runner import step_done` reaches the same timer.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import json
import math
import os
import platform
import runpy
import shutil
import statistics
import subprocess
import sys
import time
from importlib import metadata
from typing import Any

SCHEMA = "accelstack-trial/2"
#: Every record carries these keys (accelstack calibrate reads them).
RECORD_FIELDS = (
    "schema",
    "date",
    "stack",
    "pool",
    "instance_type",
    "nodes",
    "world_size",
    "devices",
    "steps",
    "compile_s",
    "step_time_s",
    "step_times_s",
    "tokens_per_step",
    "tokens_per_s",
    "tokens_per_chip",
    "params_billion",
    "active_params_billion",
    "params_source",
    "model",
    "device_kind",
    "expected_device_kind",
    "device_model",
    "host_instance_type",
    "layers",
    "hidden_size",
    "heads",
    "kv_heads",
    "vocab",
    "ffn_hidden",
    "experts",
    "top_k",
    "sequence_length",
    "micro_batch",
    "global_batch",
    "shape_source",
    "target",
    "scaled",
    "precision",
    "dtype",
    "compiled",
    "activation_checkpointing",
    "training_stack",
    "benchmark",
    "framework",
    "sdk",
    "host",
)
#: What an entrypoint may report with shape_ran() (each a record field of the same name).
SHAPE_FIELDS = frozenset(
    {
        "layers",
        "hidden_size",
        "heads",
        "kv_heads",
        "vocab",
        "ffn_hidden",
        "experts",
        "top_k",
        "sequence_length",
        "micro_batch",
        "devices",
        "active_params_billion",
        "precision",
        "dtype",
        "compiled",
        "activation_checkpointing",
        "training_stack",
        "device_model",
        "benchmark",
        "target",
        "scaled",
    }
)
#: shape_ran() keys that make a record's shape "reported" rather than the spec's.
_SHAPE_KEYS = ("layers", "hidden_size", "sequence_length")
#: Versions recorded when the distribution is installed.
FRAMEWORK_DISTRIBUTIONS = (
    "torch",
    "torch-neuronx",
    "torch-xla",
    "neuronx-distributed",
    "neuronx-cc",
)
EXIT_TOO_FEW_STEPS = 3
PROBE_TIMEOUT_S = 10


class _Segment:
    """Steps timed under one reported shape (or the spec's, when none was reported)."""

    def __init__(self, start: float, shape: dict[str, Any]) -> None:
        self.start = start
        self.shape = shape
        self.marks: list[float] = []
        self.tokens: list[int | None] = []
        self.params: float | None = None
        self.params_source = "spec"
        self.model: str | None = None


class _Timer:
    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.segments: list[_Segment] = []
        self.params: float | None = None  # parameters of the model that ran
        self.params_source = "spec"
        self.model: str | None = None

    def current(self) -> _Segment:
        if not self.segments:
            self.segments.append(_Segment(self.start, {}))
        return self.segments[-1]

    def begin(self, shape: dict[str, Any]) -> None:
        start = time.perf_counter() if self.segments else self.start
        self.segments.append(_Segment(start, shape))

    def step_done(self, tokens: int | None = None) -> None:
        _sync_cuda()
        seg = self.current()
        seg.marks.append(time.perf_counter())
        seg.tokens.append(tokens)


_TIMER = _Timer()


def _timer() -> _Timer:
    """The wrapper's timer, also when the entrypoint imported the packaged module."""
    host = sys.modules.get("accelstack_trial")
    return getattr(host, "_TIMER", _TIMER) if host is not None else _TIMER


def step_done(tokens: int | None = None) -> None:
    """Mark the end of one optimizer step; `tokens`: tokens of this step, whole job."""
    _timer().step_done(tokens)


def shape_ran(**what: Any) -> None:
    """Say what runs from here on (keys: SHAPE_FIELDS); starts a new timed segment."""
    unknown = sorted(set(what) - SHAPE_FIELDS)
    if unknown:
        raise TypeError(f"shape_ran: unknown field(s) {', '.join(unknown)}")
    _timer().begin(dict(what))


def model_ran(module: Any = None, params: float | None = None, name: str | None = None) -> None:
    """Record the model that ran: `module`'s parameters counted (measured), else `params`
    (given); `name` is a free label. Applies to the current segment and those after it."""
    timer = _timer()
    if module is not None and hasattr(module, "parameters"):
        timer.params = float(sum(p.numel() for p in module.parameters()))
        timer.params_source = "measured"
    elif params is not None:
        timer.params = float(params)
        timer.params_source = "given"
    timer.model = name
    if timer.segments:
        seg = timer.segments[-1]
        seg.params, seg.params_source, seg.model = timer.params, timer.params_source, name


def _cuda() -> Any:
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    if cuda is not None and cuda.is_available() and cuda.is_initialized():
        return cuda
    return None


def _sync_cuda() -> None:
    cuda = _cuda()
    if cuda is not None:
        cuda.synchronize()


def _device_kind() -> str:
    """The device kind the step actually ran on: nvidia when CUDA was in use, neuron when
    the host has Neuron devices, else cpu (a record says what ran, not what was asked for)."""
    if _cuda() is not None:
        return "nvidia"
    if os.path.exists("/dev/neuron0"):
        return "neuron"
    return "cpu"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _device_model(kind: str) -> str | None:
    """What the device calls itself: CUDA's device name, the CPU's model name; Neuron
    devices report none (the host's instance type names them: `_host_instance_type`)."""
    cuda = _cuda()
    if kind == "nvidia" and cuda is not None:
        return str(cuda.get_device_name(cuda.current_device()))
    return _cpu_model() if kind == "cpu" else None


def _host_instance_type(kind: str) -> str | None:
    """A Neuron host's instance type, from the first lines of `neuron-ls`."""
    tool = shutil.which("neuron-ls") if kind == "neuron" else None
    if tool is None:
        return None
    try:
        out = subprocess.run(
            [tool], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "instance-type" and value.strip():
            return value.strip()
    return None


def _env_num(name: str, kind: type = int) -> Any:
    raw = os.environ.get(name, "")
    try:
        return kind(raw) if raw else None
    except ValueError:
        return None


def _active_params(timer: _Timer, seg: _Segment | None = None) -> float | None:
    """The active size of a mixture of experts: reported with the shape, else the spec's
    when the model that ran is the spec's (not counted, or counted within 1% of its total):
    the FLOPs calibrate counts."""
    reported = seg.shape.get("active_params_billion") if seg is not None else None
    if reported is not None:
        return float(reported)
    counted = seg.params if seg is not None and seg.params else timer.params
    active: float | None = _env_num("ACCELSTACK_TRIAL_ACTIVE_PARAMS_BILLION", float)
    total: float | None = _env_num("ACCELSTACK_TRIAL_PARAMS_BILLION", float)
    if active is None or not counted:
        return active
    same = total is not None and abs(counted / 1e9 - total) <= 0.01 * total
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


def _timing(seg: _Segment) -> dict[str, Any]:
    durations = [b - a for a, b in itertools.pairwise(seg.marks)]
    return {
        "steps": len(durations),
        "compile_s": seg.marks[0] - seg.start,
        "step_time_s": statistics.fmean(durations),
        "step_times_s": [round(d, 6) for d in durations],
    }


def _shape(seg: _Segment) -> dict[str, Any]:
    """The shape that ran: as reported, else the spec's layers, hidden size and sequence."""
    reported = any(seg.shape.get(k) is not None for k in _SHAPE_KEYS)
    spec = {
        "layers": _env_num("ACCELSTACK_TRIAL_LAYERS"),
        "hidden_size": _env_num("ACCELSTACK_TRIAL_HIDDEN_SIZE"),
        "sequence_length": _env_num("ACCELSTACK_TRIAL_SEQUENCE_LENGTH"),
    }
    out: dict[str, Any] = {k: None for k in SHAPE_FIELDS if k != "active_params_billion"}
    out.update({k: v for k, v in seg.shape.items() if v is not None})
    out.pop("active_params_billion", None)
    missing = [k for k in _SHAPE_KEYS if out[k] is None and spec[k] is not None]
    out.update({k: spec[k] for k in missing})
    if not reported:
        out["shape_source"] = "spec"
    else:
        fallback = f" ({', '.join(missing)} from the spec)" if missing else ""
        out["shape_source"] = f"reported{fallback}"
    out["precision"] = out["precision"] or os.environ.get("ACCELSTACK_TRIAL_PRECISION", "bf16")
    out["training_stack"] = out["training_stack"] or os.environ.get(
        "ACCELSTACK_TRIAL_TRAINING_STACK", ""
    )
    out["benchmark"] = out["benchmark"] or "entrypoint"
    return out


def _tokens(seg: _Segment, shape: dict[str, Any], world: int) -> float:
    """Tokens of one step, whole job: as step_done reported them, else the reported
    micro-batch x sequence x world size, else the spec's global batch x sequence."""
    given = [t for t in seg.tokens[1:] if t is not None]
    if given:
        return statistics.fmean(given)
    seq, mb = shape.get("sequence_length"), shape.get("micro_batch")
    if seq and mb:
        return float(seq * mb * world)
    batch = _env_num("ACCELSTACK_TRIAL_GLOBAL_BATCH")
    return float((_env_num("ACCELSTACK_TRIAL_SEQUENCE_LENGTH") or 0) * (batch or 0))


def _model(timer: _Timer, seg: _Segment) -> dict[str, Any]:
    params = seg.params or timer.params
    return {
        "params_billion": (
            params / 1e9 if params else _env_num("ACCELSTACK_TRIAL_PARAMS_BILLION", float)
        ),
        "active_params_billion": _active_params(timer, seg),
        "params_source": (seg.params_source if seg.params else timer.params_source)
        if params
        else "spec",
        "model": seg.model or timer.model or os.environ.get("ACCELSTACK_TRIAL_MODEL", ""),
    }


def _devices(shape: dict[str, Any], world: int) -> int:
    """Accelerators the job ran on: as reported, else its processes over the pool's
    processes per accelerator (ACCELSTACK_TRIAL_RANKS_PER_DEVICE: 1 per GPU, NeuronCores)."""
    if shape.get("devices"):
        return int(shape["devices"])
    per = _env_num("ACCELSTACK_TRIAL_RANKS_PER_DEVICE") or 1
    return max(1, math.ceil(world / per))


def build_record(timer: _Timer, seg: _Segment | None = None) -> dict[str, Any]:
    """One segment's record (default: the last) from its step marks and the environment."""
    seg = seg if seg is not None else timer.current()
    timing = _timing(seg)
    world = _env_num("WORLD_SIZE") or 1
    local = _env_num("LOCAL_WORLD_SIZE") or world
    shape = _shape(seg)
    per_step = _tokens(seg, shape, world)
    devices = _devices(shape, world)
    kind = _device_kind()
    step_time = timing["step_time_s"]
    rec: dict[str, Any] = {
        "schema": SCHEMA,
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "stack": os.environ.get("ACCELSTACK_TRIAL_STACK", ""),
        "pool": os.environ.get("ACCELSTACK_TRIAL_POOL", ""),
        "instance_type": os.environ.get("ACCELSTACK_TRIAL_INSTANCE_TYPE", ""),
        "nodes": max(1, world // max(1, local)),
        "world_size": world,
        **timing,
        "tokens_per_step": per_step,
        "tokens_per_s": per_step / step_time if step_time > 0 else 0.0,
        "global_batch": _env_num("ACCELSTACK_TRIAL_GLOBAL_BATCH"),
        **_model(timer, seg),
        "device_kind": kind,
        "expected_device_kind": os.environ.get("ACCELSTACK_TRIAL_DEVICE_KIND", ""),
        "host_instance_type": _host_instance_type(kind),
        **shape,
        "devices": devices,
        "tokens_per_chip": per_step / devices,
        "framework": _framework(),
        "sdk": os.environ.get("ACCELSTACK_TRIAL_SDK", ""),
        "host": platform.node(),
    }
    rec["device_model"] = rec["device_model"] or _device_model(kind)
    return rec


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


def _timed(timer: _Timer) -> list[_Segment]:
    """The segments with at least two steps; a note on stderr for each one without."""
    out = []
    if not timer.segments:
        print(
            "accelstack trial: the entrypoint reported 0 steps; at least 2 are needed "
            "(call step_done() after every step)",
            file=sys.stderr,
        )
    for i, seg in enumerate(timer.segments):
        if len(seg.marks) >= 2:
            out.append(seg)
        else:
            print(
                f"accelstack trial: segment {i + 1} ({seg.shape.get('sequence_length') or 'spec'}"
                f" tokens) reported {len(seg.marks)} step(s); at least 2 are needed (call "
                "step_done() after every step)",
                file=sys.stderr,
            )
    return out


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
    segments = _timed(timer)
    if not segments:
        return EXIT_TOO_FEW_STEPS
    path = os.environ.get("ACCELSTACK_TRIAL_RECORDS", "trial-records.jsonl")
    for seg in segments:
        record = build_record(timer, seg)
        append_record(path, record)
        # also to the log: on Kubernetes the pod's files go with the pod
        print(RECORD_PREFIX + json.dumps(record, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
