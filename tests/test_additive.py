"""Bahdanau and Luong attention against references, the encoder-decoder's masks, decoding and errors; and the
chapter's claim: a small trained translator with attention beats the fixed-vector bottleneck on long sentences."""

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

import attn
from attn.data import make_corpus
from attn.data.translation import encode_batch
from attn.seq2seq import (
    AdditiveAttention,
    BlurredAttention,
    DotAttention,
    GeneralAttention,
    Seq2Seq,
    Seq2SeqConfig,
    evaluate_translation,
    train_translator,
    translate,
)
from attn.training import seeded


def random_inputs(B=3, Tk=5, d=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    query, keys = torch.randn(B, d, generator=g), torch.randn(B, Tk, d, generator=g)
    mask = torch.rand(B, Tk, generator=g) > 0.3
    mask[:, 0] = True
    return query, keys, mask


def make(kind, d=6, d_attn=4, seed=0):
    with seeded(seed):
        return {"additive": AdditiveAttention, "dot": DotAttention, "general": GeneralAttention}[kind](d, d, d_attn)


def test_additive_attention_matches_the_equation_written_out():
    query, keys, mask = random_inputs()
    module = make("additive")
    context, weights = module(query, keys, mask)
    B, Tk, _ = keys.shape
    e = torch.empty(B, Tk)
    for b in range(B):
        for j in range(Tk):  # e_ij = v_aᵀ tanh(W_a s + U_a h_j)
            e[b, j] = module.v_a @ torch.tanh(module.W_a @ query[b] + module.U_a @ keys[b, j])
    alpha = torch.softmax(e.masked_fill(~mask, float("-inf")), dim=-1)
    assert torch.allclose(weights, alpha, atol=1e-6)
    assert torch.allclose(context, torch.einsum("bj,bjd->bd", alpha, keys), atol=1e-6)


@pytest.mark.parametrize("kind", ["additive", "dot", "general"])
def test_precomputed_keys_give_the_same_attention_and_additive_scores_agree(kind):
    query, keys, mask = random_inputs()
    module = make(kind)
    context, weights = module(query, keys, mask)
    context_p, weights_p = module(query, keys, mask, precomputed=module.precompute(keys))
    assert torch.equal(context_p, context) and torch.equal(weights_p, weights)
    if kind == "additive":  # the module's score on U_a h_j is attn.additive_scores
        e = attn.additive_scores(query[:, None], keys, module.W_a, module.U_a, module.v_a)  # (B, 1, Tk)
        assert torch.allclose(module.score(query[:, None], module.precompute(keys)), e, atol=1e-6)


@pytest.mark.parametrize("kind", ["dot", "general"])
def test_luong_attention_matches_torch_scaled_dot_product_attention(kind):
    query, keys, mask = random_inputs()
    module = make(kind)
    context, weights = module(query, keys, mask)
    scored_keys = keys if kind == "dot" else keys @ module.W_a.T  # sᵀ W_a h = s · (W_a h)
    reference = F.scaled_dot_product_attention(query[:, None], scored_keys, keys, attn_mask=mask[:, None], scale=1.0)
    assert torch.allclose(context, reference[:, 0], atol=1e-5)
    assert torch.allclose(weights.sum(-1), torch.ones(3))


@given(
    kind=st.sampled_from(["additive", "dot", "general"]),
    B=st.integers(1, 4),
    Tk=st.integers(1, 7),
    seed=st.integers(0, 10_000),
)
def test_weights_sum_to_one_masked_get_zero_and_keys_permute(kind, B, Tk, seed):
    query, keys, mask = random_inputs(B, Tk, seed=seed)
    module = make(kind, seed=seed)
    context, weights = module(query, keys, mask)
    assert torch.allclose(weights.sum(-1), torch.ones(B), atol=1e-6)
    assert (weights[~mask] == 0).all()
    perm = torch.randperm(Tk, generator=torch.Generator().manual_seed(seed))
    context_p, weights_p = module(query, keys[:, perm], mask[:, perm])
    assert torch.allclose(weights_p, weights[:, perm], atol=1e-6)
    assert torch.allclose(context_p, context, atol=1e-5)


def test_attention_rejects_bad_shapes():
    module = make("additive")
    query, keys, mask = random_inputs()
    with pytest.raises(ValueError, match=r"query \(B, d_q\) and keys \(B, Tk, d_k\) with the same B"):
        module(query[:2], keys)
    with pytest.raises(ValueError, match=r"mask must have shape \(B, Tk\) = \(3, 5\), got \(3, 4\)"):
        module(query, keys, mask[:, :4])
    with pytest.raises(ValueError, match="query has width 5, but the attention was built for d_query=6"):
        module(query[:, :5], keys)
    with pytest.raises(ValueError, match="keys has width 3, but the attention was built for d_key=6"):
        module(query, keys[..., :3])
    with pytest.raises(ValueError, match=r"keys has width 3, but the attention was built for d_key=6"):
        make("general")(query, keys[..., :3])
    with pytest.raises(
        ValueError, match=r"precomputed must be self.precompute\(keys\), shape \(B, Tk, ...\) = \(3, 5\)"
    ):
        module(query, keys, mask, precomputed=module.precompute(keys)[:, :4])
    with pytest.raises(ValueError, match="dot attention needs d_query == d_key, got d_query=4 and d_key=6"):
        DotAttention(4, 6)


@pytest.fixture(scope="module")
def corpus():
    return make_corpus(500, 50, seed=3)


def model_for(corpus, attention="additive", seed=0):
    config = Seq2SeqConfig(len(corpus.source_vocab), len(corpus.target_vocab), 8, 16, 8, attention)
    with seeded(seed):
        return Seq2Seq(config).eval()


@pytest.mark.parametrize("attention", ["additive", "dot", "general"])
def test_padded_source_positions_get_exactly_zero_weight(corpus, attention):
    pairs = sorted(corpus.test[:8], key=lambda p: len(p.source))
    batch = encode_batch(pairs, corpus.source_vocab, corpus.target_vocab)
    out = model_for(corpus, attention)(batch.source, batch.source_lengths, batch.target_in)
    B, T = batch.target_in.shape
    assert out.logits.shape == (B, T, len(corpus.target_vocab))
    assert out.alignments.shape == (B, T, batch.source.shape[1])
    assert torch.allclose(out.alignments.sum(-1), torch.ones(B, T), atol=1e-6)
    for b, n in enumerate(batch.source_lengths.tolist()):
        assert (out.alignments[b, :, n:] == 0).all()
    assert batch.source_lengths.unique().numel() > 1  # the batch really was padded


def test_a_sentence_reads_the_same_alone_and_in_a_padded_batch(corpus):
    model = model_for(corpus)
    pairs = sorted(corpus.test[:6], key=lambda p: len(p.source))
    batch = encode_batch(pairs, corpus.source_vocab, corpus.target_vocab)
    together = model(batch.source, batch.source_lengths, batch.target_in)
    alone = encode_batch(pairs[:1], corpus.source_vocab, corpus.target_vocab)
    single = model(alone.source, alone.source_lengths, alone.target_in)
    T, S = alone.target_in.shape[1], alone.source.shape[1]
    assert torch.allclose(together.logits[0, :T], single.logits[0], atol=1e-5)
    assert torch.allclose(together.alignments[0, :T, :S], single.alignments[0], atol=1e-6)


def test_the_decoder_calls_a_module_of_your_own_with_state_annotations_and_mask(corpus):
    model = model_for(corpus)
    batch = encode_batch(corpus.test[:6], corpus.source_vocab, corpus.target_vocab)
    expected = model(batch.source, batch.source_lengths, batch.target_in)
    trained = model.attention

    class Wrapper(nn.Module):  # as in chapter 2's Exercise 4: forward(state, annotations, mask), nothing else
        def forward(self, query, keys, mask):
            return trained(query, keys, mask)

    model.attention = Wrapper()
    got = model(batch.source, batch.source_lengths, batch.target_in)
    assert torch.equal(got.logits, expected.logits) and torch.equal(got.alignments, expected.alignments)
    model.attention = trained  # a forward hook on the attention sees the arguments (state, annotations, mask)
    seen = []
    handle = trained.register_forward_hook(lambda module, args, output: seen.append(len(args)))
    model(batch.source, batch.source_lengths, batch.target_in)
    handle.remove()
    assert seen and set(seen) == {3}


def test_the_baseline_has_no_alignments(corpus):
    batch = encode_batch(corpus.test[:4], corpus.source_vocab, corpus.target_vocab)
    model = model_for(corpus, "none")
    assert model(batch.source, batch.source_lengths, batch.target_in).alignments is None
    decoded = model.greedy_decode(batch.source, batch.source_lengths, 1, 2, max_len=5)
    assert decoded.alignments is None and decoded.tokens.shape[0] == 4


def test_greedy_decode_stops_at_eos_and_blanks_what_follows(corpus):
    batch = encode_batch(corpus.test[:6], corpus.source_vocab, corpus.target_vocab)
    model = model_for(corpus)
    eos = corpus.target_vocab.eos
    with torch.no_grad():
        model.output.bias[eos] = 0.3  # with this seed, rows finish at different steps and some never do
    decoded = model.greedy_decode(batch.source, batch.source_lengths, corpus.target_vocab.bos, eos, max_len=12)
    B, T = decoded.tokens.shape
    lengths = decoded.lengths.tolist()
    assert T == 12 and len(set(lengths)) > 2 and 12 in lengths and min(lengths) + 1 < T  # the cases to check
    assert decoded.alignments.shape == (B, T, batch.source.shape[1])
    for b in range(B):
        n = int(decoded.lengths[b])
        row = decoded.tokens[b].tolist()
        assert eos not in row[:n]
        if n < T:
            assert row[n] == eos and all(t == 0 for t in row[n + 1 :])
            assert (decoded.alignments[b, n + 1 :] == 0).all()
        assert torch.allclose(decoded.alignments[b, : n + 1].sum(-1), torch.ones(min(n + 1, T)), atol=1e-6)


def test_greedy_decode_rejects_bad_arguments(corpus):
    batch = encode_batch(corpus.test[:2], corpus.source_vocab, corpus.target_vocab)
    model, V = model_for(corpus), len(corpus.target_vocab)
    with pytest.raises(ValueError, match="max_len must be a positive int, got 0"):
        model.greedy_decode(batch.source, batch.source_lengths, 1, 2, max_len=0)
    with pytest.raises(ValueError, match=rf"bos must be a token id in \[0, {V}\) \(the target vocabulary\), got 999"):
        model.greedy_decode(batch.source, batch.source_lengths, 999, 2)
    with pytest.raises(ValueError, match="eos must be a token id"):
        model.greedy_decode(batch.source, batch.source_lengths, 1, -1)


def test_seq2seq_rejects_bad_configuration_and_input(corpus):
    with pytest.raises(ValueError, match="attention must be one of"):
        Seq2Seq(Seq2SeqConfig(10, 10, attention="cosine"))
    with pytest.raises(ValueError, match="d_hidden must be even"):
        Seq2Seq(Seq2SeqConfig(10, 10, d_hidden=15))
    model = model_for(corpus)
    source, lengths = torch.tensor([[4, 5, 2]]), torch.tensor([3])
    with pytest.raises(ValueError, match="source must be a"):
        model.encode(source.float(), lengths)
    with pytest.raises(ValueError, match=r"source_lengths must have shape \(B,\) = \(1,\), got \(2,\)"):
        model.encode(source, torch.tensor([3, 3]))
    with pytest.raises(ValueError, match=r"source ids must be in \[0, "):
        model.encode(torch.tensor([[4, 999]]), torch.tensor([2]))
    with pytest.raises(ValueError, match=r"source_lengths must be in \[1, 3\], got \[4\]"):
        model.encode(source, torch.tensor([4]))
    with pytest.raises(ValueError, match=r"target_in must be a \(B, T\) tensor of token ids with B=1"):
        model(source, lengths, torch.tensor([[1, 4], [1, 5]]))
    with pytest.raises(ValueError, match=r"target_in ids must be in \[0, "):
        model(source, lengths, torch.tensor([[1, 9999]]))


def test_translate_reads_unknown_words_as_unk_and_explains_bad_input(corpus):
    model = model_for(corpus)
    args = (corpus.source_vocab, corpus.target_vocab)
    result = translate(model, "The zebra sees the cat!", *args)
    assert result.source == ["the", "zebra", "sees", "the", "cat"]
    assert result.unknown == ["zebra"]
    assert len(result.target) == 40 and not result.finished  # this untrained model never says <eos>: cut off
    assert result.alignment.shape == (40, len(result.source) + 1) and len(result.row_labels()) == 40
    assert torch.allclose(result.alignment.sum(-1), torch.ones(40), atol=1e-6)
    with torch.no_grad():
        model.output.bias[corpus.target_vocab.eos] = 2.0  # now it ends the sentence at once
    ended = translate(model, "the dog sees the cat", *args)
    assert ended.finished and ended.target == [] and ended.row_labels() == ["<eos>"]
    assert ended.alignment.shape == (1, 6)
    with pytest.raises(ValueError, match="the sentence is empty"):
        translate(model, "  ?! ", *args)
    with pytest.raises(ValueError, match="the sentence has 21 words; this model reads at most 20"):
        translate(model, "the dog " * 10 + "sees", *args)
    with pytest.raises(ValueError, match="sentence must be a string"):
        translate(model, None, *args)


def test_blurred_attention_blends_the_weights_with_uniform_over_allowed_positions():
    query, keys, mask = random_inputs()
    trained = make("additive")
    context, weights = trained(query, keys, mask)
    same_context, same_weights = BlurredAttention(trained, 0.0)(query, keys, mask)
    assert torch.equal(same_weights, weights) and torch.equal(same_context, context)  # mix = 0: the attention itself
    uniform = mask.float() / mask.sum(-1, keepdim=True)
    flat_context, flat_weights = BlurredAttention(trained, 1.0)(query, keys, mask)
    torch.testing.assert_close(flat_weights, uniform)
    torch.testing.assert_close(flat_context, (uniform[:, :, None] * keys).sum(1))  # the plain average of the keys
    half_context, half_weights = BlurredAttention(trained, 0.25)(query, keys, mask)
    torch.testing.assert_close(half_weights, 0.75 * weights + 0.25 * uniform)
    torch.testing.assert_close(half_context, torch.einsum("bk,bkd->bd", half_weights, keys))
    assert bool((half_weights[~mask] == 0).all()), "padding keeps weight 0"
    torch.testing.assert_close(half_weights.sum(-1), torch.ones(len(keys)))


@pytest.mark.parametrize("mix", [-0.1, 1.5, True, "0.5", None])
def test_blurred_attention_rejects_a_mix_outside_0_1(mix):
    with pytest.raises(ValueError, match="mix must be a number in"):
        BlurredAttention(make("additive"), mix)


def test_a_small_trained_translator_beats_the_no_attention_baseline_on_long_sentences():
    corpus = make_corpus(5000, 300, seed=0)
    long = [p for p in corpus.test if len(p.source) >= 10]
    scores = {}
    for attention in ("additive", "none"):
        model, history = train_translator(corpus, attention, 200, seed=0, progress=False,
                                          every=200, watch=corpus.test[:2], valid=long[:50])  # fmt: skip
        scores[attention] = evaluate_translation(model, long, corpus)
    assert len(long) > 50
    assert scores["additive"].exact_match >= 0.8, scores["additive"].exact_match
    assert scores["additive"].exact_match > scores["none"].exact_match + 0.3
    assert scores["additive"].alignment_mass > 0.4 and scores["none"].alignment_mass is None
    assert history.checkpoints[-1]["step"] == 200 and "alignments" not in history.checkpoints[-1]
