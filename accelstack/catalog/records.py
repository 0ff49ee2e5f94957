"""Public training records (records.yaml): the evidence the run model is fitted to.

Each record is one published run or benchmark line with what it reports (accelerator-hours,
tokens per chip-second or TFLOPS per chip), its kind: `steady_state` (throughput while steps
run: the step model is fitted to these) or `whole_run` (everything that happened in the run:
goodput is fitted so that steady state x goodput reproduces these), the model's shape and the
layout that ran (tensor/pipeline/context/expert parallelism, micro-batch, activation
checkpointing), because the step model reads them. A record without a kind or a source is
refused. A row may name a `shape` (records.yaml `shapes:`): it takes every field of the shape
it does not set itself.

The held-out rows live in their own file (tests/data/heldout.yaml, the same row format): the
fit never reads it; `parse_records` loads either. This module only types and loads them; the
FLOPs arithmetic and the fit live in accelstack.cost (the catalog never computes).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, Field, ValidationError

from accelstack.catalog.facts import Frozen
from accelstack.errors import CatalogError, did_you_mean

_Row = TypeVar("_Row", bound=BaseModel)

ReportedKind = Literal["accelerator_hours", "tokens_per_chip_second", "tflops_per_chip"]
RecordKind = Literal["steady_state", "whole_run"]
#: Activation checkpointing as the step model counts it: `full` recomputes the whole forward
#: (dense and attention), `selective` the attention core only (Megatron's selective
#: recompute), `none` nothing.
Checkpointing = Literal["none", "selective", "full"]


class Reported(Frozen):
    kind: ReportedKind
    value: float = Field(gt=0)
    value_as_published: str | None = None


class Shape(Frozen):
    """A model's shape, with its source (records.yaml `shapes:`)."""

    params_billion: float = Field(gt=0)
    #: a mixture of experts: the parameters a token passes (top-k routed experts, shared
    #: experts, everything outside the experts)
    active_params_billion: float | None = Field(default=None, gt=0)
    layers: int = Field(ge=1)
    hidden_size: int = Field(ge=1)
    heads: int | None = Field(default=None, ge=1)
    kv_heads: int | None = Field(default=None, ge=1)
    #: the attention head width (default hidden_size / heads); multi-head latent attention:
    #: the mean of the query-key and value widths
    head_dim: int | None = Field(default=None, ge=1)
    #: layers with full causal attention (default: every layer; sliding-window layers out)
    attention_layers: int | None = Field(default=None, ge=0)
    ffn_hidden_size: int | None = Field(default=None, ge=1)
    vocab_size: int | None = Field(default=None, ge=1)
    glu: bool = True
    experts: int | None = Field(default=None, ge=1)
    experts_per_token: int | None = Field(default=None, ge=1)
    expert_hidden_size: int | None = Field(default=None, ge=1)
    shared_expert_hidden_size: int | None = Field(default=None, ge=1)
    #: layers with a mixture of experts (default: every layer when `experts` is set)
    moe_layers: int | None = Field(default=None, ge=0)
    source: str = Field(min_length=1)
    note: str | None = None


#: Shape fields a record row takes over (everything but the shape's own source and note).
SHAPE_FIELDS = tuple(k for k in Shape.model_fields if k not in ("source", "note"))


class TrainingRecord(Frozen):
    id: str
    model: str
    family: str
    precision: Literal["bf16", "fp16", "fp8"]
    #: the shape the row's model fields came from (records.yaml `shapes:`), if any
    shape: str | None = None
    params_billion: float = Field(gt=0)
    active_params_billion: float | None = Field(default=None, gt=0)
    layers: int | None = Field(default=None, ge=1)
    hidden_size: int | None = Field(default=None, ge=1)
    heads: int | None = Field(default=None, ge=1)
    kv_heads: int | None = Field(default=None, ge=1)
    head_dim: int | None = Field(default=None, ge=1)
    attention_layers: int | None = Field(default=None, ge=0)
    ffn_hidden_size: int | None = Field(default=None, ge=1)
    vocab_size: int | None = Field(default=None, ge=1)
    glu: bool = True
    experts: int | None = Field(default=None, ge=1)
    experts_per_token: int | None = Field(default=None, ge=1)
    expert_hidden_size: int | None = Field(default=None, ge=1)
    shared_expert_hidden_size: int | None = Field(default=None, ge=1)
    moe_layers: int | None = Field(default=None, ge=0)
    sequence_length: int | None = Field(default=None, ge=1)
    #: the layout that ran (unset: not published; the step model takes 1 / none)
    tensor_parallel: int | None = Field(default=None, ge=1)
    pipeline_parallel: int | None = Field(default=None, ge=1)
    virtual_pipeline: int | None = Field(default=None, ge=1)
    #: context parallelism: each rank holds sequence_length / context_parallel tokens
    context_parallel: int = Field(default=1, ge=1)
    expert_parallel: int | None = Field(default=None, ge=1)
    micro_batch: int | None = Field(default=None, ge=1)
    activation_checkpointing: Checkpointing = "none"
    #: always false here: held-out rows live in tests/data/heldout.yaml, which the fit never
    #: reads (kept so older readers of the field see "not held out")
    held_out: bool = False
    #: training tokens of the run (whole-run records); a steady-state row's value is unused
    tokens_billion: float = Field(default=1000.0, gt=0)
    chips: int = Field(ge=1)
    #: sequences per optimizer step, whole job
    global_batch: float | None = Field(default=None, gt=0)
    #: tokens per optimizer step, whole job (the per-chip batch the scaling model reads)
    global_batch_tokens: int | None = Field(default=None, ge=1)
    kind: RecordKind
    stack: str = Field(min_length=1)  # the training software that produced the figure
    #: the published table the row comes from (the held-out rule picks rows per table)
    table: str | None = None
    reported: Reported
    source: str = Field(min_length=1)
    date: str = Field(min_length=4)
    note: str | None = None

    @property
    def batch_tokens(self) -> float | None:
        """Tokens per optimizer step, whole job (`global_batch_tokens`, else sequences x
        sequence length)."""
        if self.global_batch_tokens:
            return float(self.global_batch_tokens)
        if self.global_batch and self.sequence_length:
            return self.global_batch * self.sequence_length
        return None

    @property
    def tokens_per_chip(self) -> float | None:
        tokens = self.batch_tokens
        return tokens / self.chips if tokens else None


