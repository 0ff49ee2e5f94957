"""The run model's facts (throughput.yaml): the step model's rates, scaling, goodput.

Two quantities are kept apart (docs/cost.md, "Two quantities"):

* steady-state throughput: what a training step reaches while it runs, from the step model
  (a dense rate per family, precision, stack and model size, an attention rate per stack,
  the tensor-parallel and expert terms), fitted only to `steady_state` records
  (accelstack.cost.mfu does the fit);
* goodput: the share of the run's wall time that is training steps (restarts after failures,
  checkpoint stalls, evaluation and slow phases), fitted so that `whole_run` records are
  reproduced from steady state x goodput.

`Scaling` holds the efficiency by node count and per-chip batch; `Goodput` its terms. This
module only types and loads the facts; the arithmetic lives in accelstack.cost.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError

from accelstack.catalog.facts import Frozen
from accelstack.errors import CatalogError

Precision = Literal["bf16", "fp16", "fp8"]


class CurveSource(Frozen):
    """The fitted curve an extrapolated one is derived from."""

    family: str
    precision: Precision


class MfuCurve(Frozen):
    """The dense (GEMM) rate of one family and precision: the fraction of the precision's
    peak the linear layers' executed FLOPs run at, against model size (docs/cost.md, "The
    step model").

    rate = intercept + slope x log10(active params in billions, clamped to params_range)
    + stack offset. basis "fitted": the step model's least squares over `records` (every
    steady-state record of the family is fitted at once: dense rates, attention rates, the
    link and expert terms), one additive offset per stack centred on 0; `residual_range` is
    the lowest and highest published / predicted of the curve's dense records (the printed
    range), `sequence_range` the sequence lengths they span. basis "extrapolated": no record
    of its own; the `from_curve` curve x `factor`, with `extra_spread` added to its range;
    `reason` says why.
    """

    family: str
    precisions: tuple[Precision, ...] = Field(min_length=1)
    basis: Literal["fitted", "extrapolated"]
    intercept: float | None = None
    slope: float | None = None
    params_range: tuple[float, float] | None = None
    stacks: dict[str, float] = Field(default_factory=dict)
    residual_range: tuple[float, float] | None = None
    sequence_range: tuple[int, int] | None = None
    records: tuple[str, ...] = ()
    from_curve: CurveSource | None = None
    factor: float = Field(1.0, gt=0)
    extra_spread: float = Field(0.0, ge=0, lt=1)
    reason: str = Field(min_length=1)

    def rate(self, params_billion: float, stack: str | None = None) -> float:
        """Dense rate at this size (the centre of the stacks unless `stack` is named)."""
        if self.intercept is None or self.slope is None or self.params_range is None:
            raise CatalogError("dense-rate curve has no coefficients (resolve from_curve first)")
        lo, hi = self.params_range
        size = min(max(params_billion, lo), hi)
        offset = self.stacks.get(stack, 0.0) if stack else 0.0
        return (self.intercept + self.slope * math.log10(size) + offset) * self.factor

    def decades_outside(self, params_billion: float) -> float:
        """How far (in decades of model size) a size lies outside the records' sizes."""
        if self.params_range is None:
            return 0.0
        lo, hi = self.params_range
        if params_billion < lo:
            return math.log10(lo / params_billion)
        if params_billion > hi:
            return math.log10(params_billion / hi)
        return 0.0

    def doublings_outside(self, sequence: int | None) -> float:
        """How far (in doublings) a sequence length lies outside the records' lengths."""
        if self.sequence_range is None or not sequence:
            return 0.0
        lo, hi = self.sequence_range
        if sequence < lo:
            return math.log2(lo / sequence)
        if sequence > hi:
            return math.log2(sequence / hi)
        return 0.0


class ExpertTerm(Frozen):
    """A mixture of experts' step (fitted to the published MoE rows of the family):

    expert GEMMs run at the dense rate x M / (M + half_rate_tokens), M the tokens one expert
    gets per micro-batch; the dispatch and combine all-to-all moves 4 x top-k x hidden x 2
    bytes per token and MoE layer over the chip link (inside a node) and EFA (across nodes)
    at all_to_all_efficiency of their bandwidth. `residual_range`: the lowest and highest
    published / predicted of the MoE records."""

    half_rate_tokens: float = Field(ge=0)
    all_to_all_efficiency: float = Field(gt=0)
    residual_range: tuple[float, float]
    records: tuple[str, ...] = Field(min_length=1)


