"""The reference benchmark's model and command line, in this process on the CPU: the decoder
has the planned shape's parameters, trains (dense and mixture of experts), routes every token
to its place in its experts' queues, and says what it runs in the fields the wrapper records."""

from __future__ import annotations

from typing import Any

import pytest

from accelstack.trial import runner
from accelstack.trial import shape as planner

pytestmark = pytest.mark.slow  # imports torch


@pytest.fixture(scope="module")
def ref() -> Any:
    pytest.importorskip("torch", reason="run `pip install torch==2.13.0` (CPU build)")
    from accelstack.trial import reference

    return reference


DENSE = planner.Shape(layers=2, hidden=64, heads=4, kv_heads=2, vocab=128, ffn=96)
MOE = planner.Shape(layers=2, hidden=64, heads=4, kv_heads=2, vocab=128, ffn=32, experts=4, top_k=2)


@pytest.mark.parametrize("shape", [DENSE, MOE], ids=["dense", "moe"])
@pytest.mark.parametrize("checkpointing", [False, True], ids=["eager", "checkpointing"])
def test_the_decoder_has_the_shapes_parameters_and_trains(
    ref: Any, shape: planner.Shape, checkpointing: bool
) -> None:
    import torch

    torch.manual_seed(0)
    model = ref.Decoder(shape, checkpointing)
    assert sum(p.numel() for p in model.parameters()) == shape.params()
    ids = torch.randint(shape.vocab, (2, 17))
    loss = model(ids[:, :-1], ids[:, 1:])
    assert torch.isfinite(loss) and loss.item() == pytest.approx(
        torch.log(torch.tensor(128.0)).item(), rel=0.2
    )
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())


def test_each_routed_token_takes_its_place_in_its_experts_queue(ref: Any) -> None:
    import torch

    which = torch.tensor([2, 0, 2, 1, 2, 0])
    assert ref._positions(which, 3).tolist() == [0, 0, 1, 0, 2, 1]


def test_tokens_over_an_experts_capacity_are_dropped(
    ref: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a capacity of one slot per expert, tokens after the first to each expert add
    nothing (Switch Transformer's dropped tokens)."""
    import torch

    torch.manual_seed(0)
    experts = ref.Experts(planner.Shape(1, 8, 2, 1, 16, 4, experts=2, top_k=1))
    with torch.no_grad():
        experts.router.weight.zero_()
        experts.router.weight[0, 0] = 1.0  # every token with a positive first feature: expert 0
    x = torch.ones(1, 4, 8)
    monkeypatch.setattr(ref, "CAPACITY_FACTOR", 0.5)  # ceil(0.5 x 4 x 1 / 2) = 1 slot each
    out = experts(x)
    assert out[0, 0].abs().sum() > 0 and out[0, 1:].abs().sum() == 0


def test_what_it_runs_is_what_the_wrapper_records(ref: Any) -> None:
    dev = ref.pick_device(0)
    assert (dev.kind, dev.backend, dev.memory_bytes) == ("cpu", "gloo", None)
    run = ref.Run(MOE, 256, 2, False, True, {"params_billion": 1.0})
    report = run.report(dev, 2, float(MOE.active_params()))
    assert set(report) <= runner.SHAPE_FIELDS
    assert report["experts"] == 4 and report["active_params_billion"] == MOE.active_params() / 1e9
    assert report["activation_checkpointing"] is True and report["devices"] == 2


def test_a_shape_that_does_not_fit_stops_before_the_process_group(
    ref: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--params-billion", "8.03", "--layers", "32", "--hidden-size", "4096"]
    argv += ["--sequence-lengths", "8192", "--device-memory-gib", "1"]
    assert ref.main(argv) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("accelstack reference: not even one layer of this shape fits")


def test_the_ddp_model_is_gone_before_the_process_group_is_destroyed(
    ref: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """DDP sits in reference cycles, so it outlives the frame that built it until a
    collection. Left to the one the interpreter runs as it shuts down, a gloo worker thread
    freeing the last collective's work aborts the rank ("terminate called without an active
    exception": 8 of 290 trial runs of a DDP entrypoint on this CPU build, 0 of 120 with the
    collection first; docs/cost.md). Automatic collection is off here, so only the benchmark's
    own collection can free it."""
    import gc
    import socket

    import torch

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1"}
    for key, value in {**env, "MASTER_PORT": str(port), "ACCELSTACK_MAX_STEPS": "2"}.items():
        monkeypatch.setenv(key, value)
    ddp = torch.nn.parallel.DistributedDataParallel
    alive: list[int] = []
    destroy = ref.dist.destroy_process_group

    def checked_destroy() -> None:
        alive.append(sum(type(o) is ddp for o in gc.get_objects()))
        destroy()

    monkeypatch.setattr(ref.dist, "destroy_process_group", checked_destroy)
    monkeypatch.setattr(runner, "_TIMER", runner._Timer())  # its steps are this test's only
    argv = ["--params-billion", "0.0001", "--layers", "2", "--hidden-size", "64", "--heads", "4"]
    argv += ["--kv-heads", "2", "--vocab", "128", "--ffn-hidden", "96", "--compile", "off"]
    argv += ["--sequence-lengths", "16", "--micro-batch-tokens", "32", "--device-memory-gib", "8"]
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        assert ref.main(argv) == 0, capsys.readouterr().err
    finally:
        if was_enabled:
            gc.enable()
    assert alive == [0]
