"""`accelstack trial` on EKS: a manifest of the stack's job kind per pool (beside the real job,
the wrapper in its ConfigMap), on N nodes (`--nodes`) so calibration can measure scaling."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from accelstack.cli import main
from accelstack.errors import AccelstackError
from accelstack.render.trial import WRAPPER, render_trial, trial_nodes
from accelstack.trial import runner

from ..conftest import STACKS
from ..helpers_render import preset_stack
from ..helpers_upstream import model_problems
from .test_trainjob import _jobs


def _docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def test_eks_trial_renders_a_trainjob_per_pool_on_n_nodes() -> None:
    stack = preset_stack("llama3-70b-trn2")
    arts = {a.path: a for a in render_trial(stack, 10, nodes=2)}
    assert set(arts) == {"trial-trn2.sh", "trial-trn2.yaml", WRAPPER, "README.md"}
    docs = _docs(arts["trial-trn2.yaml"].content)
    by_kind = {d["kind"]: d for d in docs}
    tj, rt, cm = by_kind["TrainJob"], by_kind["TrainingRuntime"], by_kind["ConfigMap"]
    assert model_problems(tj) == [] and model_problems(rt) == []
    assert tj["metadata"]["name"] == "llama3-70b-trn2-trial-trn2"  # not the real job's name
    assert tj["spec"]["trainer"]["numNodes"] == 2
    assert cm["metadata"]["name"] == "llama3-70b-trn2-trial-trn2-launch"
    assert cm["data"][WRAPPER] == arts[WRAPPER].content
    script = cm["data"]["launch-trn2.sh"]
    assert "/etc/accelstack/accelstack_trial.py" in script
    assert "ACCELSTACK_TRIAL_RECORDS=/fsx/accelstack-trial/llama3-70b-trn2/" in script
    assert "ACCELSTACK_MAX_STEPS=10" in script
    for d in (cm, by_kind["NetworkPolicy"]):
        kubernetes_validate.validate(d, stack.kubernetes_version, strict=True)
    assert "kubectl apply --server-side -f trial-trn2.yaml" in arts["README.md"].content


def test_trial_follows_the_stack_job_kind_and_caps_nodes() -> None:
    plain = _jobs("trn1-multinode", controller="none")
    arts = {a.path: a for a in render_trial(plain, 5, nodes=99)}
    (job,) = [d for d in _docs(arts["trial-trn1.yaml"].content) if d["kind"] == "Job"]
    assert job["spec"]["completions"] == plain.workload_pool.nodes == 4  # capped at the pool
    assert job["metadata"]["name"] == "trn1-multinode-trial-trn1"
    # no FSx: records in the pod's /tmp and in its log
    assert "ACCELSTACK_TRIAL_RECORDS=/tmp/trial-records.jsonl" in arts["trial-trn1.yaml"].content
    assert trial_nodes(plain, "trn1", 2) == 2
    with pytest.raises(AccelstackError):
        trial_nodes(plain, "trn1", 0)


def test_standalone_trial_has_no_manifest() -> None:
    names = [a.path for a in render_trial(preset_stack("trn1-standalone"), 5)]
    assert not [n for n in names if n.endswith(".yaml")]


def test_runner_prints_the_record_for_pod_logs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    entry = tmp_path / "entry.py"
    entry.write_text(
        "import accelstack_trial\nfor _ in range(3):\n    accelstack_trial.step_done(tokens=100)\n"
    )
    records = tmp_path / "r.jsonl"
    monkeypatch.setenv("ACCELSTACK_TRIAL_RECORDS", str(records))
    monkeypatch.setenv("ACCELSTACK_TRIAL_INSTANCE_TYPE", "trn2.48xlarge")
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    assert runner.main([str(entry)]) == 0
    (line,) = [
        x for x in capsys.readouterr().out.splitlines() if x.startswith(runner.RECORD_PREFIX)
    ]
    printed = json.loads(line[len(runner.RECORD_PREFIX) :])
    assert printed == json.loads(records.read_text())


def test_cli_trial_nodes_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(
        ["trial", str(STACKS / "llama3-70b-p5.yaml"), "-o", str(tmp_path / "t"), "--nodes", "4"]
    )
    assert rc == 0
    text = (tmp_path / "t" / "trial-h100.yaml").read_text()
    (tj,) = [d for d in _docs(text) if d["kind"] == "TrainJob"]
    assert tj["spec"]["trainer"]["numNodes"] == 4
    assert "trial-h100.yaml" in capsys.readouterr().out


def test_job_names_leave_room_for_jobset_pod_names() -> None:
    """The longest stack name the `kubernetes-names` rule allows with a fabric test (37), the
    longest pool name (24) and a 2,048-node pool give JobSet pod names (with the 5-character
    suffix the webhook counts) that are DNS labels: training, fabric test and trial; the trial
    falls back to the pool's position where `<stack>-trial-<pool>` would not fit."""
    from accelstack.catalog import load_catalog
    from accelstack.render.artifacts import DNS_LABEL_MAX, jobset_pod_name_fits
    from accelstack.render.trial import trial_job_name
    from accelstack.resolve import resolve_unchecked
    from accelstack.spec import Spec, load_spec

    data = load_spec(STACKS / "llama3-70b-p5.yaml").model_dump()
    data["name"] = "a" * 37
    data["pools"][0]["name"] = data["workload"]["pool"] = "p" * 24
    data["pools"][0]["nodes"] = 512
    stack = resolve_unchecked(Spec.model_validate(data), load_catalog())
    assert jobset_pod_name_fits(stack.name, "node", 2048)
    assert jobset_pod_name_fits(f"{stack.name}-fabric", "launcher", 1)
    assert jobset_pod_name_fits(f"{stack.name}-fabric", "node", 2048)
    name = trial_job_name(stack, "p" * 24, 2048)
    assert name == f"{stack.name}-trial0"  # the pool's position: the long name would not fit
    assert jobset_pod_name_fits(name, "node", 2048) and len(name) <= DNS_LABEL_MAX
    # the webhook's 5-character suffix counts: 49 + "-node-0-0" is 58, 64 with "-abcde"
    assert not jobset_pod_name_fits("x" * 49, "node", 1)
    assert jobset_pod_name_fits("x" * 48, "node", 1)