class UnmodelledMoe(Frozen):
    """A mixture of experts on a family whose expert term is not fitted: the dense step at
    the active parameters x `centre`, the range x `range` (published / dense-only step of the
    fitted family's MoE records: their geometric mean and extremes)."""

    centre: float = Field(gt=0)
    range: tuple[float, float]
    source: str = Field(min_length=1)


class StepFamily(Frozen):
    """The rest of a family's step model (docs/cost.md, "The step model").

    attention_centre / attention_stacks: the executed rate of causal attention (about half
    the counted 12 L H S FLOPs run), as a fraction of the family's BF16 peak, per stack with
    sequence evidence (the centre: their mean); tensor_parallel_efficiency: the achieved
    fraction of the chip link for the tensor-parallel collectives; experts: the fitted expert
    term (None: a mixture of experts is "unmodelled" on this family). basis "extrapolated":
    `from_family`'s terms (attention_relative_to_dense: its attention-to-dense ratio at the
    model's size instead of its absolute rate); `reason` says why."""

    family: str
    basis: Literal["fitted", "extrapolated"]
    from_family: str | None = None
    attention_centre: float | None = Field(default=None, gt=0, le=1)
    attention_stacks: dict[str, float] = Field(default_factory=dict)
    #: the attention rate's loss per doubling of context parallelism, per stack whose records
    #: ran context-parallel (the centre: their mean)
    context_parallel_loss_centre: float = Field(default=0.0, ge=0, lt=1)
    context_parallel_loss_stacks: dict[str, float] = Field(default_factory=dict)
    attention_relative_to_dense: bool = False
    tensor_parallel_efficiency: float | None = Field(default=None, gt=0)
    experts: ExpertTerm | None = None
    inherit_experts: bool = True  # an extrapolated family takes from_family's expert term
    reason: str = Field(min_length=1)


class Scaling(Frozen):
    """Efficiency against the reference scale (one node, a full per-chip batch):

    (1 - loss_per_node_doubling x log2(nodes)) x min(1, tokens per chip per step /
    full_batch_tokens_per_chip) ** batch_exponent, never below `floor`."""

    loss_per_node_doubling: float = Field(ge=0, lt=1)
    full_batch_tokens_per_chip: float = Field(gt=0)
    batch_exponent: float = Field(ge=0, le=1)
    floor: float = Field(gt=0, le=1)
    node_pairs: tuple[tuple[str, str], ...] = ()  # record pairs the node term is fitted to
    batch_pairs: tuple[tuple[str, str], ...] = ()  # record pairs the batch term is fitted to
    spread: float = Field(ge=0, lt=1)  # relative uncertainty of the node term's coefficient
    source: str = Field(min_length=1)
    #: the tensor-parallel degree the step assumes when the caller gives no layout: rows of
    #: (up to this many billion active parameters, degree), the last row open-ended (null)
    default_tensor_parallel: tuple[tuple[float | None, int], ...] = ()
    default_tensor_parallel_source: str = ""

    def efficiency(
        self, nodes: int, tokens_per_chip: float | None, loss: float | None = None
    ) -> float:
        per_doubling = self.loss_per_node_doubling if loss is None else loss
        node = 1.0 - per_doubling * math.log2(max(1, nodes))
        batch = 1.0
        if tokens_per_chip is not None and tokens_per_chip > 0:
            batch = (
                min(1.0, tokens_per_chip / self.full_batch_tokens_per_chip) ** self.batch_exponent
            )
        return max(self.floor, node * batch)

    def tensor_parallel_for(self, active_params_billion: float) -> int:
        """The default tensor-parallel degree for a model of this (active) size."""
        for upto, degree in self.default_tensor_parallel:
            if upto is None or active_params_billion <= upto:
                return degree
        return 1


