"""attn.transformer's Transformer and LanguageModel, built small: the embedding, attention maps that are causal and
ignore padding, permutation equivariance without positions, the same logits alone and in a padded batch, greedy
decoding and generation against step-by-step loops, the configs and bad input."""

import functools
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tiny_models import PROMPT, _reference_greedy, tiny_lm
from torch_reference import close

from attn.training import seeded
from attn.transformer import (
    Embedding,
    LanguageModel,
    LanguageModelConfig,
    Transformer,
    TransformerConfig,
)

D, H, D_FF = 16, 4, 32


# ---------------------------------------------------------------- models: small configs


def small_transformer(positions="sinusoidal", norm_first=False, seed=0, **kw) -> Transformer:
    config = TransformerConfig(11, 13, d_model=D, num_heads=H, num_layers=2, d_ff=D_FF, dropout=0.1,
                               max_len=16, positions=positions, norm_first=norm_first, **kw)  # fmt: skip
    with seeded(seed):
        return Transformer(config).eval()


def small_lm(positions="sinusoidal", causal=True, seed=0, **kw) -> LanguageModel:
    config = LanguageModelConfig(11, d_model=D, num_heads=H, num_layers=2, d_ff=D_FF, dropout=0.1,
                                 max_len=16, positions=positions, causal=causal, **kw)  # fmt: skip
    with seeded(seed):
        return LanguageModel(config).eval()


# Two sentences (pad = 0), the second one padded.
SOURCE = torch.tensor([[4, 5, 6, 7, 8, 9], [3, 10, 4, 0, 0, 0]])


TARGET = torch.tensor([[1, 12, 5, 6, 7], [1, 8, 0, 0, 0]])


@pytest.mark.parametrize("positions", ["sinusoidal", "learned", "none"])
def test_embedding_scales_by_sqrt_d_model_and_adds_positions(positions):
    with seeded(0):
        embedding = Embedding(11, D, 16, positions, dropout=0.1, pad=0).eval()
    tokens = torch.tensor([[3, 0, 7, 7]])
    x = embedding(tokens)
    table = embedding.positions.table[:4] if positions != "none" else torch.zeros(4, D)
    close(x[0], embedding.tokens.weight[tokens[0]] * math.sqrt(D) + table)
    assert torch.equal(embedding.tokens.weight[0], torch.zeros(D))  # the padding vector is zero
    assert 0.7 < float((embedding.tokens.weight[1:].detach() * math.sqrt(D)).std()) < 1.3  # unit-size entries


# ---------------------------------------------------------------- causal and padding maps


def test_transformer_attention_maps_are_causal_and_ignore_padding():
    out = small_transformer()(SOURCE, TARGET)
    source_keep, target_keep = SOURCE != 0, TARGET != 0
    assert len(out.encoder_attention) == len(out.decoder_attention) == len(out.cross_attention) == 2
    for w in out.decoder_attention:
        assert w.shape == (2, H, 5, 5)
        assert torch.all(torch.triu(w, 1) == 0)
        assert torch.all(w.masked_select(~target_keep[:, None, None, :].expand_as(w)) == 0)
        close(w.sum(-1), torch.ones(2, H, 5))
    for w, Tq in [*((w, 6) for w in out.encoder_attention), *((w, 5) for w in out.cross_attention)]:
        assert w.shape == (2, H, Tq, 6)
        assert torch.all(w.masked_select(~source_keep[:, None, None, :].expand_as(w)) == 0)
        close(w.sum(-1), torch.ones(2, H, Tq))
    assert torch.all(w[1, ..., 3:] == 0)  # the padding of sentence 1, spelled out


@pytest.mark.parametrize("norm_first", [False, True])
def test_language_model_attention_is_causal(norm_first):
    tokens = torch.tensor([[3, 4, 5, 6, 7, 8], [9, 10, 3, 0, 0, 0]])
    out = small_lm(norm_first=norm_first)(tokens)
    assert out.logits.shape == (2, 6, 11)
    for w in out.attention:
        assert w.shape == (2, H, 6, 6)
        assert torch.all(torch.triu(w, 1) == 0)
        assert torch.all(w[1, ..., 3:] == 0)
        close(w.sum(-1), torch.ones(2, H, 6))
    bidirectional = small_lm(causal=False)(tokens).attention[0]
    assert bool((bidirectional[0] > 0).all())  # without causal, the future is seen too
    assert torch.all(bidirectional[1, ..., 3:] == 0)


