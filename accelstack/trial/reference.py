"""The reference benchmark of `accelstack trial --reference`: a Llama-shaped decoder (dense, or
a mixture of experts) at the spec's shape, scaled down to fit one device, trained for
ACCELSTACK_MAX_STEPS steps at each of several sequence lengths, data parallel over every
process torchrun starts. No user code: the trial copies this file beside the scripts as
`accelstack_reference.py` and runs it under the trial wrapper (`accelstack_trial.py`), which
times the steps and writes one record per sequence length and node.

What runs (each fact is in the record):

* the shape: accelstack/trial/shape.py (`llama_shape` from the spec's size, layers and hidden
  size; `fit` to the device: fewer layers first, the notes say what changed), with RMSNorm,
  rotary position embeddings, grouped-query causal attention through
  `torch.nn.functional.scaled_dot_product_attention` and a SwiGLU MLP; a mixture of experts
  routes each token to its top-k experts with a fixed capacity per expert (static shapes for
  the compilers; tokens over capacity are dropped, as in Switch Transformer, Fedus et al. 2021,
  arXiv:2101.03961, section 2.2) and computes all experts with batched matrix products;
* the step: random token ids, BF16 autocast (FP32 weights), cross-entropy over the whole
  vocabulary, backward, AdamW; DistributedDataParallel over the job; optional activation
  checkpointing per layer (torch.utils.checkpoint) and torch.compile;
* the device: CUDA with NCCL when CUDA is there; Trainium through TorchNeuron (native PyTorch:
  device `neuron`, process-group backend `neuron`, `torch.autocast(device_type="neuron")`,
  `torch.compile(backend="neuron")`, `torch.accelerator` for the device; Neuron 2.33+, Trn2
  and Trn3: TorchNeuron docs,
  https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html ("What changes are
  needed?"),
  https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/torch-distributed.html
  (backend="neuron", torch.device("neuron")) and
  https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/index.html); else the
  CPU with gloo (the tests). The launch script's ACCELSTACK_DIST_BACKEND (the catalog's backend
  of the pool's training path) wins.

Not tested here on Trainium (no device in the test suite): the Neuron path is the documented
calls above and nothing else.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

if TYPE_CHECKING:
    from accelstack.trial import runner as trial
    from accelstack.trial import shape as planner
else:  # beside the trial scripts on a node (no accelstack installed), else the package
    try:
        import accelstack_trial as trial
    except ImportError:
        from accelstack.trial import runner as trial
    try:
        import accelstack_shape as planner
    except ImportError:
        from accelstack.trial import shape as planner

BENCHMARK = "accelstack-reference/1"
TRAINING_STACK = "accelstack-reference"
#: Llama 3's rotary base (meta-llama/llama-models@084b88e9 models/sku_list.py rope_theta)
ROPE_THETA = 500000.0
CAPACITY_FACTOR = 1.25  # tokens per expert slot over the even share (Switch Transformer)


# --------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------


def rope_tables(seq: int, head_dim: int, device: torch.device) -> tuple[torch.Tensor, ...]:
    inv = 1.0 / (ROPE_THETA ** (torch.arange(0, head_dim, 2, device=device) / head_dim))
    angles = torch.outer(torch.arange(seq, device=device, dtype=inv.dtype), inv)
    return angles.cos(), angles.sin()


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding of x (batch, heads, seq, head_dim), halves rotated."""
    a, b = x.chunk(2, dim=-1)
    c, s = cos.to(x.dtype), sin.to(x.dtype)
    return torch.cat((a * c - b * s, a * s + b * c), dim=-1)