class Goodput(Frozen):
    """Share of wall time spent in training steps, and the one-time hours of a run."""

    interruptions_per_node_hour: float = Field(ge=0)
    interruptions_source: str = Field(min_length=1)
    lost_hours_per_interruption: float = Field(ge=0)
    lost_hours_source: str = Field(min_length=1)
    other_loss_fraction: float = Field(ge=0, lt=1)  # fitted to whole-run records
    other_loss_records: tuple[str, ...] = ()
    checkpoint_interval_hours: float = Field(gt=0)
    checkpoint_write_gb_per_s_per_node: float = Field(gt=0)
    checkpoint_source: str = Field(min_length=1)
    bring_up_hours: float = Field(ge=0)
    bring_up_source: str = Field(min_length=1)
    compile_hours: dict[str, float] = Field(default_factory=dict)  # device kind -> estimate
    compile_source: str = Field(min_length=1)
    spread: float = Field(ge=0, lt=1)  # relative uncertainty of the loss terms
    image_pull_gb_per_node: float = Field(ge=0)  # data each node pulls once per run
    image_pull_source: str = Field(min_length=1)


class Spreads(Frozen):
    """Range widths where no record gives one."""

    minimum: float = Field(gt=0, lt=1)  # a fitted curve's range is never narrower
    per_decade_outside: float = Field(ge=0, lt=1)  # sizes beyond the records'
    per_doubling_outside: float = Field(0.0, ge=0, lt=1)  # sequences beyond the records'
    measured: float = Field(gt=0, lt=1)  # a trial measurement on the spec's node count
    carried_per_node_doubling: float = Field(ge=0, lt=1)  # measured on fewer nodes
    carried_per_sequence_doubling: float = Field(ge=0, lt=1)  # measured at another length
    mfu_floor: float = Field(gt=0, lt=1)  # below it no training step (calibrate refuses)


class Calibration(Frozen):
    """What `accelstack calibrate` accepts (docs/cost.md, "calibrate"): enough timed steps, an
    MFU no better than the family's best public record by more than two releases of one
    benchmark differ (plus the measurement spread), and records of one key that agree."""

    min_steps: int = Field(ge=1)  # timed steps per record
    min_steps_source: str = Field(min_length=1)
    # pairs of public records of one benchmark (same model, stack, scale) at two software
    # releases: the largest relative gap between them is the tolerance
    release_pairs: tuple[tuple[str, str], ...] = Field(min_length=1)
    release_pairs_source: str = Field(min_length=1)
    # pairs of public records (BF16, FP8) of one stack, model and scale: the largest FP8
    # throughput gain among them bounds what a measurement on a curve extrapolated at the BF16
    # throughput (factor < 1) may show
    fp8_speedup_pairs: tuple[tuple[str, str], ...] = Field(min_length=1)
    fp8_speedup_source: str = Field(min_length=1)


class Layouts(Frozen):
    """What `compare`'s layout search (accelstack/cost/layout.py) reads: the activation memory
    per layer and token and the shortest sequence per context-parallel rank it tries."""

    activation_bytes: float = Field(gt=0)  # per layer x token x hidden / TP, no recompute
    checkpointed_bytes: float = Field(gt=0)  # per layer x token x hidden / TP, full recompute
    activation_source: str = Field(min_length=1)
    min_context_tokens: int = Field(ge=1)  # sequence per context-parallel rank, at least
    min_context_tokens_source: str = Field(min_length=1)


class Throughput(Frozen):
    curves: tuple[MfuCurve, ...]
    step: tuple[StepFamily, ...] = ()
    unmodelled_moe: UnmodelledMoe | None = None
    scaling: Scaling
    goodput: Goodput
    spreads: Spreads
    calibration: Calibration
    layouts: Layouts
    training_stacks: dict[str, str] = Field(default_factory=dict)  # name -> what it is

    def curve_for(self, family: str, precision: str) -> MfuCurve | None:
        return next(
            (c for c in self.curves if c.family == family and precision in c.precisions), None
        )

    def step_for(self, family: str) -> StepFamily | None:
        return next((s for s in self.step if s.family == family), None)


def parse_throughput(data: object, path: Path) -> Throughput:
    """Validate throughput.yaml's content (`path`: the file named in errors)."""
    try:
        return Throughput.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise CatalogError(f"{path}: {where}: {err['msg']}") from None
