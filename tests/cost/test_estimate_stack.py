"""The training stack as a spec setting: workload.stack selects the step model's rates of that
stack (dense offset, attention and context-parallel rates); unset means the centre with the
stacks' spread; a stack without records on the curve keeps the centre and says so; an unknown
stack is refused in one line."""

from __future__ import annotations

import json
from typing import Any

import pytest

from accelstack.catalog import load_catalog
from accelstack.cost.estimate import estimate_training
from accelstack.cost.guard import check_budget, verdict_json
from accelstack.errors import SpecError
from accelstack.resolve import resolve
from accelstack.spec import Workload, parse_spec

from .. import factories

CAT = load_catalog()


def _wl(precision: str = "fp8", stack: str | None = None) -> Workload:
    body: dict[str, Any] = {
        "model": {"params_billion": 70.6},
        "tokens_billion": 100,
        "precision": precision,
        "entrypoint": "t.py",
    }
    if stack:
        body["stack"] = stack
    return Workload.model_validate(body)


def test_a_named_stack_uses_its_rates_and_a_narrower_range() -> None:
    """H100 FP8: NeMo rows sit ~0.1 above the centre's dense rate, torchtitan Float8 ~0.09
    below; naming one uses its dense offset (and its attention and context-parallel rates)."""
    centre = estimate_training(CAT, "p5.48xlarge", 1, _wl())
    nemo = estimate_training(CAT, "p5.48xlarge", 1, _wl(stack="nemo"))
    titan = estimate_training(CAT, "p5.48xlarge", 1, _wl(stack="torchtitan"))
    curve = CAT.mfu_curve("h100", "fp8")
    assert curve.stacks["nemo"] > 0.05 > -0.05 > curve.stacks["torchtitan"]
    assert titan.mfu < centre.mfu < nemo.mfu
    # unset: the centre with every stack in its range; named: that stack only
    assert centre.mfu_range[0] < titan.mfu < nemo.mfu < centre.mfu_range[1]
    width = lambda e: e.mfu_range[1] / e.mfu_range[0]  # noqa: E731
    assert width(nemo) < width(centre) and width(titan) < width(centre)
    assert f"stack nemo, offset {curve.stacks['nemo']:+.3f}" in nemo.mfu_source
    assert nemo.pick.stack == "nemo" and centre.pick.stack is None


def test_nemo_on_h100_bf16_is_no_longer_the_centre() -> None:
    """`workload.stack: nemo` fell back to the centre on H100 BF16 (no NeMo BF16 record):
    NVIDIA's DGX Cloud tables now give NeMo its own BF16 rates, above the centre."""
    centre = estimate_training(CAT, "p5.48xlarge", 8, _wl("bf16"))
    nemo = estimate_training(CAT, "p5.48xlarge", 8, _wl("bf16", stack="nemo"))
    assert "nemo" in CAT.mfu_curve("h100", "bf16").stacks
    assert nemo.pick.stack == "nemo" and nemo.mfu > centre.mfu * 1.1
    assert "has no record here" not in nemo.mfu_source


def test_a_stack_without_records_on_the_curve_keeps_the_centre() -> None:
    centre = estimate_training(CAT, "trn2.48xlarge", 1, _wl("bf16"))
    tn = estimate_training(CAT, "trn2.48xlarge", 1, _wl("bf16", stack="torchneuron"))
    assert tn.mfu == pytest.approx(centre.mfu) and tn.mfu_range == pytest.approx(centre.mfu_range)
    assert "torchneuron has no record here: the stacks' spread" in tn.mfu_source
    assert tn.pick.stack is None


def _spec(stack: str) -> dict[str, Any]:
    return factories.preset("llama3-70b-p5", {"workload.stack": stack})


def test_an_unknown_stack_is_refused_in_one_line() -> None:
    with pytest.raises(SpecError) as exc:
        resolve(parse_spec(_spec("torchtitn"), "stacks/t.yaml"))
    text = str(exc.value)
    assert "workload.stack" in text and "'torchtitn' is not a known training stack" in text
    assert "did you mean 'torchtitan'" in text
    assert len(text.strip().splitlines()) == 1


def test_price_json_names_the_stack() -> None:
    v = check_budget(resolve(parse_spec(_spec("torchtitan"), "t")))
    doc = json.loads(verdict_json(v))
    assert doc["training"]["stack"] == "torchtitan"
    assert "stack torchtitan" in doc["training"]["mfu_source"]
    plain = factories.preset("llama3-70b-p5")
    assert (
        json.loads(verdict_json(check_budget(resolve(parse_spec(plain, "t")))))["training"]["stack"]
        is None
    )
