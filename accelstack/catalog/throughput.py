"""The run model's facts (throughput.yaml): steady-state MFU curves, scaling, goodput.

Two quantities are kept apart (docs/cost.md, "Two quantities"):

* steady-state MFU: what a training step reaches while it runs, by family, precision, stack
  and model size, fitted only to `steady_state` records (accelstack.cost.mfu does the fit);
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

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from accelstack.errors import CatalogError

Precision = Literal["bf16", "fp16", "fp8"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class CurveSource(_Frozen):
    """The fitted curve an extrapolated one is derived from."""

    family: str
    precision: Precision


class MfuCurve(_Frozen):
    """Reference steady-state MFU (one node, full per-chip batch) against model size.

    mfu = intercept + slope x log10(params_billion clamped to params_range) + stack offset.
    basis "fitted": coefficients are the least-squares fit to `records` (steady-state ones,
    normalised to the reference scale through `Scaling`); each stack gets an additive offset
    (`stacks`, centred on 0), and the estimate uses the centre (offset 0) with a range that
    spans the stacks. basis "extrapolated": no record of its own; the `from_curve` curve x
    `factor`, with `extra_spread` added to its range; `reason` says why.
    """

    family: str
    precisions: tuple[Precision, ...] = Field(min_length=1)
    basis: Literal["fitted", "extrapolated"]
    intercept: float | None = None
    slope: float | None = None
    params_range: tuple[float, float] | None = None
    stacks: dict[str, float] = Field(default_factory=dict)
    residual: float = Field(0.0, ge=0, lt=1)  # largest relative residual of the fit
    # (lowest, highest) published / predicted of the held-out records of this family and
    # precision (records.yaml held_out: true): the range is never narrower than that scatter
    held_out_scatter: tuple[float, float] | None = None
    records: tuple[str, ...] = ()
    from_curve: CurveSource | None = None
    factor: float = Field(1.0, gt=0)
    extra_spread: float = Field(0.0, ge=0, lt=1)
    reason: str = Field(min_length=1)

    def reference(self, params_billion: float, stack: str | None = None) -> float:
        """Reference MFU at this size (the centre of the stacks unless `stack` is named)."""
        if self.intercept is None or self.slope is None or self.params_range is None:
            raise CatalogError("MFU curve has no coefficients (resolve from_curve first)")
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


class Scaling(_Frozen):
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
    # sequence term: min(1, reference_sequence / tokens of a sequence per rank) **
    # sequence_exponent (fitted to `sequence_pairs`; the pairs' lowest and highest exponents
    # are the range)
    reference_sequence: int = Field(8192, ge=1)
    sequence_exponent: float = Field(0.0, ge=0, lt=2)
    sequence_exponent_range: tuple[float, float] = (0.0, 0.0)
    sequence_pairs: tuple[tuple[str, str], ...] = ()
    sequence_source: str = ""

    def sequence_factor(self, sequence: float | None, exponent: float | None = None) -> float:
        """The long-sequence term: 1 at or below reference_sequence tokens per rank."""
        if not sequence or sequence <= self.reference_sequence:
            return 1.0
        power = self.sequence_exponent if exponent is None else exponent
        return float((self.reference_sequence / sequence) ** power)

    def efficiency(
        self,
        nodes: int,
        tokens_per_chip: float | None,
        loss: float | None = None,
        sequence: float | None = None,
        exponent: float | None = None,
    ) -> float:
        per_doubling = self.loss_per_node_doubling if loss is None else loss
        node = 1.0 - per_doubling * math.log2(max(1, nodes))
        batch = 1.0
        if tokens_per_chip is not None and tokens_per_chip > 0:
            batch = (
                min(1.0, tokens_per_chip / self.full_batch_tokens_per_chip) ** self.batch_exponent
            )
        return max(self.floor, node * batch * self.sequence_factor(sequence, exponent))


class Goodput(_Frozen):
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


class Spreads(_Frozen):
    """Range widths where no record gives one."""

    minimum: float = Field(gt=0, lt=1)  # a fitted curve's range is never narrower
    per_decade_outside: float = Field(ge=0, lt=1)  # sizes beyond the records'
    measured: float = Field(gt=0, lt=1)  # a trial measurement on the spec's node count
    carried_per_node_doubling: float = Field(ge=0, lt=1)  # measured on fewer nodes
    mfu_band: tuple[float, float]  # a plausible steady-state MFU (calibrate refuses others)


class Calibration(_Frozen):
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


class Throughput(_Frozen):
    curves: tuple[MfuCurve, ...]
    scaling: Scaling
    goodput: Goodput
    spreads: Spreads
    calibration: Calibration
    training_stacks: dict[str, str] = Field(default_factory=dict)  # name -> what it is

    def curve_for(self, family: str, precision: str) -> MfuCurve | None:
        return next(
            (c for c in self.curves if c.family == family and precision in c.precisions), None
        )


def parse_throughput(data: object, path: Path) -> Throughput:
    """Validate throughput.yaml's content (`path`: the file named in errors)."""
    try:
        return Throughput.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise CatalogError(f"{path}: {where}: {err['msg']}") from None