class Attention(nn.Module):
    def __init__(self, s: planner.Shape) -> None:
        super().__init__()
        d = s.head_dim
        self.heads, self.kv_heads, self.head_dim = s.heads, s.kv_heads, d
        self.wq = nn.Linear(s.hidden, s.heads * d, bias=False)
        self.wk = nn.Linear(s.hidden, s.kv_heads * d, bias=False)
        self.wv = nn.Linear(s.hidden, s.kv_heads * d, bias=False)
        self.wo = nn.Linear(s.heads * d, s.hidden, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q = self.wq(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        groups = self.heads // self.kv_heads
        if groups > 1:  # grouped-query attention: each KV head serves `groups` query heads
            k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(out.transpose(1, 2).reshape(b, t, -1))  # type: ignore[no-any-return]


class SwiGlu(nn.Module):
    def __init__(self, hidden: int, ffn: int) -> None:
        super().__init__()
        self.w1 = nn.Linear(hidden, ffn, bias=False)
        self.w3 = nn.Linear(hidden, ffn, bias=False)
        self.w2 = nn.Linear(ffn, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))  # type: ignore[no-any-return]


class Experts(nn.Module):
    """Top-k routing to SwiGLU experts with a fixed capacity per expert."""

    def __init__(self, s: planner.Shape) -> None:
        super().__init__()
        self.experts, self.top_k = s.experts, s.top_k
        self.router = nn.Linear(s.hidden, s.experts, bias=False)
        scale = 0.02
        self.w1 = nn.Parameter(torch.randn(s.experts, s.hidden, s.ffn) * scale)
        self.w3 = nn.Parameter(torch.randn(s.experts, s.hidden, s.ffn) * scale)
        self.w2 = nn.Parameter(torch.randn(s.experts, s.ffn, s.hidden) * scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape, h = x.shape, x.shape[-1]
        flat = x.reshape(-1, h)
        tokens, e = flat.shape[0], self.experts
        weight, chosen = self.router(flat).float().softmax(-1).topk(self.top_k, dim=-1)
        weight = weight / weight.sum(-1, keepdim=True)
        cap = math.ceil(CAPACITY_FACTOR * tokens * self.top_k / e)
        which = chosen.reshape(-1)
        pos = _positions(which, e)
        kept = pos < cap
        slot = torch.where(kept, which * cap + pos, torch.full_like(pos, e * cap))
        src = flat.repeat_interleave(self.top_k, dim=0)
        buf = flat.new_zeros(e * cap + 1, h).index_copy(0, slot, src)[: e * cap].view(e, cap, h)
        out = torch.bmm(F.silu(torch.bmm(buf, self.w1)) * torch.bmm(buf, self.w3), self.w2)
        out = torch.cat((out.reshape(e * cap, h), out.new_zeros(1, h)))[slot]
        out = out * (weight.reshape(-1, 1) * kept[:, None]).to(out.dtype)
        combined: torch.Tensor = out.view(tokens, self.top_k, h).sum(1).view(shape)
        return combined


def _positions(which: torch.Tensor, experts: int) -> torch.Tensor:
    """Each routed token's place in its expert's queue, in token order (a stable sort by
    expert, no tokens x experts tensor)."""
    order = which.argsort(stable=True)
    counts = torch.bincount(which, minlength=experts)
    starts = counts.cumsum(0) - counts
    ranked = torch.arange(which.numel(), device=which.device) - starts[which[order]]
    return torch.empty_like(ranked).scatter_(0, order, ranked)


class Block(nn.Module):
    def __init__(self, s: planner.Shape) -> None:
        super().__init__()
        self.norm1 = nn.RMSNorm(s.hidden)
        self.attn = Attention(s)
        self.norm2 = nn.RMSNorm(s.hidden)
        self.mlp: nn.Module = Experts(s) if s.experts else SwiGlu(s.hidden, s.ffn)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x), cos, sin)
        return x + self.mlp(self.norm2(x))  # type: ignore[no-any-return]