# ---------------------------------------------------------------- permutation equivariance


PERMUTATIONS = [[5, 4, 3, 2, 1, 0], [1, 0, 2, 3, 4, 5], [2, 3, 4, 5, 0, 1]]


@pytest.mark.parametrize("positions", ["none", "sinusoidal", "learned"])
def test_transformer_encoder_is_equivariant_only_without_positions(positions):
    model = small_transformer(positions)
    source, target = SOURCE[:1], TARGET[:1]
    with torch.no_grad():
        memory, weights = model.encode(source)
        logits = model(source, target).logits
        for perm in map(torch.tensor, PERMUTATIONS):
            memory_p, weights_p = model.encode(source[:, perm])
            out_p = model(source[:, perm], target)
            if positions == "none":
                close(memory_p, memory[:, perm])
                close(weights_p[-1], weights[-1][:, :, perm][..., perm])
                close(out_p.logits, logits)  # cross-attention reads the source as a set
                close(out_p.cross_attention[-1], model(source, target).cross_attention[-1][..., perm])
            else:
                assert (memory_p - memory[:, perm]).abs().max() > 1e-3
                assert (out_p.logits - logits).abs().max() > 1e-3


@pytest.mark.parametrize("positions", ["none", "sinusoidal", "learned"])
def test_bidirectional_language_model_is_equivariant_only_without_positions(positions):
    model = small_lm(positions, causal=False)
    tokens = torch.tensor([[3, 4, 5, 6, 7, 8]])
    with torch.no_grad():
        out = model(tokens)
        for perm in map(torch.tensor, PERMUTATIONS):
            out_p = model(tokens[:, perm])
            if positions == "none":
                close(out_p.logits, out.logits[:, perm])
                for w, w_p in zip(out.attention, out_p.attention, strict=True):
                    close(w_p, w[:, :, perm][..., perm])
            else:
                assert (out_p.logits - out.logits[:, perm]).abs().max() > 1e-3


@given(st.permutations(range(6)))
@settings(max_examples=30)
def test_bidirectional_language_model_without_positions_permutation_property(perm):
    perm = torch.tensor(perm)
    model = _lm_without_positions()
    tokens = torch.tensor([[3, 4, 5, 6, 3, 10], [7, 8, 9, 0, 0, 0]])  # with a repeated token and padding
    with torch.no_grad():
        out = model(tokens)
        out_p = model(tokens[:, perm])
    close(out_p.logits, out.logits[:, perm])
    for w, w_p in zip(out.attention, out_p.attention, strict=True):
        close(w_p, w[:, :, perm][..., perm])


@functools.cache
def _lm_without_positions() -> LanguageModel:
    return small_lm("none", causal=False)


# ---------------------------------------------------------------- configs and bad input


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"positions": "foo"}, r"positions must be one of \('sinusoidal', 'learned', 'none'\), got 'foo'"),
        ({"dropout": 1.0}, r"dropout must be a probability in \[0, 1\), got 1.0"),
        ({"num_heads": 0}, "num_heads must be a positive int, got 0"),
        ({"d_model": 10, "num_heads": 4}, "d_model=10 is not divisible by num_heads=4"),
        ({"num_layers": 0}, "num_layers must be a positive int"),
        ({"max_len": True}, "max_len must be a positive int, got True"),
        ({"pad": 11}, "pad=11 is not an id of a vocabulary"),
        ({"pad": 1.0}, "pad must be a token id"),
    ],
)
@pytest.mark.parametrize("config", [TransformerConfig, LanguageModelConfig])
def test_configs_reject_bad_fields(config, kwargs, message):
    with pytest.raises(ValueError, match=message):
        config(*((11, 11) if config is TransformerConfig else (11,)), **kwargs)


