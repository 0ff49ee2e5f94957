"""Rendered custom resources checked field by field against the upstream's own generated API
models at the pinned versions: `kubeflow-trainer-api==2.3.0` (the Kubeflow Trainer v2.3.0 SDK's
models: Trainer `trainer_v1alpha1_*`, JobSet `jobset_v1alpha2_*` and the core Kubernetes types
they embed). Their `from_dict` ignores keys it does not know, so every key is also compared,
recursively, with the model's own properties: a misspelt or misplaced field fails here as the
API server's structural pruning would silently drop it."""

from __future__ import annotations

import inspect
import types
from functools import cache
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel


@cache
def _models() -> types.ModuleType:
    """The upstream models, imported on first use: building their ~400 pydantic classes took
    about a second of every test process's collection."""
    from kubeflow_trainer_api import models

    return models


def trainer_models() -> dict[str, type[BaseModel]]:
    """kind -> the model of a whole object of that kind (trainer.kubeflow.org/v1alpha1)."""
    models = _models()
    return {
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
    model = trainer_models()[doc["kind"]]
    problems = [f"{doc['kind']}: unknown field {p}" for p in unknown_keys(model, doc)]
    try:
        model.from_dict(doc)  # type: ignore[attr-defined]
    except Exception as exc:  # pydantic's ValidationError names every field
        problems.append(f"{doc['kind']}: {exc}")
    return problems


# ---- PyTorchJob (kubeflow.org/v1, Training Operator v1.9.4) -------------------------------
# No published Python model at the pinned version: its field names restated from the Go types
# (kubeflow/trainer@4445c12aa62e4345b0c2c6ac9b215a70eca46ed7, tag v1.9.4,
# pkg/apis/kubeflow.org/v1/pytorch_types.go:58-95 and common_types.go:99-109, 197-239), the
# pod templates checked with the core PodTemplateSpec model above and kubernetes-validate.
PYTORCH_SOURCE = "kubeflow/trainer@4445c12a pkg/apis/kubeflow.org/v1"
PYTORCHJOB_KEYS = {"apiVersion", "kind", "metadata", "spec", "status"}
PYTORCHJOB_SPEC_KEYS = {"runPolicy", "elasticPolicy", "pytorchReplicaSpecs", "nprocPerNode"}
RUN_POLICY_KEYS = {
    "cleanPodPolicy",
    "ttlSecondsAfterFinished",
    "activeDeadlineSeconds",
    "backoffLimit",
    "schedulingPolicy",
    "suspend",
    "managedBy",
}
REPLICA_SPEC_KEYS = {"replicas", "template", "restartPolicy"}
REPLICA_TYPES = {"Master", "Worker"}  # pytorch_types.go:40-43
RESTART_POLICIES = {"Always", "OnFailure", "Never", "ExitCode"}  # common_types.go:179-188


def pytorchjob_problems(doc: dict[str, Any]) -> list[str]:
    out = [f"unknown field {k}" for k in set(doc) - PYTORCHJOB_KEYS]
    out += [
        f"metadata: {p}"
        for p in unknown_keys(
            _models().IoK8sApimachineryPkgApisMetaV1ObjectMeta, doc.get("metadata", {})
        )
    ]
    spec = doc.get("spec", {})
    out += [f"unknown field spec.{k}" for k in set(spec) - PYTORCHJOB_SPEC_KEYS]
    if "pytorchReplicaSpecs" not in spec:
        out.append("spec.pytorchReplicaSpecs is required")
    if "nprocPerNode" in spec and not isinstance(spec["nprocPerNode"], str):
        out.append("spec.nprocPerNode must be a string (*string)")
    out += [
        f"unknown field spec.runPolicy.{k}"
        for k in set(spec.get("runPolicy", {})) - RUN_POLICY_KEYS
    ]
    for role, rs in (spec.get("pytorchReplicaSpecs") or {}).items():
        at = f"spec.pytorchReplicaSpecs.{role}"
        if role not in REPLICA_TYPES:
            out.append(f"{at}: not a replica type ({', '.join(sorted(REPLICA_TYPES))})")
        out += [f"unknown field {at}.{k}" for k in set(rs) - REPLICA_SPEC_KEYS]
        if not isinstance(rs.get("replicas", 1), int) or isinstance(rs.get("replicas"), bool):
            out.append(f"{at}.replicas must be an integer (*int32)")
        if rs.get("restartPolicy", "Never") not in RESTART_POLICIES:
            out.append(f"{at}.restartPolicy not one of {sorted(RESTART_POLICIES)}")
        template = rs.get("template", {})
        out += [
            f"{at}.template.{p}"
            for p in unknown_keys(_models().IoK8sApiCoreV1PodTemplateSpec, template)
        ]
    return out