class LeftOut(Frozen):
    """A public figure deliberately not fitted, with the reason (kept visible, not silent)."""

    id: str
    reason: str = Field(min_length=1)
    source: str = Field(min_length=1)


def parse_left_out(data: object, path: Path) -> tuple[LeftOut, ...]:
    """Validate the `left_out` list of records.yaml's content (empty when absent)."""
    rows = data.get("left_out", []) if isinstance(data, dict) else []
    try:
        return tuple(LeftOut.model_validate(r) for r in rows)
    except ValidationError as exc:
        raise CatalogError(f"{path}: left_out: {exc.errors()[0]['msg']}") from None


def parse_shapes(data: object, path: Path) -> dict[str, Shape]:
    """Validate the `shapes` mapping of records.yaml's content (empty when absent)."""
    raw = data.get("shapes", {}) if isinstance(data, dict) else {}
    out: dict[str, Shape] = {}
    for name, body in dict(raw or {}).items():
        try:
            out[str(name)] = Shape.model_validate(body)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            raise CatalogError(f"{path}: shapes.{name}.{where}: {err['msg']}") from None
    return out


def load_records(
    path: Path, shapes: Mapping[str, Shape] | None = None
) -> tuple[TrainingRecord, ...]:
    """Read and validate a records file (records.yaml, or the held-out file with the
    catalog's `shapes`); a broken file is a CatalogError naming the row."""
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise CatalogError(f"{path}: cannot read catalog file: {exc}") from None
    return parse_records(data, path, shapes)


def validate_rows(model: type[_Row], rows: list[Any], path: Path, key: str) -> list[_Row]:
    """Each row of the YAML list `key` validated as `model`; the first bad one is a
    CatalogError naming the file, the row's index and the field (`records[3].mfu: ...`)."""
    out: list[_Row] = []
    for i, row in enumerate(rows):
        try:
            out.append(model.model_validate(row))
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            raise CatalogError(f"{path}: {key}[{i}].{where}: {err['msg']}") from None
    return out


def with_shape(row: Any, shapes: Mapping[str, Shape], path: Path, at: str) -> Any:
    """The row with its shape's fields under its own (the row's win); an unknown shape is a
    CatalogError with a did-you-mean."""
    if not isinstance(row, dict) or "shape" not in row:
        return row
    name = str(row["shape"])
    shape = shapes.get(name)
    if shape is None:
        raise CatalogError(
            f"{path}: {at}.shape: unknown shape '{name}'{did_you_mean(name, shapes)} "
            f"(records.yaml shapes: {', '.join(sorted(shapes)) or 'none'})"
        )
    base = {k: getattr(shape, k) for k in SHAPE_FIELDS if getattr(shape, k) is not None}
    return {**base, **row}


def parse_records(
    data: object, path: Path, shapes: Mapping[str, Shape] | None = None
) -> tuple[TrainingRecord, ...]:
    """Validate a records file's content (`path`: the file named in errors); rows naming a
    shape take it from `shapes` (default: the file's own `shapes:`)."""
    rows = data.get("records") if isinstance(data, dict) else None
    if not isinstance(rows, list) or not rows:
        raise CatalogError(f"{path}: 'records' must be a non-empty list")
    known = {**parse_shapes(data, path), **(shapes or {})}
    rows = [with_shape(r, known, path, f"records[{i}]") for i, r in enumerate(rows)]
    out = validate_rows(TrainingRecord, rows, path, "records")
    ids = [r.id for r in out]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise CatalogError(f"{path}: duplicate record id(s): {', '.join(dupes)}")
    held = [r.id for r in out if r.held_out]
    if held:
        raise CatalogError(
            f"{path}: {held[0]}: held_out rows live in tests/data/heldout.yaml, never in the "
            "file the fit reads"
        )
    return tuple(out)
