"""One name budget for the job layer: every name JobSet, the Job controller and the API server
derive from the stack's names (pod and Job names, Services, hostnames, label values) fits its
limit at the most nodes each job runs on, or `validate` refuses the stack naming the longest
stack name that fits. Rendered manifests are checked with the webhook rules restated in
tests/helpers_admission.py (from the rendered documents, not accelstack's naming helpers)."""

from __future__ import annotations

from typing import Any

import pytest

from accelstack.catalog import load_catalog
from accelstack.errors import SpecError
from accelstack.render import render
from accelstack.render.trial import render_trial
from accelstack.resolve import Stack, check_stack, resolve, resolve_unchecked
from accelstack.resolve.k8snames import kubernetes_names
from accelstack.spec import Spec, load_spec

from .conftest import STACKS
from .helpers_admission import admission_problems

PRESETS = sorted(p.stem for p in STACKS.glob("*.yaml"))


def _spec(preset: str, name: str, **pool: Any) -> Spec:
    data = load_spec(STACKS / f"{preset}.yaml").model_dump()
    data["name"] = name
    data["pools"][0].update(pool)
    return Spec.model_validate(data)


def _manifests(stack: Stack, trial_nodes: int) -> dict[str, str]:
    out = {a.path: a.content for a in render(stack) if a.path.endswith(".yaml")}
    trial = render_trial(stack, 5, nodes=trial_nodes)
    out.update({f"trial/{a.path}": a.content for a in trial if a.path.endswith(".yaml")})
    return out


def test_the_fabric_test_of_the_longest_stack_name_is_refused_with_the_fix() -> None:
    """A 39-character stack name (validate accepted it): the fabric test's launcher pod
    `<stack>-fabric-launcher-0-0-abcde` is 65 characters, which JobSet's webhook refuses (the
    TrainJob is accepted, its JobSet never created)."""
    with pytest.raises(SpecError) as err:
        resolve(_spec("llama3-70b-p5", "a" * 39), load_catalog())
    (problem,) = err.value.problems
    assert problem.path == "name"
    assert "the fabric test's longest pod name" in problem.message
    assert f"'{'a' * 39}-fabric-launcher-0-0-abcde' would be 65 characters" in problem.message
    assert "jobset_webhook.go" in problem.message
    assert "shorten the stack name to at most 37 characters (now 39)" in problem.message


def test_the_longest_allowed_name_renders_manifests_the_webhooks_admit() -> None:
    """At the length the message names, every rendered manifest (training, fabric test, a
    4-node trial and a trial on every node) passes the restated webhook rules; one more
    character is refused."""
    stack = resolve(_spec("llama3-70b-p5", "a" * 37), load_catalog())
    for nodes in (4, stack.workload_pool.nodes):
        for path, text in _manifests(stack, nodes).items():
            assert admission_problems(text) == [], path
    assert check_stack(resolve_unchecked(_spec("llama3-70b-p5", "a" * 38), load_catalog()))


@pytest.mark.slow  # renders 20 stacks of up to 1,000 nodes and admits every manifest
def test_the_rule_is_exact_over_name_lengths_and_node_counts() -> None:
    """For stack names of every length and pools of 2 to 1,000 nodes: the rule refuses the
    stack exactly when some rendered manifest breaks a restated admission rule."""
    cat = load_catalog()
    for length in (30, 36, 37, 38, 39):
        for nodes in (2, 10, 100, 1000):
            stack = resolve_unchecked(_spec("llama3-70b-p5", "b" * length, nodes=nodes), cat)
            refused = any(n.excess > 0 for n in kubernetes_names(stack))
            broken = [
                (path, pr)
                for path, text in _manifests(stack, nodes).items()
                for pr in admission_problems(text)
            ]
            assert refused == bool(broken), (length, nodes, broken)


def test_a_long_deployment_prefix_is_named_in_the_fix() -> None:
    spec = _spec("llama3-70b-p5", "a" * 30)
    with pytest.raises(SpecError) as err:
        resolve(spec, load_catalog(), name="a" * 30 + "-staging")
    (problem,) = err.value.problems
    assert "the resource-name prefix" in problem.message
    assert "to at most 37 characters (now 38)" in problem.message


@pytest.mark.parametrize("preset", PRESETS)
def test_every_preset_renders_names_the_webhooks_admit(preset: str) -> None:
    stack = resolve(load_spec(STACKS / f"{preset}.yaml"), load_catalog())
    if stack.spec.orchestration != "eks":
        assert kubernetes_names(stack) == []
        return
    for path, text in _manifests(stack, 4).items():
        assert admission_problems(text) == [], path
