"""Admission checked the way the cluster checks it: every rendered TrainJob and TrainingRuntime
(training job, fabric test, trials) of every EKS preset against the upstream's own API models
(kubeflow-trainer-api 2.3.0, tests/helpers_upstream.py), the CRDs' CEL rules accelstack relies
on (restated below with their source lines, evaluated with cel-python), and JobSet's webhook
rules (tests/helpers_admission.py). No upstream file is copied into the repository."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import celpy
import pytest

from accelstack.catalog import load_catalog
from accelstack.render import render
from accelstack.render.trial import render_trial
from accelstack.resolve import check_spec, resolve_unchecked
from accelstack.spec import Spec

from ..conftest import STACKS
from ..helpers_admission import (
    TORCH_RESERVED_ENV,
    admission_problems,
    docs,
    trainer_webhook_problems,
    trainjobs,
)
from ..helpers_render import preset_stack, variant
from ..helpers_upstream import model_problems

TRAINER = "kubeflow/trainer@658725bdae5c7e3a0854d93ac6ff492e109a22ab"
TRAINJOBS_CRD = f"{TRAINER} manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml"
RUNTIMES_CRD = f"{TRAINER} manifests/base/crds/trainer.kubeflow.org_trainingruntimes.yaml"


@dataclass(frozen=True)
class CelRule:
    """One x-kubernetes-validations rule: the kind, the path of `self` in the object, the rule
    as the CRD states it, and where (file:line)."""

    kind: str
    path: tuple[str, ...]
    rule: str
    source: str
    transition: bool = False  # reads oldSelf: checked on an update


RULES = (
    CelRule(
        "TrainJob",
        (),
        "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
        f"{TRAINJOBS_CRD}:6050-6051",
    ),
    CelRule("TrainJob", (), "size(self.metadata.name) <= 63", f"{TRAINJOBS_CRD}:6052-6053"),
    CelRule(
        "TrainJob", ("spec", "runtimeRef"), "self == oldSelf", f"{TRAINJOBS_CRD}:5596-5599", True
    ),
    CelRule(
        "TrainingRuntime",
        ("spec", "mlPolicy"),
        "[has(self.torch), has(self.mpi), has(self.jax), has(self.xgboost),has(self.flux)]"
        ".filter(x, x).size() <= 1",
        f"{RUNTIMES_CRD}:185-188",
    ),
    CelRule(
        "TrainingRuntime",
        ("spec", "template", "spec"),
        "!(has(self.startupPolicy) && self.startupPolicy.startupPolicyOrder == 'InOrder' && "
        "self.replicatedJobs.exists(x, has(x.dependsOn)))",
        f"{RUNTIMES_CRD}:10577-10580",
    ),
)

ENV = celpy.Environment()


def _at(doc: dict[str, Any], path: tuple[str, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def cel(rule: CelRule, new: dict[str, Any], old: dict[str, Any] | None = None) -> bool:
    program = ENV.program(ENV.compile(rule.rule))
    activation = {"self": celpy.json_to_cel(_at(new, rule.path))}
    if rule.transition:
        activation["oldSelf"] = celpy.json_to_cel(_at(old or new, rule.path))
    return bool(program.evaluate(activation))


def _manifests(preset: str) -> dict[str, str]:
    stack = preset_stack(preset)
    out = {a.path: a.content for a in render(stack) if a.path.endswith(".yaml")}
    for a in render_trial(stack, 5, nodes=4):
        if a.path.endswith(".yaml"):
            out[f"trial/{a.path}"] = a.content
    return out


EKS = sorted(
    p.stem for p in STACKS.glob("*.yaml") if preset_stack(p.stem).spec.orchestration == "eks"
)


@pytest.mark.slow
@pytest.mark.parametrize("preset", EKS)
def test_every_rendered_custom_resource_passes_the_upstream_models_cel_and_webhooks(
    preset: str,
) -> None:
    checked = 0
    for path, text in _manifests(preset).items():
        for doc in docs(text):
            if doc["kind"] not in ("TrainJob", "TrainingRuntime"):
                continue
            assert model_problems(doc) == [], (path, doc["kind"])
            for rule in RULES:
                if rule.kind == doc["kind"]:
                    assert cel(rule, doc), (path, rule.source)
            checked += 1
        assert admission_problems(text) == [], path
    assert checked >= 2


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_the_models_catch_an_unknown_or_mistyped_field_at_any_depth() -> None:
    text = _manifests("llama3-70b-p5")["trainjob.yaml"]
    by_kind = {d["kind"]: d for d in docs(text)}
    tj, rt = by_kind["TrainJob"], by_kind["TrainingRuntime"]
    bad = copy.deepcopy(tj)
    bad["spec"]["trainer"]["numNode"] = 3
    assert model_problems(bad) == ["TrainJob: unknown field spec.trainer.numNode"]
    bad = copy.deepcopy(rt)
    rj = bad["spec"]["template"]["spec"]["replicatedJobs"][0]
    rj["template"]["spec"]["template"]["spec"]["containers"][0]["resource"] = {}
    (problem,) = model_problems(bad)
    assert problem.endswith("containers[0].resource")
    bad = copy.deepcopy(tj)
    bad["spec"]["trainer"]["numNodes"] = "sixteen"
    assert any("numNodes" in p for p in model_problems(bad))


def test_each_restated_cel_rule_refuses_what_it_should() -> None:
    """The rules are evaluated, not assumed: each refuses a broken object."""
    text = _manifests("llama3-70b-p5")["trainjob.yaml"]
    by_kind = {d["kind"]: d for d in docs(text)}
    broken: dict[str, dict[str, Any]] = {}
    tj = copy.deepcopy(by_kind["TrainJob"])
    tj["metadata"]["name"] = "Bad_Name"
    broken[RULES[0].source] = tj
    tj = copy.deepcopy(by_kind["TrainJob"])
    tj["metadata"]["name"] = "a" * 64
    broken[RULES[1].source] = tj
    rt = copy.deepcopy(by_kind["TrainingRuntime"])
    rt["spec"]["mlPolicy"]["mpi"] = {}
    broken[RULES[3].source] = rt
    fabric = {d["kind"]: d for d in docs(_manifests("llama3-70b-p5")["fabric-test.yaml"])}
    rt = copy.deepcopy(fabric["TrainingRuntime"])
    rt["spec"]["template"]["spec"]["startupPolicy"] = {"startupPolicyOrder": "InOrder"}
    broken[RULES[4].source] = rt
    for rule in RULES:
        if rule.transition:
            continue
        assert not cel(rule, broken[rule.source]), rule.source


def test_a_re_render_after_a_change_keeps_the_immutable_runtime_ref() -> None:
    """spec.runtimeRef is immutable (CEL `self == oldSelf`): the TrainJob of the same stack
    rendered with another node count names the same runtime, so it can be re-applied."""
    rule = next(r for r in RULES if r.transition)
    old = next(
        d for d in docs(_manifests("llama3-70b-p5")["trainjob.yaml"]) if d["kind"] == "TrainJob"
    )
    changed = variant("llama3-70b-p5", wl_args=["--steps", "10"])
    new = next(
        d
        for a in render(changed)
        if a.path == "trainjob.yaml"
        for d in docs(a.content)
        if d["kind"] == "TrainJob"
    )
    assert cel(rule, new, old)
    moved = copy.deepcopy(new)
    moved["spec"]["runtimeRef"]["name"] = "another-runtime"
    assert not cel(rule, moved, old)


def test_trainers_webhook_refuses_reserved_torch_env_and_the_spec_cannot_reach_it() -> None:
    """Trainer's torch plugin webhook refuses a TrainJob whose spec.trainer.env sets a
    reserved PET_* name (helpers_admission.trainer_webhook_problems, kubeflow/trainer@658725bd
    pkg/runtime/framework/plugins/torch/torch.go:65-77): the rendered TrainJobs set none, a
    TrainJob or runtime `node` container that does is refused, and `validate` refuses every
    reserved name in workload.env before render."""
    text = _manifests("llama3-70b-p5")["trainjob.yaml"]
    ((tj, rt),) = trainjobs(text)
    assert trainer_webhook_problems(tj, rt) == []
    for name in sorted(TORCH_RESERVED_ENV):
        bad = copy.deepcopy(tj)
        bad["spec"]["trainer"]["env"] = [{"name": name, "value": "1"}]
        assert trainer_webhook_problems(bad, rt) == [
            f"spec.trainer.env: must not have reserved envs ({name})"
        ]
        node = copy.deepcopy(rt)
        pod = node["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]
        pod["template"]["spec"]["containers"][0]["env"].append({"name": name, "value": "1"})
        assert len(trainer_webhook_problems(tj, node)) == 1
        data = preset_stack("llama3-70b-p5").spec.model_dump()
        data["workload"]["env"] = {name: "1"}
        problems = check_spec(
            resolve_unchecked(Spec.model_validate(data).read_from("s.yaml"), load_catalog())
        )
        assert any(p.path == f"workload.env.{name}" for p in problems), name
