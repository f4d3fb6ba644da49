"""attn.analysis: per-head summaries of attention weights against direct loops, and switching heads off."""

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch_reference import close, randn

from attn.analysis import (
    ablate_heads,
    attention_distance,
    attention_entropy,
    induction_targets,
    mass_on,
    previous_token_targets,
)
from attn.blocks import MultiHeadAttention
from attn.data.sequences import repeated_sequences
from attn.training import seeded
from attn.transformer import LanguageModel, LanguageModelConfig


def random_weights(B, H, Tq, Tk, seed=0, drop=True):
    """Softmax rows over random logits; with ``drop``, some keys masked out (exact zeros), key 0 always kept."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(B, H, Tq, Tk, generator=g) * 2
    if drop:
        dropped = torch.rand(B, H, Tq, Tk, generator=g) < 0.3
        dropped[..., 0] = False
        logits = logits.masked_fill(dropped, -math.inf)
    return logits.softmax(-1)


def random_queries(B, Tq, seed=0):
    """A (B, Tq) bool mask with at least one True."""
    queries = torch.rand(B, Tq, generator=torch.Generator().manual_seed(seed)) < 0.6
    queries[0, 0] = True
    return queries


def per_row_mean(weights, queries, value):
    """``value(row, i)`` averaged over the counted query rows, head by head, with plain loops."""
    B, H, Tq, _ = weights.shape
    out = []
    for h in range(H):
        values = [value(weights[b, h, i], i) for b in range(B) for i in range(Tq) if bool(queries[b, i])]
        out.append(sum(values) / len(values))
    return torch.tensor(out, dtype=weights.dtype)


shapes = st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 6), st.integers(1, 6))


# ---------------------------------------------------------------- entropy


def test_entropy_is_zero_on_one_token_and_log_t_when_uniform():
    one_hot = torch.eye(5).expand(2, 3, 5, 5)  # (B, H, T, T): every row on one key
    assert torch.equal(attention_entropy(one_hot), torch.zeros(3))
    for T in (1, 2, 7):
        uniform = torch.full((2, 3, 4, T), 1 / T)
        close(attention_entropy(uniform), torch.full((3,), math.log(T)))


def test_entropy_is_one_number_per_head():
    weights = torch.stack([torch.eye(4), torch.full((4, 4), 0.25)])[None]  # (1, 2, 4, 4): sharp, uniform
    close(attention_entropy(weights), torch.tensor([0.0, math.log(4)]))


def test_entropy_ignores_rows_outside_queries():
    weights = random_weights(2, 3, 4, 6, seed=1)
    padded = torch.cat([weights, torch.full((2, 3, 3, 6), 7.0)], dim=2)  # 3 garbage query rows
    queries = torch.tensor([[True] * 4 + [False] * 3] * 2)
    close(attention_entropy(padded, queries), attention_entropy(weights))
    assert not torch.allclose(attention_entropy(padded), attention_entropy(weights))  # they would count


@given(shapes, st.integers(0, 2**16), st.booleans())
def test_entropy_matches_a_loop(shape, seed, masked):
    weights = random_weights(*shape, seed=seed)
    queries = random_queries(shape[0], shape[2], seed) if masked else torch.ones(shape[0], shape[2], dtype=torch.bool)
    expected = per_row_mean(weights, queries, lambda row, i: float(torch.special.entr(row).sum()))
    result = attention_entropy(weights, queries if masked else None)
    assert result.shape == (shape[1],) and torch.isfinite(result).all()  # 0 log 0 = 0 at masked keys
    close(result, expected)


# ---------------------------------------------------------------- distance


def test_distance_is_zero_on_the_diagonal_and_the_mean_position_on_key_zero():
    assert torch.equal(attention_distance(torch.eye(6).expand(2, 3, 6, 6)), torch.zeros(3))
    first = torch.zeros(2, 3, 5, 7)
    first[..., 0] = 1  # every query looks at key 0: distance i
    close(attention_distance(first), torch.full((3,), 2.0))  # mean of 0..4
    queries = torch.tensor([[False, True, False, True, False], [False] * 4 + [True]])
    close(attention_distance(first, queries), torch.full((3,), (1 + 3 + 4) / 3))


@given(shapes, st.integers(0, 2**16), st.booleans())
def test_distance_matches_a_loop(shape, seed, masked):
    weights = random_weights(*shape, seed=seed)
    queries = random_queries(shape[0], shape[2], seed) if masked else torch.ones(shape[0], shape[2], dtype=torch.bool)

    def distance(row, i):
        return sum(float(a) * abs(i - j) for j, a in enumerate(row))

    close(attention_distance(weights, queries if masked else None), per_row_mean(weights, queries, distance))


# ---------------------------------------------------------------- mass_on


def test_previous_token_targets():
    assert torch.equal(
        previous_token_targets(4), torch.tensor([[0, 0, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]).bool()
    )
    assert previous_token_targets(1).shape == (1, 1) and not previous_token_targets(1).any()


def test_mass_on_previous_token_is_the_mean_of_the_sub_diagonal():
    weights = random_weights(2, 3, 5, 5, seed=2, drop=False)
    sub_diagonal = weights.diagonal(-1, dim1=-2, dim2=-1)  # (B, H, T-1): query i on key i-1
    targets = previous_token_targets(5)
    close(mass_on(weights, targets), sub_diagonal.sum(-1).mean(0) / 5)  # query 0 has no previous token
    after_first = torch.tensor([[False] + [True] * 4] * 2)
    close(mass_on(weights, targets, after_first), sub_diagonal.mean((0, 2)))


def test_mass_on_one_key_per_sentence():
    weights = random_weights(2, 3, 4, 6, seed=3)
    targets = torch.zeros(2, 1, 6, dtype=torch.bool)  # (B, 1, Tk): "the [SEP] token", different per sentence
    targets[0, 0, 2] = targets[1, 0, 5] = True
    expected = torch.stack([weights[0, :, :, 2], weights[1, :, :, 5]]).mean((0, 2))  # (H,)
    close(mass_on(weights, targets), expected)
    everything = torch.ones(6, dtype=torch.bool)
    close(mass_on(weights, everything), torch.ones(3))  # rows sum to 1


@given(shapes, st.integers(0, 2**16))
def test_mass_on_matches_a_loop(shape, seed):
    B, H, Tq, Tk = shape
    weights = random_weights(*shape, seed=seed)
    g = torch.Generator().manual_seed(seed + 1)
    targets = torch.rand(B, Tq, Tk, generator=g) < 0.4
    queries = random_queries(B, Tq, seed)
    rows = [(b, i) for b in range(B) for i in range(Tq) if queries[b, i]]
    expected = [
        sum(float(weights[b, h, i, j]) for b, i in rows for j in range(Tk) if targets[b, i, j]) / len(rows)
        for h in range(H)
    ]
    close(mass_on(weights, targets, queries), torch.tensor(expected))


def test_mass_on_bad_targets():
    weights = random_weights(2, 3, 4, 4)
    with pytest.raises(ValueError, match=r"targets must be a bool mask, got torch.float32"):
        mass_on(weights, previous_token_targets(4).float())
    with pytest.raises(ValueError, match=r"targets must be a bool mask, got torch.int64"):
        mass_on(weights, previous_token_targets(4).long())
    with pytest.raises(ValueError, match=r"targets must broadcast to \(B, Tq, Tk\) = \(2, 4, 4\), got \(3, 3\)"):
        mass_on(weights, previous_token_targets(3))
    with pytest.raises(ValueError, match=r"targets must broadcast to \(B, Tq, Tk\) = \(2, 4, 4\), got \(3, 1, 4\)"):
        mass_on(weights, torch.ones(3, 1, 4, dtype=torch.bool))


@pytest.mark.parametrize(
    "summary",
    [attention_entropy, attention_distance, lambda w, q=None: mass_on(w, torch.ones(1, dtype=torch.bool), q)],
    ids=["entropy", "distance", "mass_on"],
)
def test_summaries_reject_bad_weights_and_queries(summary):
    with pytest.raises(ValueError, match=r"weights must be one layer's attention \(B, H, Tq, Tk\), got \(3, 4, 4\)"):
        summary(torch.rand(3, 4, 4))
    with pytest.raises(ValueError, match=r"weights must be one layer's attention \(B, H, Tq, Tk\), got tuple"):
        summary((torch.rand(1, 2, 4, 4),))  # a model's whole tuple over layers, not one layer
    weights = random_weights(2, 3, 4, 5)
    with pytest.raises(ValueError, match=r"queries must be a \(B, Tq\) = \(2, 4\) bool mask, got \(4,\)"):
        summary(weights, torch.ones(4, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"queries must be a \(B, Tq\) = \(2, 4\) bool mask, got \(2, 5\)"):
        summary(weights, torch.ones(2, 5, dtype=torch.bool))


# ---------------------------------------------------------------- induction_targets


def test_induction_targets_by_hand():
    # Period 2: "a b a b a"; query 2 ("a") last saw "a" at 0, followed by "b" at 1: key 1. Query 4 ("a") saw "a"
    # at 0 and at 2: keys 1 and 3. Period 3: "a b c a b".
    targets = induction_targets(torch.tensor([2, 3]), 5)
    marked = {(int(b), int(q), int(k)) for b, q, k in targets.nonzero()}
    assert marked == {(0, 2, 1), (0, 3, 2), (0, 4, 3), (0, 4, 1), (1, 3, 1), (1, 4, 2)}
    assert targets.shape == (2, 5, 5) and targets.dtype == torch.bool


@given(st.integers(0, 2**16), st.integers(3, 20), st.data())
def test_induction_targets_mark_what_followed_every_earlier_occurrence(seed, length, data):
    low = data.draw(st.integers(1, length - 1))
    high = data.draw(st.integers(low, length - 1))
    tokens, periods = repeated_sequences(6, length, num_symbols=5, periods=(low, high), seed=seed)
    targets = induction_targets(periods, length)
    for b in range(6):
        p = int(periods[b])
        for q in range(length):
            keys = targets[b, q].nonzero().flatten().tolist()
            # the positions one or more whole periods back: every earlier occurrence of the segment's token
            assert keys == [q - m * p + 1 for m in range(q // p, 0, -1)]  # none before one period has passed
            for key in keys:
                assert 1 <= key <= q  # a causal head can see it
                assert tokens[b, key - 1] == tokens[b, q]  # an earlier occurrence of the query's token ...
                if q + 1 < length:
                    assert tokens[b, key] == tokens[b, q + 1]  # ... followed by the token that comes next


# ---------------------------------------------------------------- ablate_heads


def by_hand(mha, x, off):
    """Multi-head self-attention recomputed from the per-head weights, with the heads in ``off`` zeroed."""
    B, T, _ = x.shape
    _, weights = mha(x, x, x, need_weights=True)  # (B, H, T, T)
    v = mha.W_v(x).view(B, T, mha.h, mha.d_k).transpose(1, 2)  # (B, H, T, d_k)
    heads = weights @ v
    heads[:, list(off)] = 0
    return mha.W_o(heads.transpose(1, 2).reshape(B, T, mha.d_model))


def small_attention(seed=0):
    with seeded(seed):
        mha = MultiHeadAttention(12, 3)
        for p in mha.parameters():  # non-zero biases too
            torch.nn.init.normal_(p, std=0.3)
    return mha


@pytest.mark.parametrize("off", [(0,), (1,), (2,), (0, 2)])
def test_ablating_a_head_drops_its_output_before_w_o(off):
    mha = small_attention(1)
    x = randn(2, 5, 12, seed=2)
    with torch.no_grad():
        full = mha(x, x, x)[0]
        close(full, by_hand(mha, x, ()))
        with ablate_heads([mha], [(0, h) for h in off]):
            ablated, weights = mha(x, x, x)
            fused, _ = mha(x, x, x, need_weights=False)
        close(ablated, by_hand(mha, x, off))
        close(fused, ablated)
        assert (ablated - full).abs().max() > 1e-3
        assert torch.equal(weights, mha(x, x, x)[1])  # the head still attends; only its output is dropped


def test_ablating_every_head_leaves_only_the_output_bias():
    mha = small_attention(3)
    x = randn(2, 4, 12, seed=4)
    with torch.no_grad(), ablate_heads([mha], [(0, 0), (0, 1), (0, 2)]):
        assert torch.equal(mha.W_o.weight, torch.zeros(12, 12))
        close(mha(x, x, x)[0], mha.W_o.bias.expand(2, 4, 12))


def snapshot(*modules):
    return [p.detach().clone() for m in modules for p in m.parameters()]


def same(modules, saved):
    return all(torch.equal(p, s) for p, s in zip([p for m in modules for p in m.parameters()], saved, strict=True))


def test_weights_are_restored_after_the_block_and_after_an_error():
    layers = [small_attention(5), small_attention(6)]
    saved = snapshot(*layers)
    with ablate_heads(layers, [(0, 1), (1, 0), (1, 2)]):
        assert not same(layers, saved)
        assert torch.equal(layers[0].W_o.weight[:, 4:8], torch.zeros(12, 4))
        assert torch.equal(layers[0].W_o.weight[:, :4], saved[6][:, :4])  # the other heads are left alone
    assert same(layers, saved)
    with pytest.raises(RuntimeError, match="inside"), ablate_heads(layers, [(0, 0), (1, 1)]):
        assert not same(layers, saved)
        raise RuntimeError("inside the block")
    assert same(layers, saved)
    with ablate_heads(layers, [(0, 2), (0, 2), (1, 0)]):  # the same head twice
        pass
    assert same(layers, saved)
    with ablate_heads(layers, iter([(1, 1)])):  # any iterable of pairs
        assert torch.equal(layers[1].W_o.weight[:, 4:8], torch.zeros(12, 4))
    assert same(layers, saved)


@pytest.mark.parametrize(
    ("heads", "message"),
    [
        ([(0, 0), (2, 0)], r"layer 2 is out of range: the model has 2 layers"),
        ([(1, 1), (-1, 0)], r"layer -1 is out of range: the model has 2 layers"),
        ([(0, 1), (1, 3)], r"head 3 is out of range: layer 1 has 3 heads"),
        ([(0, -1)], r"head -1 is out of range: layer 0 has 3 heads"),
    ],
)
def test_bad_heads_are_refused_and_leave_the_weights_alone(heads, message):
    layers = [small_attention(7), small_attention(8)]
    saved = snapshot(*layers)
    with pytest.raises(ValueError, match=message), ablate_heads(layers, heads):
        pytest.fail("the block must not run")
    assert same(layers, saved)


def test_ablating_heads_of_an_attention_only_language_model():
    config = LanguageModelConfig(13, d_model=16, num_heads=2, num_layers=2, d_ff=0, dropout=0.0, max_len=8)
    with seeded(0):
        model = LanguageModel(config).eval()
    attentions = [layer.self_attention for layer in model.layers.layers]
    tokens = torch.tensor([[1, 5, 6, 7, 8, 2], [1, 9, 10, 2, 0, 0]])
    with torch.no_grad():
        before = model(tokens).logits
        for heads in ([(0, 0)], [(1, 1)], [(0, 0), (0, 1), (1, 0), (1, 1)]):
            with ablate_heads(attentions, heads):
                changed = model(tokens).logits
            assert (changed - before).abs().max() > 1e-3, heads
            assert torch.equal(model(tokens).logits, before)


def test_masks_that_are_not_tensors_are_value_errors():
    weights = torch.rand(1, 1, 2, 2).softmax(-1)
    with pytest.raises(ValueError, match="targets must be a bool tensor .* got list"):
        mass_on(weights, [[True, False]])
    with pytest.raises(ValueError, match=r"queries must be a \(B, Tq\) = \(1, 2\) bool mask, got list"):
        attention_entropy(weights, [[True, True]])
    with pytest.raises(ValueError, match=r"periods must be a \(B,\) integer tensor of periods >= 1"):
        induction_targets(torch.tensor([0]), 3)


def test_empty_or_float_query_masks_and_bad_indices_are_value_errors():
    weights = torch.rand(1, 2, 3, 3).softmax(-1)
    with pytest.raises(ValueError, match="queries marks no query row"):
        attention_entropy(weights, torch.zeros(1, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match="bool mask"):
        attention_distance(weights, torch.ones(1, 3))
    with pytest.raises(ValueError, match="T must be a positive int, got 0"):
        previous_token_targets(0)
    with pytest.raises(ValueError, match="integer tensor"):
        induction_targets(torch.tensor([2.0]), 4)
    mha = MultiHeadAttention(4, 2)
    bad = ablate_heads([mha, mha], [(True, 0)])
    with pytest.raises(ValueError, match=r"heads must hold \(layer, head\) pairs of ints, got \(True, 0\)"), bad:
        pass