# ---- `trial --reference`: the shipped benchmark instead of the user's entrypoint -------


def test_reference_trial_runs_the_shipped_benchmark_at_the_specs_shape() -> None:
    from accelstack.render.reference import REFERENCE, SHAPE, ReferenceOptions

    stack = preset_stack("llama3-70b-p5")
    arts = {a.path: a for a in render_trial(stack, 12, reference=ReferenceOptions())}
    assert {WRAPPER, REFERENCE, SHAPE} <= set(arts)
    script = arts["trial-h100.sh"].content
    assert "/workspace/" not in script  # no user entrypoint
    args = script.split("workload_args=(\n", 1)[1].split("\n)", 1)[0].split()
    assert args == [
        f"./{REFERENCE}",
        *("--params-billion", "70.6", "--layers", "80", "--hidden-size", "8192"),
        *("--sequence-lengths", "4096,8192"),  # half the spec's sequence and the spec's
        *("--device-memory-gib", "80", "--compile", "auto", "--checkpointing", "off"),
    ]
    assert "ACCELSTACK_TRIAL_RANKS_PER_DEVICE=1" in script
    cm = next(d for d in _docs(arts["trial-h100.yaml"].content) if d["kind"] == "ConfigMap")
    assert cm["data"][REFERENCE] == arts[REFERENCE].content
    assert cm["data"][SHAPE] == arts[SHAPE].content
    assert f"/etc/accelstack/{REFERENCE}" in cm["data"]["launch-h100.sh"]
    readme = arts["README.md"].content
    assert "pool h100: the reference runs 1 layer(s) of hidden 8192" in readme
    assert "layers 1 of 80 (fewer layers to fit one device)" in readme


def test_reference_trial_refuses_what_it_cannot_run(tmp_path: Path, capsys) -> None:
    from accelstack.render.reference import ReferenceOptions

    with pytest.raises(AccelstackError, match="pool 'trn1' runs the xla training path"):
        render_trial(_jobs("trn1-multinode", controller="none"), 5, reference=ReferenceOptions())
    moe = preset_stack("llama3-70b-trn2")
    spec = tmp_path / "moe.yaml"
    data = yaml.safe_load((STACKS / "llama3-70b-trn2.yaml").read_text())
    data["name"] = "moe"
    data["workload"]["model"].update(params_billion=46.7, active_params_billion=12.9)
    data["workload"]["model"].update(layers=32, hidden_size=4096)
    spec.write_text(yaml.safe_dump(data))
    out = tmp_path / "t"
    assert main(["trial", str(spec), "-o", str(out), "--reference"]) == 2
    err = capsys.readouterr().err
    assert "needs its expert count and top-k (--experts E --top-k K" in err
    assert (
        main(["trial", str(spec), "-o", str(out), "--reference", "--experts", "8", "--top-k", "2"])
        == 0
    )
    printed = capsys.readouterr().out
    assert (
        "MLP 14336, 3 experts top-2" in printed and "experts 3 of 8 (to fit one device)" in printed
    )
    assert moe.workload.model.layers == 80  # the preset itself is untouched