def test_configs_accept_d_ff_zero_only_for_language_models():
    model = tiny_lm(11, d_ff=0, num_layers=2)
    assert all(layer.feed_forward is None for layer in model.layers.layers)
    logits = model(PROMPT).logits
    assert logits.shape == (2, 3, 11) and torch.isfinite(logits).all()
    assert model.generate(PROMPT, 2).shape == (2, 5)
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match=r"d_ff must be an int >= 0, got"):
            LanguageModelConfig(11, d_ff=bad)
    with pytest.raises(ValueError, match="d_ff must be a positive int, got 0"):
        TransformerConfig(11, 11, d_ff=0)


def test_transformer_bad_input():
    model = small_transformer()
    with pytest.raises(ValueError, match=r"source holds ids in \[0, 11\] but the vocabulary has 11"):
        model(torch.tensor([[0, 11]]), TARGET[:1])
    with pytest.raises(ValueError, match=r"target holds ids in \[-1, 5\] but the vocabulary has 13"):
        model(SOURCE[:1], torch.tensor([[-1, 5]]))
    with pytest.raises(ValueError, match=r"source \(2, 6\) and target \(1, 5\) must have the same batch size"):
        model(SOURCE, TARGET[:1])
    with pytest.raises(ValueError, match=r"source must be a \(B, T\) int64 tensor with T >= 1, got torch.float32"):
        model(SOURCE.float(), TARGET)
    with pytest.raises(ValueError, match=r"source must be a \(B, T\) int64 tensor with T >= 1"):
        model(SOURCE[:, :0], TARGET)
    with pytest.raises(ValueError, match=r"target must be a \(B, T\) int64 tensor.*\(5,\)"):
        model(SOURCE[0:1], TARGET[0])
    with pytest.raises(ValueError, match=r"length T=17 but the positional table holds max_len=16"):
        model(torch.full((1, 17), 4), TARGET[:1])
    with pytest.raises(ValueError, match=r"length T=17 but the positional table holds max_len=16"):
        model(SOURCE[:1], torch.full((1, 17), 4))
    small_transformer("none")(torch.full((1, 40), 4), torch.full((1, 40), 4))  # no table, no limit


def test_language_model_bad_input():
    model = small_lm()
    with pytest.raises(ValueError, match=r"tokens holds ids in \[3, 11\] but the vocabulary has 11"):
        model(torch.tensor([[3, 11]]))
    with pytest.raises(ValueError, match=r"length T=17 but the positional table holds max_len=16"):
        model(torch.full((1, 17), 4))
    assert model.generate(torch.full((1, 10), 4), 7).shape == (1, 17)  # the last token is never read back
    with pytest.raises(
        ValueError, match=r"a prompt of length 10 and steps=8 need 17 positions but the model has max_len=16"
    ):
        model.generate(torch.full((1, 10), 4), 8)
    with pytest.raises(ValueError, match="steps must be a positive int, got 0"):
        model.generate(torch.full((1, 3), 4), 0)
    with pytest.raises(ValueError, match=r"prompt holds ids"):
        model.generate(torch.full((1, 3), 11), 2)
    with pytest.raises(ValueError, match=r"generate needs a causal model \(config.causal=True\)"):
        small_lm(causal=False).generate(torch.full((1, 3), 4), 2)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"bos": -1}, "bos must be a target token id below 13, got -1"),
        ({"bos": 13}, "bos must be a target token id below 13, got 13"),
        ({"bos": True}, "bos must be a target token id below 13, got True"),
        ({"eos": 13}, "eos must be a target token id below 13, got 13"),
        ({"eos": 2.0}, "eos must be a target token id below 13, got 2.0"),
        ({"max_len": 0}, "max_len must be a positive int, got 0"),
        ({"max_len": 17}, r"max_len=17 is longer than the model's positional table \(max_len=16\)"),
    ],
)
def test_greedy_decode_bad_arguments(kwargs, message):
    args = {"bos": 1, "eos": 2, **kwargs}
    with pytest.raises(ValueError, match=message):
        small_transformer().greedy_decode(SOURCE, **args)


# ---------------------------------------------------------------- padding does not change the answer


