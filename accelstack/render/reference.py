"""`accelstack trial --reference`: the shipped reference benchmark as the trial's entrypoint.

The trial runs `accelstack_reference.py` (accelstack/trial/reference.py, copied beside the
scripts with its shape planner `accelstack_shape.py`, accelstack/trial/shape.py) instead of the
user's entrypoint, with the spec's model as arguments: its size, layers and hidden size (the
Llama shape's heads, KV heads, vocabulary and MLP width are derived by the planner unless
given here), the sequence lengths to time (default: half the spec's and the spec's), and each
device's memory from the catalog (accelerator memory per process) for devices that do not
report their own (Neuron, CPU; CUDA's own figure wins on the node). The planner fits the shape
to one device at render time too, so `trial` can say what will run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from accelstack.render.artifacts import RenderError
from accelstack.resolve import ResolvedPool, Stack
from accelstack.trial import shape as planner

REFERENCE = "accelstack_reference.py"
SHAPE = "accelstack_shape.py"
_TRIAL = Path(__file__).resolve().parent.parent / "trial"
#: file name beside the scripts -> its source in the package
SOURCES = {REFERENCE: _TRIAL / "reference.py", SHAPE: _TRIAL / "shape.py"}


@dataclass(frozen=True)
class ReferenceOptions:
    """What `trial --reference` may set beyond the spec (None: derived or the default)."""

    sequence_lengths: tuple[int, ...] = ()
    micro_batch_tokens: int | None = None
    heads: int | None = None
    kv_heads: int | None = None
    vocab: int | None = None
    ffn_hidden: int | None = None
    experts: int | None = None
    top_k: int | None = None
    max_layers: int | None = None
    compile: str = "auto"
    checkpointing: bool = False


def sequence_lengths(stack: Stack, opts: ReferenceOptions) -> tuple[int, ...]:
    """The lengths to time: as given, else half the spec's and the spec's."""
    if opts.sequence_lengths:
        return tuple(sorted(set(opts.sequence_lengths)))
    seq = stack.workload.sequence_length
    if seq is None:
        raise RenderError(
            "--reference: the spec has no workload.sequence_length; give --sequence-lengths "
            "(two or more, e.g. 4096,8192)"
        )
    return (seq // 2, seq) if seq >= 256 else (seq,)


def device_memory_gib(pool: ResolvedPool) -> float:
    """Accelerator memory per process of the pool (catalog): one GPU, or a Neuron process's
    share of its chip's memory."""
    return pool.instance.accelerator_memory_gib / max(1, pool.procs_per_node)


def spec_shape(stack: Stack, opts: ReferenceOptions) -> planner.Shape:
    """The spec's model as a Llama shape (RenderError: sizes that do not make one)."""
    m = stack.workload.model
    if not (m.layers and m.hidden_size):
        raise RenderError(
            "--reference: the benchmark runs the spec's shape: set workload.model.layers and "
            "workload.model.hidden_size"
        )
    try:
        return planner.llama_shape(
            m.params_billion,
            m.layers,
            m.hidden_size,
            heads=opts.heads,
            kv_heads=opts.kv_heads,
            vocab=opts.vocab,
            ffn=opts.ffn_hidden,
            active_params_billion=m.active_params_billion,
            experts=opts.experts,
            top_k=opts.top_k,
        )
    except planner.ShapeError as exc:
        raise RenderError(f"--reference: {exc}") from None


def check_pool(pool: ResolvedPool) -> None:
    fw = pool.framework
    if fw is None or not fw.reference_benchmark:
        name = fw.name if fw else "none"
        raise RenderError(
            f"--reference: pool '{pool.name}' runs the {name} training path; the reference "
            "benchmark is eager PyTorch (CUDA, or TorchNeuron on trn2/trn3): trial it with your "
            "own entrypoint"
        )


def planned(stack: Stack, pool: ResolvedPool, opts: ReferenceOptions) -> planner.Shape:
    """The shape one device of `pool` will run (the node re-plans from CUDA's own memory)."""
    seqs = sequence_lengths(stack, opts)
    tokens = opts.micro_batch_tokens or seqs[-1]
    memory = int(device_memory_gib(pool) * 2**30)
    try:
        return planner.fit(
            spec_shape(stack, opts),
            memory,
            tokens,
            checkpointing=opts.checkpointing,
            max_layers=opts.max_layers,
        )
    except planner.ShapeError as exc:
        raise RenderError(f"--reference on pool '{pool.name}': {exc}") from None


def reference_args(
    stack: Stack, pool: ResolvedPool, opts: ReferenceOptions, where: str
) -> list[str]:
    """The benchmark's path (in directory `where`) and arguments for `pool`."""
    check_pool(pool)
    planned(stack, pool, opts)  # refuse here what would not fit on the node
    m = stack.workload.model
    args = [
        f"{where}/{REFERENCE}",
        *("--params-billion", f"{m.params_billion:g}"),
        *("--layers", str(m.layers), "--hidden-size", str(m.hidden_size)),
        *("--sequence-lengths", ",".join(map(str, sequence_lengths(stack, opts)))),
        *("--device-memory-gib", f"{device_memory_gib(pool):g}"),
        *("--compile", opts.compile, "--checkpointing", "on" if opts.checkpointing else "off"),
    ]
    optional = {
        "--active-params-billion": m.active_params_billion,
        "--heads": opts.heads,
        "--kv-heads": opts.kv_heads,
        "--vocab": opts.vocab,
        "--ffn-hidden": opts.ffn_hidden,
        "--experts": opts.experts,
        "--top-k": opts.top_k,
        "--micro-batch-tokens": opts.micro_batch_tokens,
        "--max-layers": opts.max_layers,
    }
    for flag, value in optional.items():
        if value is not None:
            args += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    return args


def reference_notes(stack: Stack, pools: list[ResolvedPool], opts: ReferenceOptions) -> list[str]:
    """One line per pool: the shape that will run and how it was scaled; a note when the
    spec trains at another precision than the benchmark's BF16."""
    out = []
    seqs = ", ".join(f"{s:,}" for s in sequence_lengths(stack, opts))
    for pool in pools:
        s = planned(stack, pool, opts)
        moe = f", {s.experts} experts top-{s.top_k}" if s.experts else ""
        scaled = "; ".join(s.notes)
        out.append(
            f"pool {pool.name}: the reference runs {s.layers} layer(s) of hidden {s.hidden}, "
            f"{s.heads} heads / {s.kv_heads} KV heads, vocabulary {s.vocab:,}, MLP {s.ffn}{moe} "
            f"at sequence lengths {seqs} ({scaled})"
        )
    if stack.workload.precision != "bf16":
        out.append(
            f"the spec trains at {stack.workload.precision}; the reference benchmark runs BF16, "
            "so its records calibrate BF16 estimates only"
        )
    return out