class Decoder(nn.Module):
    def __init__(self, s: planner.Shape, checkpointing: bool) -> None:
        super().__init__()
        self.shape, self.checkpointing = s, checkpointing
        self.embed = nn.Embedding(s.vocab, s.hidden)
        self.blocks = nn.ModuleList(Block(s) for _ in range(s.layers))
        self.norm = nn.RMSNorm(s.hidden)
        self.head = nn.Linear(s.hidden, s.vocab, bias=False)

    def forward(self, ids: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        cos, sin = rope_tables(ids.shape[1], self.shape.head_dim, ids.device)
        x = self.embed(ids)
        for block in self.blocks:
            if self.checkpointing and self.training:
                x = checkpoint(block, x, cos, sin, use_reentrant=False)
            else:
                x = block(x, cos, sin)
        logits = self.head(self.norm(x))
        return F.cross_entropy(logits.float().flatten(0, 1), targets.flatten())


# --------------------------------------------------------------------------------------
# The device, the process group and the step
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Device:
    device: torch.device
    backend: str
    kind: str  # cuda | neuron | cpu
    memory_bytes: int | None  # what the device itself reports, when it does


def pick_device(local_rank: int) -> Device:
    """CUDA, else TorchNeuron's `neuron` device (torch.accelerator names it once TorchNeuron
    is loaded), else the CPU; the launch script's ACCELSTACK_DIST_BACKEND wins."""
    backend = os.environ.get("ACCELSTACK_DIST_BACKEND", "")
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        dev = torch.device("cuda", local_rank)
        total = torch.cuda.get_device_properties(dev).total_memory
        return Device(dev, backend or "nccl", "cuda", int(total))
    acc = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else None
    if acc is not None and acc.type == "neuron":
        return Device(torch.device("neuron"), backend or "neuron", "neuron", None)
    return Device(torch.device("cpu"), backend or "gloo", "cpu", None)


def synchronize(dev: Device) -> None:
    if dev.kind != "cpu":
        torch.accelerator.synchronize()


@dataclass(frozen=True)
class Run:
    """What one timed segment runs (the rest of the record comes from the wrapper)."""

    shape: planner.Shape
    sequence: int
    micro_batch: int
    compiled: bool
    checkpointing: bool
    target: dict[str, Any]

    def report(self, dev: Device, world: int, active_params: float) -> dict[str, Any]:
        return {
            **self.shape.as_record(),
            "sequence_length": self.sequence,
            "micro_batch": self.micro_batch,
            "active_params_billion": active_params / 1e9 if self.shape.experts else None,
            "precision": "bf16",
            "dtype": "bfloat16 autocast, float32 weights",
            "compiled": self.compiled,
            "activation_checkpointing": self.checkpointing,
            "training_stack": TRAINING_STACK,
            "benchmark": BENCHMARK,
            "devices": world if dev.kind != "neuron" else None,
            "target": self.target,
            "scaled": list(self.shape.notes),
        }


def make_step(
    model: nn.Module, opt: torch.optim.Optimizer, dev: Device
) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    def step(ids: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        with torch.autocast(device_type=dev.device.type, dtype=torch.bfloat16):
            loss = model(ids, targets)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.detach()  # type: ignore[no-any-return]

    return step


def time_segment(
    run: Run, step: Callable[..., torch.Tensor], dev: Device, steps: int, raw: nn.Module
) -> None:
    """ACCELSTACK_MAX_STEPS steps at one sequence length, each reported to the wrapper."""
    world = dist.get_world_size()
    trial.shape_ran(**run.report(dev, world, float(run.shape.active_params())))
    trial.model_ran(module=raw, name=f"llama-shaped {run.shape.layers}-layer reference")
    gen = torch.Generator(device="cpu").manual_seed(dist.get_rank())
    tokens = run.micro_batch * run.sequence * world
    for _ in range(steps):
        ids = torch.randint(run.shape.vocab, (run.micro_batch, run.sequence + 1), generator=gen)
        ids = ids.to(dev.device)
        loss = step(ids[:, :-1], ids[:, 1:])
        loss.item()  # materialise the step
        synchronize(dev)
        trial.step_done(tokens=tokens)


# --------------------------------------------------------------------------------------
# The command line
# --------------------------------------------------------------------------------------


def parse(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="accelstack_reference.py", description=__doc__.split("\n")[0])
    p.add_argument("--params-billion", type=float, required=True)
    p.add_argument("--layers", type=int, required=True)
    p.add_argument("--hidden-size", type=int, required=True)
    p.add_argument("--heads", type=int)
    p.add_argument("--kv-heads", type=int)
    p.add_argument("--vocab", type=int)
    p.add_argument("--ffn-hidden", type=int)
    p.add_argument("--active-params-billion", type=float)
    p.add_argument("--experts", type=int)
    p.add_argument("--top-k", type=int)
    p.add_argument("--sequence-lengths", required=True, help="comma-separated, e.g. 4096,8192")
    p.add_argument("--micro-batch-tokens", type=int, help="tokens per process per step")
    p.add_argument("--max-layers", type=int)
    p.add_argument("--device-memory-gib", type=float, help="when the device does not say")
    p.add_argument("--compile", choices=("auto", "on", "off"), default="auto")
    p.add_argument("--checkpointing", choices=("on", "off"), default="off")
    return p.parse_args(list(argv))


def spec_shape(a: argparse.Namespace) -> planner.Shape:
    return planner.llama_shape(
        a.params_billion,
        a.layers,
        a.hidden_size,
        heads=a.heads,
        kv_heads=a.kv_heads,
        vocab=a.vocab,
        ffn=a.ffn_hidden,
        active_params_billion=a.active_params_billion,
        experts=a.experts,
        top_k=a.top_k,
    )


def plan(a: argparse.Namespace, dev: Device) -> tuple[planner.Shape, list[int], int]:
    """(shape that runs, sequence lengths ascending, micro-batch tokens per process)."""
    seqs = sorted({int(x) for x in str(a.sequence_lengths).split(",") if x.strip()})
    tokens = a.micro_batch_tokens or seqs[-1]
    memory = dev.memory_bytes or int((a.device_memory_gib or 0) * 2**30)
    if memory <= 0:
        raise planner.ShapeError("the device does not report its memory: give --device-memory-gib")
    full = spec_shape(a)
    ran = planner.fit(
        full, memory, tokens, checkpointing=a.checkpointing == "on", max_layers=a.max_layers
    )
    return ran, seqs, tokens


def target(a: argparse.Namespace, full: planner.Shape) -> dict[str, Any]:
    """The spec's model the run stands for (calibrate carries the measurement to it)."""
    return {
        "params_billion": a.params_billion,
        "active_params_billion": a.active_params_billion,
        **full.as_record(),
    }


def build(a: argparse.Namespace, dev: Device, shape: planner.Shape) -> tuple[Any, nn.Module, bool]:
    """(step function, the bare model, compiled?)."""
    torch.manual_seed(0)
    raw = Decoder(shape, a.checkpointing == "on").to(dev.device)
    ddp: nn.Module = nn.parallel.DistributedDataParallel(
        raw, device_ids=[dev.device.index] if dev.kind == "cuda" else None
    )
    compiled = a.compile == "on" or (a.compile == "auto" and dev.kind != "cpu")
    if compiled:
        backend = "neuron" if dev.kind == "neuron" else "inductor"
        ddp = torch.compile(ddp, backend=backend)  # type: ignore[assignment]
    opt = torch.optim.AdamW(raw.parameters(), lr=1e-4)
    return make_step(ddp, opt, dev), raw, compiled


def main(argv: Sequence[str] | None = None) -> int:
    a = parse(sys.argv[1:] if argv is None else argv)
    local = int(os.environ.get("LOCAL_RANK", "0"))
    dev = pick_device(local)
    try:
        shape, seqs, tokens = plan(a, dev)
    except planner.ShapeError as exc:
        print(f"accelstack reference: {exc}", file=sys.stderr)
        return 2
    dist.init_process_group(dev.backend)
    try:
        _time_segments(a, dev, shape, seqs, tokens)
        dist.barrier()
    finally:
        # The DDP model outlives _time_segments' frame by its reference cycles; left to the
        # collection the interpreter runs as it shuts down, a gloo worker thread freeing the
        # last collective's work waits for the GIL there and the rank aborts ("terminate
        # called without an active exception"; docs/cost.md). Collected now, while the
        # interpreter is whole.
        gc.collect()
        dist.destroy_process_group()
    return 0


def _time_segments(
    a: argparse.Namespace, dev: Device, shape: planner.Shape, seqs: Sequence[int], tokens: int
) -> None:
    step, raw, compiled = build(a, dev, shape)
    steps = int(os.environ.get("ACCELSTACK_MAX_STEPS", "10"))
    aim = target(a, spec_shape(a))
    for seq in seqs:
        run = Run(shape, seq, max(1, tokens // seq), compiled, a.checkpointing == "on", aim)
        time_segment(run, step, dev, steps, raw)


if __name__ == "__main__":
    sys.exit(main())
