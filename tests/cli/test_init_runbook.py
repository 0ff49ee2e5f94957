"""Jobs after a re-render: the run sequence (README, `init` README, rendered index) deletes a
finished fabric test before applying it again, and says how to re-apply a job whose immutable
fields changed (delete and apply, or replace --force) and what that costs a running job."""

from __future__ import annotations

from accelstack.cli.init_cmds import project_files
from accelstack.render import render_runbook, runbook_context
from tests.conftest import ROOT

DELETE_FABRIC = "kubectl delete --ignore-not-found --wait -f run/fabric-test.yaml"
APPLY_FABRIC = "kubectl apply --server-side -f run/fabric-test.yaml"


def generic() -> str:
    return render_runbook(
        runbook_context(
            name="my-run",
            region="us-east-2",
            namespace="training",
            spec="stacks/my-run.yaml",
            kind="trainjob",
            nodes=16,
        )
    )


def test_a_finished_fabric_test_is_deleted_before_it_runs_again() -> None:
    """Fails on the old sequence: a finished TrainJob stays, and applying it again changes
    nothing, so the fabric test could not be re-run."""
    for text in (generic(), (ROOT / "README.md").read_text(encoding="utf-8")):
        assert DELETE_FABRIC in text and text.index(DELETE_FABRIC) < text.index(APPLY_FABRIC)


def test_the_sequence_says_how_to_reapply_an_immutable_change_and_its_cost() -> None:
    init = project_files("p", "dev", "llama3-70b-p5", "us-east-2", "0")["README.md"]
    for text in (generic(), init, (ROOT / "README.md").read_text(encoding="utf-8")):
        flat = " ".join(text.split())
        assert "`trainer` and `runtimeRef`" in flat
        assert "kubectl delete --wait -f run/trainjob.yaml" in flat
        assert "kubectl replace --force -f run/trainjob.yaml" in flat
        assert "deletes the running job and its pods" in flat
        assert "resumes from its last checkpoint" in flat
