"""Rendered custom resources checked field by field against the upstream's own generated API
models at the pinned versions: `kubeflow-trainer-api==2.3.0` (the Kubeflow Trainer v2.3.0 SDK's
models: Trainer `trainer_v1alpha1_*`, JobSet `jobset_v1alpha2_*` and the core Kubernetes types
they embed). Their `from_dict` ignores keys it does not know, so every key is also compared,
recursively, with the model's own properties: a misspelt or misplaced field fails here as the
API server's structural pruning would silently drop it."""

from __future__ import annotations

import inspect
import types
from typing import Annotated, Any, Union, get_args, get_origin

from kubeflow_trainer_api import models
from pydantic import BaseModel

#: kind -> the model of a whole object of that kind (apiVersion trainer.kubeflow.org/v1alpha1)
TRAINER_MODELS: dict[str, type[BaseModel]] = {
    "TrainJob": models.TrainerV1alpha1TrainJob,
    "TrainingRuntime": models.TrainerV1alpha1TrainingRuntime,
    "JobSet": models.JobsetV1alpha2JobSet,
}


def _unwrap(tp: Any) -> Any:
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    return tp


def _check(tp: Any, value: Any, path: str) -> list[str]:
    tp = _unwrap(tp)
    origin, args = get_origin(tp), get_args(tp)
    if origin in (Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return _check(inner[0], value, path) if inner else []
    if origin is list and isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _check(args[0], v, f"{path}[{i}]")]
    if origin is dict and isinstance(value, dict):
        return [p for k, v in value.items() for p in _check(args[1], v, f"{path}.{k}")]
    if inspect.isclass(tp) and issubclass(tp, BaseModel) and isinstance(value, dict):
        return unknown_keys(tp, value, path)
    return []


def unknown_keys(model: type[BaseModel], data: dict[str, Any], path: str = "") -> list[str]:
    """Every key of `data`, at any depth, that the model (and the models of its fields) does
    not declare, as a dotted path."""
    fields = {(f.alias or name): f for name, f in model.model_fields.items()}
    out = []
    for key, value in data.items():
        field = fields.get(key)
        where = f"{path}.{key}" if path else key
        if field is None:
            out.append(where)
        else:
            out += _check(field.annotation, value, where)
    return out


def model_problems(doc: dict[str, Any]) -> list[str]:
    """A rendered object against its upstream model: unknown keys, then the model's own type
    validation (`from_dict`)."""
    model = TRAINER_MODELS[doc["kind"]]
    problems = [f"{doc['kind']}: unknown field {p}" for p in unknown_keys(model, doc)]
    try:
        model.from_dict(doc)  # type: ignore[attr-defined]
    except Exception as exc:  # pydantic's ValidationError names every field
        problems.append(f"{doc['kind']}: {exc}")
    return problems