@pytest.mark.parametrize("positions", ["sinusoidal", "learned"])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("need_weights", [True, False])
def test_a_sentence_gets_the_same_logits_alone_and_in_a_padded_batch(positions, norm_first, need_weights):
    model = small_transformer(positions, norm_first, seed=1)
    sources = [[4, 5, 6, 7, 8, 9, 10], [3, 10, 4], [7], [5, 5, 6, 2]]
    targets = [[1, 12, 5, 6], [1, 8, 9, 10, 11, 3], [1], [1, 2, 3]]
    source = torch.tensor([s + [0] * (7 - len(s)) for s in sources])
    target = torch.tensor([t + [0] * (6 - len(t)) for t in targets])
    with torch.no_grad():
        batch = model(source, target, need_weights=need_weights).logits
        for i, (s, t) in enumerate(zip(sources, targets, strict=True)):
            alone = model(torch.tensor([s]), torch.tensor([t]), need_weights=need_weights).logits[0]
            close(batch[i, : len(t)], alone)


def test_a_prompt_gets_the_same_logits_alone_and_in_a_right_padded_batch():
    model = small_lm(seed=1)
    prompts = [[3, 4, 5, 6, 7], [8, 9], [10, 3, 3]]
    tokens = torch.tensor([p + [0] * (5 - len(p)) for p in prompts])
    with torch.no_grad():
        batch = model(tokens).logits
        for i, p in enumerate(prompts):
            close(batch[i, : len(p)], model(torch.tensor([p])).logits[0])


# ---------------------------------------------------------------- greedy decoding


def test_greedy_decode_equals_a_step_by_step_loop_and_pads_after_eos():
    model = small_transformer(seed=2)
    sources = [[4, 5, 6, 7, 8, 9], [3, 10, 4], [7, 9], [10, 9, 8, 7]]
    source = torch.tensor([s + [0] * (6 - len(s)) for s in sources])
    steps = 8
    with torch.no_grad():
        free = [_reference_greedy(model, torch.tensor([s]), 1, -1, steps) for s in sources]  # never stops
    # An eos that ends some sentences early and not others, so both the padding and the early stop show.
    stops = {}
    for eos in range(13):
        ends = [row.index(eos) + 1 if eos in row else steps for row in free]
        if min(ends) < steps and len(set(ends)) > 1:
            stops[eos] = ends
    assert stops, f"no usable eos in {free}"
    for eos, ends in stops.items():
        decoded = model.greedy_decode(source, bos=1, eos=eos, max_len=steps)
        assert decoded.dtype == torch.long and decoded.shape == (4, max(ends))
        for row, s, end, free_row in zip(decoded.tolist(), sources, ends, free, strict=True):
            with torch.no_grad():
                expected = _reference_greedy(model, torch.tensor([s]), 1, eos, steps)
            assert expected == free_row[:end]
            assert row == expected + [0] * (max(ends) - end)


def test_greedy_decode_stops_when_every_sentence_is_done():
    model = small_transformer(seed=3)
    with torch.no_grad():
        model.out.bias.fill_(-100.0)
        model.out.bias[5] = 100.0  # the model always says 5
    assert torch.equal(model.greedy_decode(SOURCE, bos=1, eos=5, max_len=10), torch.full((2, 1), 5))
    assert torch.equal(model.greedy_decode(SOURCE, bos=1, eos=2, max_len=4), torch.full((2, 4), 5))
    assert model.greedy_decode(SOURCE, bos=1, eos=2).shape == (2, 16)  # default: max_len of the model


@pytest.mark.parametrize("positions", ["sinusoidal", "none"])
def test_generate_equals_a_step_by_step_loop(positions):
    model = small_lm(positions, seed=4)
    prompt = torch.tensor([[3, 4, 5], [6, 6, 9]])
    generated = model.generate(prompt, 6)
    assert generated.shape == (2, 9) and torch.equal(generated[:, :3], prompt)
    expected = prompt
    with torch.no_grad():
        for _ in range(6):
            expected = torch.cat([expected, model(expected).logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    assert torch.equal(generated, expected)
    for b in range(2):  # and one prompt at a time
        assert torch.equal(model.generate(prompt[b : b + 1], 6)[0], expected[b])
