"""Public training records (records.yaml): the evidence the run model is fitted to.

Each record is one published run or benchmark line with what it reports (accelerator-hours,
tokens per chip-second or TFLOPS per chip) and its kind: `steady_state` (throughput while
steps run: the MFU curves are fitted to these) or `whole_run` (everything that happened in the
run: goodput is fitted so that steady state x goodput reproduces these). A record without a
kind or a source is refused. This module only types and loads them; the FLOPs arithmetic and
the fit live in accelstack.cost.mfu (the catalog never computes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from accelstack.errors import CatalogError

_Row = TypeVar("_Row", bound=BaseModel)

ReportedKind = Literal["accelerator_hours", "tokens_per_chip_second", "tflops_per_chip"]
RecordKind = Literal["steady_state", "whole_run"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class Reported(_Frozen):
    kind: ReportedKind
    value: float = Field(gt=0)
    value_as_published: str | None = None


class TrainingRecord(_Frozen):
    id: str
    model: str
    family: str
    precision: Literal["bf16", "fp16", "fp8"]
    params_billion: float = Field(gt=0)
    layers: int | None = Field(default=None, ge=1)
    hidden_size: int | None = Field(default=None, ge=1)
    sequence_length: int | None = Field(default=None, ge=1)
    #: context parallelism: each rank holds sequence_length / context_parallel tokens
    context_parallel: int = Field(default=1, ge=1)
    #: the fit never sees it (in no curve, pair or goodput list); predicted by the held-out test
    held_out: bool = False
    tokens_billion: float = Field(gt=0)
    chips: int = Field(ge=1)
    #: tokens per optimizer step, whole job (the per-chip batch the scaling model reads)
    global_batch_tokens: int | None = Field(default=None, ge=1)
    kind: RecordKind
    stack: str = Field(min_length=1)  # the training software that produced the figure
    reported: Reported
    source: str = Field(min_length=1)
    date: str = Field(min_length=4)
    note: str | None = None

    @property
    def sequence_per_rank(self) -> float | None:
        """Tokens of one sequence each context-parallel rank holds."""
        return self.sequence_length / self.context_parallel if self.sequence_length else None

    @property
    def tokens_per_chip(self) -> float | None:
        return self.global_batch_tokens / self.chips if self.global_batch_tokens else None


class LeftOut(_Frozen):
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


def load_records(path: Path) -> tuple[TrainingRecord, ...]:
    """Read and validate records.yaml; a broken file is a CatalogError naming the row."""
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise CatalogError(f"{path}: cannot read catalog file: {exc}") from None
    return parse_records(data, path)


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


def parse_records(data: object, path: Path) -> tuple[TrainingRecord, ...]:
    """Validate records.yaml's content (`path`: the file named in errors)."""
    rows = data.get("records") if isinstance(data, dict) else None
    if not isinstance(rows, list) or not rows:
        raise CatalogError(f"{path}: 'records' must be a non-empty list")
    out = validate_rows(TrainingRecord, rows, path, "records")
    ids = [r.id for r in out]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise CatalogError(f"{path}: duplicate record id(s): {', '.join(dupes)}")
    return tuple(out)
