"""Object ownership across rendered files: every object is in one file. The objects several jobs
use (the UltraServer ResourceClaimTemplates) are rendered once, in `shared.yaml`, applied once
and never carried by a job's file; the run books never delete them by deleting a job's file.
The alternatives of the training job (`job.yaml` beside `trainjob.yaml`) name their own
ConfigMap and NetworkPolicy, so deleting the one not applied leaves the other's."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest
import yaml

from accelstack.catalog import load_catalog
from accelstack.render import render, render_runbook, runbook_context
from accelstack.render.trial import render_trial
from accelstack.resolve import Stack, resolve
from accelstack.spec import parse_spec

from ..helpers_render import preset_stack
from .test_neuron_allocation import TRN2U_PRICE, mixed
from .test_upstream_admission import EKS

Key = tuple[str, str, str]  # kind, namespace, name


def _objects(text: str) -> set[Key]:
    return {
        (d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"])
        for d in yaml.safe_load_all(text)
        if d
    }


def job_files(stack: Stack, trial_nodes: int = 1) -> dict[str, str]:
    """Every Kubernetes file of one render of the stack and of one trial render (on
    `trial_nodes` nodes), the trial's prefixed `trial/`: the files one cluster gets."""
    out = {a.path: a.content for a in render(stack) if a.path.endswith(".yaml")}
    for a in render_trial(stack, 5, nodes=trial_nodes):
        if a.path.endswith(".yaml"):
            out[f"trial/{a.path}"] = a.content
    return out


def owners(files: dict[str, str]) -> dict[Key, set[str]]:
    """Object -> the job files carrying it (a trial's identical shared.yaml is the same file)."""
    out: dict[Key, set[str]] = defaultdict(set)
    for path, text in files.items():
        for key in _objects(text):
            out[key].add(path.split("/")[-1] if path.endswith("shared.yaml") else path)
    return out


@pytest.fixture(scope="module")
def ultra_catalog(tmp_path_factory: pytest.TempPathFactory) -> Any:
    d = tmp_path_factory.mktemp("overlay")
    trn2 = {**TRN2U_PRICE, "type": "trn2.48xlarge", "option": "on-demand"}
    (d / "prices.yaml").write_text(yaml.safe_dump({"instances": [TRN2U_PRICE, trn2]}))
    return load_catalog(overlay=d)


def ultra_stack(catalog: Any) -> Stack:
    return resolve(parse_spec(mixed(False), "llama3-70b-trn2.yaml"), catalog)


@pytest.mark.slow
@pytest.mark.parametrize("preset", EKS)
def test_no_two_files_of_a_preset_carry_the_same_object(preset: str) -> None:
    stack = preset_stack(preset)
    for nodes in sorted({1, stack.workload_pool.nodes}):
        shared = owners(job_files(stack, nodes))
        assert {k: v for k, v in shared.items() if len(v) > 1} == {}, nodes


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_the_ultraserver_claim_templates_are_rendered_once_in_shared_yaml(
    ultra_catalog: Any,
) -> None:
    """Fails on the old render: the ResourceClaimTemplate sat in trainjob.yaml, job.yaml,
    fabric-test.yaml and every trial manifest, so deleting a finished fabric test's file deleted
    the template the training job's restarted pods need."""
    stack = ultra_stack(ultra_catalog)
    for nodes in (1, 4, 8):
        files = job_files(stack, nodes)
        by_owner = owners(files)
        claims = {k for k in by_owner if k[0] == "ResourceClaimTemplate"}
        assert len(claims) == 2  # one node (mode 1) and a whole UltraServer (mode 4)
        for key in claims:
            assert by_owner[key] == {"shared.yaml"}, key
        assert {k: v for k, v in by_owner.items() if len(v) > 1} == {}
        # every claim a pod names is in shared.yaml
        named = {
            c["resourceClaimTemplateName"]
            for text in files.values()
            for d in yaml.safe_load_all(text)
            if d
            for c in _claims(d)
        }
        assert named and named <= {k[2] for k in claims}
        assert files["trial/shared.yaml"] == files["shared.yaml"]


def _claims(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        here = node.get("resourceClaims") if "containers" in node else None
        return list(here or []) + [c for v in node.values() for c in _claims(v)]
    if isinstance(node, list):
        return [c for v in node for c in _claims(v)]
    return []


def test_the_run_books_apply_shared_objects_once_and_never_delete_them(
    ultra_catalog: Any,
) -> None:
    stack = ultra_stack(ultra_catalog)
    index = render(stack)[-1].content
    apply = "kubectl apply --server-side -f run/shared.yaml"
    assert apply in index
    assert index.index(apply) < index.index("kubectl apply --server-side -f run/fabric-test.yaml")
    generic = render_runbook(
        runbook_context(
            name="my-run",
            region="us-east-2",
            namespace="training",
            spec="stacks/my-run.yaml",
            kind="trainjob",
            nodes=16,
        )
    )
    for text in (index, generic, render(preset_stack("llama3-70b-p5"))[-1].content):
        for line in text.splitlines():
            if "kubectl delete" in line or "kubectl replace" in line:
                assert "shared.yaml" not in line, line
    # a stack with nothing shared renders no shared.yaml and its index does not mention it
    p5 = render(preset_stack("llama3-70b-p5"))
    assert "shared.yaml" not in {a.path for a in p5}
    assert "shared.yaml" not in p5[-1].content
    trial = {a.path: a.content for a in render_trial(stack, 5)}
    assert "kubectl apply --server-side -f shared.yaml" in trial["README.md"]
