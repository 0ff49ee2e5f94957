"""The reference benchmark's shape: the spec's size, layers and hidden size make Llama 3's
shape, and `fit` scales it to one device, fewer layers first, saying what it changed."""

from __future__ import annotations

import pytest

from accelstack.trial import shape as planner

GIB = 2**30


@pytest.mark.parametrize(
    ("params", "layers", "hidden", "ffn", "heads", "count"),
    [
        # meta-llama/llama-models@084b88e9 models/sku_list.py; the parameter counts of the
        # published checkpoints (8,030,261,248 and 70,553,706,496)
        (8.03, 32, 4096, 14336, 32, 8_030_261_248),
        (70.6, 80, 8192, 28672, 64, 70_553_706_496),
    ],
)
def test_the_spec_size_gives_llama3s_shape(
    params: float, layers: int, hidden: int, ffn: int, heads: int, count: int
) -> None:
    s = planner.llama_shape(params, layers, hidden)
    assert (s.ffn, s.heads, s.kv_heads, s.vocab) == (ffn, heads, 8, 128256)
    assert s.params() == count and s.active_params() == count


def test_a_mixture_of_experts_solves_the_expert_width() -> None:
    """Mixtral 8x7B's sizes (46.7B, 12.9B active, 32 x 4096, vocabulary 32,000): E 8, top 2
    give its expert width of 14,336."""
    s = planner.llama_shape(
        46.7, 32, 4096, vocab=32000, active_params_billion=12.9, experts=8, top_k=2
    )
    assert (s.ffn, s.experts, s.top_k) == (14336, 8, 2)
    assert s.params() / 1e9 == pytest.approx(46.7, rel=0.01)
    assert s.active_params() / 1e9 == pytest.approx(12.9, rel=0.01)
    with pytest.raises(planner.ShapeError, match="needs its expert count and top-k"):
        planner.llama_shape(46.7, 32, 4096, active_params_billion=12.9)


def test_sizes_that_make_no_llama_shape_are_refused() -> None:
    with pytest.raises(planner.ShapeError, match="leaves no room for an MLP"):
        planner.llama_shape(1.0, 80, 8192)
    with pytest.raises(planner.ShapeError, match="must divide by the heads"):
        planner.llama_shape(8.03, 32, 4096, heads=30)


def test_fit_takes_fewer_layers_first_and_says_so() -> None:
    full = planner.llama_shape(70.6, 80, 8192)
    s = planner.fit(full, 80 * GIB, 8192)
    assert (s.layers, s.hidden, s.heads, s.kv_heads, s.vocab) == (1, 8192, 64, 8, 128256)
    assert s.notes[0] == "layers 1 of 80 (fewer layers to fit one device)"
    assert planner.memory_bytes(s, 8192, False) <= 80 * GIB * planner.USABLE_FRACTION
    more = planner.fit(planner.llama_shape(8.03, 32, 4096), 141 * GIB, 8192)  # an H200
    assert 1 < more.layers < 32
    assert planner.memory_bytes(more, 8192, False) <= 141 * GIB * planner.USABLE_FRACTION
    room = planner.fit(more, 141 * GIB, 8192, max_layers=2)
    assert room.layers == 2 and room.notes[0].startswith("layers capped at 2")
    # checkpointing keeps one layer's activations: more layers fit
    assert planner.fit(full, 80 * GIB, 8192, checkpointing=True).layers >= s.layers


def test_fit_then_shrinks_the_vocabulary_and_experts_never_the_width() -> None:
    big = planner.fit(planner.llama_shape(405, 126, 16384), 80 * GIB, 8192)
    assert big.layers == 1 and big.hidden == 16384 and big.vocab < 128256
    assert any(n.startswith(f"vocabulary {big.vocab:,} of 128,256") for n in big.notes)
    moe = planner.llama_shape(
        671, 61, 7168, vocab=129280, active_params_billion=37, experts=256, top_k=8
    )
    fitted = planner.fit(moe, 80 * GIB, 4096)
    assert fitted.experts < 256 and fitted.top_k == 8 and fitted.ffn == moe.ffn
    assert any(n.startswith(f"experts {fitted.experts} of 256") for n in fitted.notes)
    with pytest.raises(planner.ShapeError, match="not even one layer"):
        planner.fit(planner.llama_shape(405, 126, 16384), 8 * GIB, 8192)
