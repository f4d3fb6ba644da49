"""attn computes on the device of its inputs: no tensor it makes inside stays on the CPU when the inputs are elsewhere.

The trap: each case runs on CPU inputs (and a model built outside the trap) inside :func:`default_device_trap`, which
works as ``with torch.device("meta")`` does but only for attn's own code: a tensor that attn makes with a factory
call (``torch.zeros``, ``arange``, ``rand``, ...) that does not take its device from the inputs lands on the meta
device, and the first operation that mixes it with a CPU tensor raises, exactly as a CPU-only tensor mixed with CUDA
inputs raises on a GPU (and an index on another device is allowed on both). So the trap finds on the CPU what a GPU
would; a case that passes must give bit for bit what the plain CPU run gives. torch's own Python code is left alone:
older releases (2.6's Adam, say) make such tensors themselves, and they are torch's to get right.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.overrides import TorchFunctionMode
from torch.utils._device import _device_constructors

import attn
from attn.analysis import (
    ablate_heads,
    adversarial_attention,
    attention_distance,
    attention_entropy,
    attention_x_gradient,
    deletion_area,
    deletion_curve,
    gradient_x_input,
    induction_targets,
    map_order,
    mass_on,
    occlusion,
    permuted_attention,
    previous_token_targets,
    random_map,
    score_map,
)
from attn.blocks.attention import MultiHeadAttention
from attn.blocks.layers import DecoderLayer, EncoderLayer, LayerNorm
from attn.blocks.positions import LearnedPositions, RotaryMultiHeadAttention, SinusoidalPositions, rotary_positions
from attn.data.babi import BabiTensors
from attn.data.scenes import make_scenes
from attn.data.translation import Batch, encode_batch, make_corpus
from attn.data.vocab import Vocab
from attn.functional import attend, scaled_dot_product_attention
from attn.masks import causal_mask, padding_mask
from attn.memn2n import MemN2N, MemN2NConfig
from attn.memn2n.explain import answer_distribution, answer_probability, supporting_mask
from attn.memn2n.model import time_index
from attn.memory.model import DNC, NTM, DNCConfig, NTMConfig
from attn.pretrained import Bert, BertConfig, mean_pool
from attn.scale.linear import causal_linear_attention, delta_rule_attention, recurrent_linear_attention
from attn.scale.tiled import tiled_attention
from attn.seq2seq import Seq2Seq, Seq2SeqConfig
from attn.seq2seq.explain import aligned_words, word_attention, word_probability
from attn.seq2seq.translate import translate as translate_seq2seq
from attn.training import fit
from attn.transformer.measures import fill_in
from attn.transformer.mixers import MixerTagger
from attn.transformer.model import LanguageModel, LanguageModelConfig, Transformer, TransformerConfig
from attn.transformer.pretraining import language_model_batch
from attn.transformer.train import tagging_accuracy, token_losses, train_language_model, train_tagger
from attn.transformer.translate import beam_search, sample_sentences
from attn.transformer.translate import translate as translate_transformer
from attn.vision import ViT, ViTConfig
from attn.vision import explain as vision_explain
from attn.vision.glimpse import glimpse, glimpse_boxes
from attn.vision.measures import multiply_adds, values_read
from attn.vision.model import PooledNet, RAMConfig, RecurrentAttention, SoftAttentionNet, SpatialConfig
from attn.vision.patches import patchify
from attn.vision.ram import ram_loss
from attn.vision.rollout import attention_rollout, class_token_map

DEVICES = (
    ["cpu"] + (["cuda"] if torch.cuda.is_available() else []) + (["mps"] if torch.backends.mps.is_available() else [])
)

Case = Callable[[], tuple[Callable[..., object], tuple]]  # builds (fn, args): the result is fn(*args)


# ---------------------------------------------------------------- moving, flattening and comparing results


def _to(obj: object, device: str) -> object:
    """``obj`` with every tensor and module in it on ``device`` (generators, vocabularies, numbers stay as they are)."""
    if isinstance(obj, torch.Tensor | nn.Module):
        return obj.to(device)
    if isinstance(obj, tuple | list):
        return type(obj)(_to(x, device) for x in obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.replace(obj, **{f.name: _to(getattr(obj, f.name), device) for f in dataclasses.fields(obj)})
    return obj


def _leaves(obj: object) -> list[object]:
    """The tensors, numbers and strings in a result (tuples, lists, dicts and dataclasses opened)."""
    if isinstance(obj, tuple | list):
        return [leaf for x in obj for leaf in _leaves(x)]
    if isinstance(obj, dict):
        return [leaf for key in sorted(obj) for leaf in [key, *_leaves(obj[key])]]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _leaves([getattr(obj, f.name) for f in dataclasses.fields(obj)])
    return [obj]


def _grads(loss: torch.Tensor, *things: nn.Module | torch.Tensor) -> tuple[torch.Tensor | None, ...]:
    """d loss / d (every parameter of the modules and every tensor given)."""
    wrt = [p for t in things for p in (t.parameters() if isinstance(t, nn.Module) else [t])]
    return torch.autograd.grad(loss, wrt, allow_unused=True)


def _params(model: nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in model.parameters()]


# ---------------------------------------------------------------- small inputs

B, T, D, H = 3, 5, 8, 2


def _x(*shape: int, grad: bool = False) -> torch.Tensor:
    return torch.randn(*shape).requires_grad_(grad)


def _mask() -> torch.Tensor:
    """``(B, 1, T, T)``: causal and padded, with a row of length 0 (its queries have nothing to attend to)."""
    return causal_mask(T) & padding_mask(torch.tensor([T, 3, 0]), T)[:, None, None, :]


def _babi(V: int = 12, M: int = 6, J: int = 4) -> BabiTensors:
    """Stories of 6, 3 and 1 sentences (padded with 0), queries, answers and supporting slots."""
    g = torch.Generator().manual_seed(0)
    lengths = torch.tensor([M, 3, 1])
    story = torch.randint(1, V, (B, M, J), generator=g) * padding_mask(lengths, M)[..., None]
    story[:, :, -1] = 0  # the last word slot is padding
    query = torch.randint(1, V, (B, J), generator=g)
    supporting = torch.tensor([[0, 4], [2, -1], [0, -1]])
    return BabiTensors(story, query, torch.randint(1, V, (B,), generator=g), lengths, supporting)


def _memn2n(**kw: object) -> MemN2N:
    return MemN2N(MemN2NConfig(**({"vocab_size": 12, "d": 8, "hops": 2, "memory_size": 6} | kw))).eval()


def _translation() -> Batch:
    source = torch.tensor([[3, 4, 5, 6, 2], [7, 8, 2, 0, 0], [9, 2, 0, 0, 0]])
    target_out = torch.tensor([[3, 4, 5, 2], [6, 7, 2, 0], [8, 2, 0, 0]])
    target_in = torch.tensor([[1, 3, 4, 5], [1, 6, 7, 0], [1, 8, 0, 0]])
    return Batch(source, torch.tensor([5, 3, 2]), target_in, target_out)


def _seq2seq(attention: str = "additive", source: int = 10, target: int = 9) -> Seq2Seq:
    return Seq2Seq(Seq2SeqConfig(source, target, d_embed=4, d_hidden=8, d_attn=4, attention=attention)).eval()


WORDS = ["the", "dog", "cat", "sees", "runs"]
VOCAB = Vocab(WORDS)  # 4 special tokens + 5 words
MASK = len(VOCAB) - 1  # "sees" stands in for <mask>


def _transformer() -> Transformer:
    config = TransformerConfig(len(VOCAB), len(VOCAB), d_model=D, num_heads=H, num_layers=2, d_ff=16, max_len=16)
    return Transformer(dataclasses.replace(config, dropout=0.0)).eval()


def _lm(**kw: object) -> LanguageModel:
    config = {"d_model": D, "num_heads": H, "num_layers": 2, "d_ff": 16, "dropout": 0.0, "max_len": 12} | kw
    return LanguageModel(LanguageModelConfig(len(VOCAB), **config)).eval()


def _sentences() -> torch.Tensor:
    """Four sentences ``<bos> words <eos>`` padded with 0: ``(4, 7)``."""
    return torch.tensor([[1, 4, 5, 6, 7, 2, 0], [1, 8, 4, 2, 0, 0, 0], [1, 5, 5, 6, 4, 7, 2], [1, 6, 2, 0, 0, 0, 0]])


def _scenes():
    return make_scenes(2, seed=3)


def _vit(stem: str = "patch") -> ViT:
    return ViT(ViTConfig(d_model=16, num_heads=2, d_ff=32, num_layers=2, stem=stem, positions=stem == "patch")).eval()


def _ram(**kw: object) -> RecurrentAttention:
    return RecurrentAttention(RAMConfig(**({"hidden": 16, "d_attention": 8, "glimpses": 2} | kw)))


# ---------------------------------------------------------------- the cases: (fn, args), built outside the trap


def case_sdpa_masked() -> tuple:
    def run(q, k, v, mask):
        out, weights = scaled_dot_product_attention(q, k, v, mask)
        return out, weights, _grads((out**2).sum(), q, k, v)

    return run, (_x(B, H, T, D, grad=True), _x(B, H, T, D, grad=True), _x(B, H, T, D, grad=True), _mask())


def case_attend_masked() -> tuple:
    def run(scores, value, mask):
        out, weights = attend(scores, value, mask)
        return out, weights, _grads((out**2).sum(), scores, value)

    return run, (_x(B, T, T, grad=True), _x(B, T, D, grad=True), _mask()[:, 0])


def case_multi_head_attention() -> tuple:
    def run(mha, grouped, x, wide, mask, key_mask):
        out, weights = mha(x, x, x, mask, key_mask=key_mask)
        fused, _ = mha(x, x, x, mask, need_weights=False)
        shared, shared_weights = grouped(wide, wide, wide, mask)
        cached, _, past = grouped.extend(wide[:, :3], None, causal_mask(T, device=x.device)[:3, :3])
        more, _, _ = grouped.extend(wide[:, 3:], past, causal_mask(T, device=x.device)[3:])
        loss = (out**2).sum() + fused.sum() + shared.sum() + cached.sum() + more.sum()
        return out, weights, fused, shared, shared_weights, cached, more, _grads(loss, mha, grouped, x, wide)

    mha, grouped = MultiHeadAttention(D, H), MultiHeadAttention(2 * D, 4, num_kv_heads=2)
    key_mask = padding_mask(torch.tensor([T, 4, 2]), T)
    return run, (mha, grouped, _x(B, T, D, grad=True), _x(B, T, 2 * D, grad=True), causal_mask(T), key_mask)


def case_encoder_decoder_layers() -> tuple:
    def run(encoder, decoder, x, memory, mask, source_mask):
        h, self_weights = encoder(x, mask)
        y, masked, cross = decoder(x, memory, mask, source_mask)
        return h, self_weights, y, masked, cross, _grads(h.sum() + (y**2).sum(), encoder, decoder, x, memory)

    encoder = EncoderLayer(D, H, 16, dropout=0.0)
    decoder = DecoderLayer(D, H, 16, dropout=0.0, norm_first=True)
    source_mask = padding_mask(torch.tensor([T, 2, 1]), T)[:, None, None, :]
    return run, (encoder, decoder, _x(B, T, D, grad=True), _x(B, T, D, grad=True), _mask(), source_mask)


def case_positions_and_layer_norm() -> tuple:
    def run(sinusoidal, learned, norm, x):
        a, b, c = sinusoidal(x, start=2), learned(x, start=1), norm(x)
        return a, b, c, _grads(a.sum() + b.sum() + (c**2).sum(), learned, norm, x)

    return run, (SinusoidalPositions(D, 16), LearnedPositions(D, 16), LayerNorm(D), _x(B, T, D, grad=True))


def case_rotary_positions() -> tuple:
    def run(rotary, x):
        turned = rotary_positions(x, start=3)
        out, weights = rotary(x, x, x, causal_mask(T, device=x.device))
        cached, _, past = rotary.extend(x[:, :2], None, causal_mask(2, device=x.device))
        more, _, _ = rotary.extend(x[:, 2:], past, causal_mask(T, device=x.device)[2:])
        loss = (turned**2).sum() + (out**2).sum() + cached.sum() + more.sum()
        return turned, out, weights, cached, more, _grads(loss, rotary, x)

    return run, (RotaryMultiHeadAttention(D, H, num_kv_heads=1), _x(B, T, D, grad=True))


def case_seq2seq_forward_and_decode() -> tuple:
    def run(additive, dot, batch):
        out = additive(batch.source, batch.source_lengths, batch.target_in)
        decoded = [m.greedy_decode(batch.source, batch.source_lengths, 1, 2, 6) for m in (additive, dot)]
        return out, decoded, _grads(out.logits.logsumexp(-1).sum(), additive)

    return run, (_seq2seq(), _seq2seq("dot"), _translation())


def case_seq2seq_translate() -> tuple:
    def run(model):
        return translate_seq2seq(model, "The dog sees the zebra", VOCAB, VOCAB, 5)

    return run, (_seq2seq(source=len(VOCAB), target=len(VOCAB)),)


def case_seq2seq_explain() -> tuple:
    def run(model, batch, step, scale, pairs, corpus_batch):
        p = word_probability(model, batch, step, scale)
        steps, q = word_attention(model, batch, step)
        aligned = aligned_words(pairs, corpus_batch, seed=0)
        valid = batch.source != 0
        grad = gradient_x_input(lambda s: word_probability(model, batch, step, s), valid)
        return p, steps, q, aligned, grad

    corpus = make_corpus(n_train=8, n_test=1, seed=0)
    pairs = corpus.train[:3]
    corpus_batch = encode_batch(pairs, corpus.source_vocab, corpus.target_vocab)
    scale = torch.rand(B, 5)
    return run, (_seq2seq(), _translation(), torch.tensor([2, 0, 1]), scale, pairs, corpus_batch)


def case_memn2n_training_with_time_noise() -> tuple:
    def run(model, empty, data, generator):
        time = time_index(data.lengths, data.story.shape[1], noise=0.5, generator=generator)
        out = model(data.story, data.query, data.lengths, time=time)
        loss = nn.functional.cross_entropy(out.logits, data.answer)
        padded = empty(data.story, data.query, data.lengths, linear=True)
        return time, out, padded, _grads(loss + padded.logits.logsumexp(-1).sum(), model, empty)

    empty = _memn2n(attend_empty=True, encoding="bow", temporal=False)
    return run, (_memn2n().train(), empty, _babi(), torch.Generator().manual_seed(5))


def case_memn2n_explain() -> tuple:
    def run(model, data, scale):
        p = answer_probability(model, data, scale)
        hops = model(data.story, data.query, data.lengths).hop_attention
        q = answer_distribution(model, data, hops, hops[:, -1])
        return p, q, supporting_mask(data)

    return run, (_memn2n(), _babi(), torch.rand(B, 6))


def case_ntm_and_dnc() -> tuple:
    def run(ntm, dnc, x):
        a = ntm(x)
        b = dnc(x, need_memory=True)
        return a, b, _grads(a.logits.sum() + (b.logits**2).sum(), ntm, dnc, x)

    ntm = NTM(NTMConfig(9, 8, hidden=16, memory_rows=12, memory_width=6))
    dnc = DNC(DNCConfig(9, 8, hidden=16, memory_rows=6, memory_width=5, read_heads=2))
    return run, (ntm, dnc, _x(2, 4, 9, grad=True))


def case_transformer_forward_and_decode() -> tuple:
    def run(model, source, target):
        out = model(source, target)
        greedy = model.greedy_decode(source, VOCAB.bos, VOCAB.eos, 6)
        searched = [
            beam_search(model, source, VOCAB.bos, VOCAB.eos, beam, 6, alpha) for beam, alpha in ((3, 0.6), (1, 0))
        ]
        return out, greedy, searched, _grads(out.logits.logsumexp(-1).sum(), model)

    source = torch.tensor([[4, 5, 6, 2], [7, 2, 0, 0], [8, 6, 2, 0]])
    target = torch.tensor([[1, 4, 5], [1, 8, 0], [1, 6, 7]])
    return run, (_transformer(), source, target)


def case_transformer_translate() -> tuple:
    def run(model):
        return [translate_transformer(model, "the dog sees zebras", VOCAB, VOCAB, 4, beam) for beam in (1, 3)]

    return run, (_transformer(),)


def case_language_model() -> tuple:
    def run(model, grouped, tokens, generator):
        out = model(tokens)
        windowed = grouped(tokens)
        torch.manual_seed(7)
        drawn = [model.generate(tokens[:, :2], 4, 1.0, generator, cache=cache) for cache in (False, True)]
        unseeded = grouped.generate(tokens[:, :2], 3, 0.5)
        greedy = model.generate(tokens[:, :2], 3, cache=True)
        return out, windowed, drawn, unseeded, greedy, _grads(out.logits.logsumexp(-1).sum(), model)

    grouped = _lm(num_heads=4, num_kv_heads=2, window=3, positions="learned")
    return run, (_lm(), grouped, _sentences(), torch.Generator().manual_seed(1))


def case_sample_sentences() -> tuple:
    def run(model):
        return [sample_sentences(model, VOCAB, 3, 1.0, seed=2, max_words=5, cache=cache) for cache in (False, True)]

    return run, (_lm(),)


def case_pretraining_objectives() -> tuple:
    def run(causal, bidirectional, tokens, generator):
        batches = [language_model_batch(tokens, "one", generator=generator)]
        batches.append(language_model_batch(tokens, "masked", MASK, len(VOCAB), generator))
        losses = token_losses(causal, tokens)
        guesses = [fill_in(causal, tokens), fill_in(bidirectional, tokens, mask=MASK)]
        return batches, losses, guesses

    bidirectional = _lm(causal=False)
    return run, (_lm(), bidirectional, _sentences(), torch.Generator().manual_seed(3))


def case_train_language_model() -> tuple:
    def run(model, tokens):
        _, history = train_language_model(model, tokens, "masked", 2, mask=MASK, batch_size=3, every=1, valid=tokens)
        return history.loss, [c["masked_loss"] for c in history.checkpoints], _params(model)

    return run, (_lm(causal=False), _sentences())


def case_mixers_and_tagging() -> tuple:
    def run(taggers, inputs, labels):
        outs = [tagger(inputs) for tagger in taggers]
        _, history = train_tagger(taggers[0], inputs, labels, 2, batch_size=3, every=1, valid=(inputs, labels))
        accuracy = tagging_accuracy(taggers[2], inputs, labels)
        return outs, history.loss, history.checkpoints[-1]["accuracy"], accuracy, _params(taggers[0])

    taggers = [MixerTagger(kind, len(VOCAB), 3, 8, d_model=8, d_ff=16) for kind in ("attention", "linear", "conv")]
    inputs = _sentences()
    return run, (taggers, inputs, (inputs % 3).masked_fill(inputs == 0, -100))


def case_fit() -> tuple:
    def run(model, x, y):
        history = fit(model, lambda m, step: nn.functional.mse_loss(m(x), y), 2, warmup=2, progress=False)
        return history.loss, _params(model)

    model = nn.Sequential(LayerNorm(D), nn.Linear(D, 2))
    return run, (model, _x(B, D), _x(B, 2))


def _vit_run(model, scenes):
    out, p = vision_explain.answer_output(model, scenes)
    relevance = attention_x_gradient(out.attention, p)
    grid = model.grid
    valid = torch.ones(len(scenes), grid**2, dtype=torch.bool, device=scenes.images.device)
    grad = gradient_x_input(lambda s: vision_explain.answer_probability(model, scenes, s), valid)
    rollout = attention_rollout(out.attention)
    return out, p, relevance, grad, rollout, class_token_map(rollout, grid), _grads(p.sum(), model)


def case_vit_patch_stem() -> tuple:
    return _vit_run, (_vit("patch"), _scenes())


def case_vit_conv_stem() -> tuple:
    return _vit_run, (_vit("conv"), _scenes())


def case_spatial_attention() -> tuple:
    def run(soft, pooled, scenes):
        a, b = soft(scenes.images, scenes.question), pooled(scenes.images, scenes.question)
        return a, b, _grads(a.logits.sum() + b.logits.sum(), soft, pooled)

    config = SpatialConfig(d_model=8, d_attention=8)
    return run, (SoftAttentionNet(config), PooledNet(config), _scenes())


def case_recurrent_attention() -> tuple:
    def run(model, blind, scenes):
        torch.manual_seed(11)
        sampled = model(scenes.images, scenes.question)  # training: the places are sampled
        loss = ram_loss(sampled, scenes.answer)
        chosen = blind.eval()(scenes.images, scenes.question)
        locations = sampled.locations[:, 0]
        seen = glimpse(scenes.images, locations, 4, 2), glimpse_boxes(locations[0], 24, 4, 2)
        return sampled, chosen, seen, patchify(scenes.images, 6), _grads(loss, model)

    return run, (_ram().train(), _ram(context=False), _scenes())


def case_vision_cost() -> tuple:
    def run(ram, soft, scenes):
        read = [values_read(m, scenes.images, scenes.question) for m in (ram, soft)]
        return read, multiply_adds(soft, scenes.images, scenes.question)

    return run, (_ram(context=False), SoftAttentionNet(SpatialConfig(d_model=8, d_attention=8)), _scenes())


def case_bert() -> tuple:
    def run(model, tokens):
        out = model(tokens)
        pooled = mean_pool(out.hidden, tokens)
        return out, pooled, _grads(pooled.sum(), model)

    config = BertConfig(vocab_size=50, d_model=8, num_heads=2, num_layers=1, d_ff=16, max_len=16)
    return run, (Bert(config).eval(), torch.tensor([[2, 17, 33, 3, 0, 0], [2, 5, 6, 7, 8, 3]]))


def case_tiled_attention() -> tuple:
    def run(q, k, v, mask):
        out, state = tiled_attention(q, k, v, mask, block_q=2, block_k=3)
        plain, _ = tiled_attention(q, k, v, block_q=4, block_k=2, scale=0.3)
        return out, state, plain, _grads((out**2).sum() + plain.sum(), q, k, v)

    mask = causal_mask(T) & padding_mask(torch.tensor([T, 3, 2]), T)[:, None, None, :]
    return run, (_x(B, H, T, D, grad=True), _x(B, H, T, D, grad=True), _x(B, H, T, D, grad=True), mask)


def case_linear_attention() -> tuple:
    def run(q, k, v, beta):
        causal, _ = causal_linear_attention(q, k, v)
        first, state = recurrent_linear_attention(q[..., :2, :], k[..., :2, :], v[..., :2, :])
        rest, _ = recurrent_linear_attention(q[..., 2:, :], k[..., 2:, :], v[..., 2:, :], state)
        plain, _ = recurrent_linear_attention(q, k, v, feature_map=None)
        delta, fast = delta_rule_attention(q, k, v, beta)
        once, _ = delta_rule_attention(q, k, v, 0.5, feature_map=None)
        loss = causal.sum() + rest.sum() + plain.sum() + (delta**2).sum() + once.sum()
        return causal, first, rest, plain, delta, fast, once, _grads(loss, q, k, v, beta)

    beta = torch.rand(B, T).requires_grad_(True)
    return run, (_x(B, T, 4, grad=True), _x(B, T, 4, grad=True), _x(B, T, 3, grad=True), beta)


def case_attributions() -> tuple:
    def run(model, data, truth, generator):
        valid = padding_mask(data.lengths, data.story.shape[1])
        answer = lambda scale: answer_probability(model, data, scale)  # noqa: E731
        maps = [occlusion(answer, valid), gradient_x_input(answer, valid), random_map(valid, generator)]
        order = map_order(maps[0], valid)
        curve = deletion_curve(answer, order, valid)
        return maps, order, curve, deletion_area(curve, valid), score_map(answer, maps[1], truth, valid)

    data = _babi()
    truth = torch.tensor([[True, False, False, False, True, False], [False, False, True, False, False, False]] * 2)[:B]
    return run, (_memn2n(), data, truth, torch.Generator().manual_seed(4))


def case_counterfactual_attention() -> tuple:
    def run(model, data, generator):
        valid = padding_mask(data.lengths, data.story.shape[1])
        hops = model(data.story, data.query, data.lengths).hop_attention.detach()  # (B, K, M)
        readout = lambda a: answer_distribution(model, data, hops, a)  # noqa: E731
        permuted = permuted_attention(readout, hops[:, -1], valid, 3, generator)
        return permuted, adversarial_attention(readout, hops[:, -1], valid, steps=4)

    return run, (_memn2n(), _babi(), torch.Generator().manual_seed(6))


def case_head_summaries() -> tuple:
    def run(model, tokens, periods):
        weights = model(tokens).attention
        queries = tokens != 0
        T = tokens.shape[1]
        with ablate_heads([layer.self_attention for layer in model.layers.layers], [(0, 1)]):
            ablated = model(tokens).logits
        targets = [previous_token_targets(T, device=tokens.device), induction_targets(periods, T)[:, None]]
        summaries = [
            (attention_entropy(w, queries), attention_distance(w), mass_on(w, targets[0], queries)) for w in weights
        ]
        return ablated, summaries, targets, mass_on(weights[-1], targets[1][:, 0])

    return run, (_lm(), _sentences(), torch.tensor([2, 3, 1, 4]))


CASES: dict[str, Case] = {
    name.removeprefix("case_"): value for name, value in globals().items() if name.startswith("case_")
}


def _run_plain(case: Case) -> object:
    fn, args = case()
    return fn(*args)


# ---------------------------------------------------------------- the tests


ATTN = str(Path(attn.__file__).parent)


class default_device_trap(TorchFunctionMode):  # noqa: N801 (used as a context manager, like torch.device)
    """Inside the block, a factory call made by code under ``roots`` (attn's package) without a ``device`` makes its
    tensor on the meta device (``torch.device("meta")``'s rule, for that code only)."""

    def __init__(self, roots: tuple[str, ...] = (ATTN,)):
        super().__init__()
        self.roots = roots

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in _device_constructors() and kwargs.get("device") is None and self._called_from_roots():
            kwargs["device"] = "meta"
        return func(*args, **kwargs)

    def _called_from_roots(self) -> bool:
        frame = sys._getframe(2)  # 0: here, 1: __torch_function__, 2: the code that called the factory
        return frame.f_code.co_filename.startswith(self.roots)


def _adds_cpu_zeros(x: torch.Tensor) -> torch.Tensor:
    return x + torch.zeros(x.shape)


def _adds_zeros_on_its_device(x: torch.Tensor) -> torch.Tensor:
    return x + torch.zeros(x.shape, device=x.device)


def test_the_trap_catches_a_tensor_made_without_the_inputs_device():
    x = torch.randn(2, 3)
    with default_device_trap(roots=(__file__,)), pytest.raises(RuntimeError, match="meta"):
        _adds_cpu_zeros(x)
    with default_device_trap(roots=(__file__,)):
        y = _adds_zeros_on_its_device(x)
    with default_device_trap():
        assert torch.zeros(1).device.type == "cpu"  # made here, outside attn: left alone
    with default_device_trap(), pytest.raises(RuntimeError, match="meta"):
        attn.causal_mask(3) & torch.ones(3, 3, dtype=torch.bool)  # attn's own: a mask without a device is made on meta
    assert y.device.type == "cpu" and torch.equal(y, x)


@pytest.mark.parametrize("name", sorted(CASES))
def test_nothing_is_made_on_the_default_device(name):
    torch.manual_seed(0)
    expected = _run_plain(CASES[name])
    torch.manual_seed(0)
    fn, args = CASES[name]()  # the model and the inputs are real CPU tensors ...
    with default_device_trap():
        got = fn(*args)  # ... and any tensor attn makes without their device is a meta tensor
    expected, got = _leaves(expected), _leaves(got)
    assert len(got) == len(expected)
    for e, g in zip(expected, got, strict=True):
        if isinstance(e, torch.Tensor):
            assert isinstance(g, torch.Tensor) and g.device.type == "cpu" and g.dtype == e.dtype and torch.equal(g, e)
        else:
            assert g == e


def test_layers_without_data_dependent_checks_run_on_the_meta_device():
    """Built and run on the meta device (shapes only, no memory): the pieces whose forward reads no values."""
    with torch.device("meta"):
        mha, encoder = MultiHeadAttention(D, H), EncoderLayer(D, H, 16, dropout=0.0)
        decoder = DecoderLayer(D, H, 16, dropout=0.0, norm_first=True)
        layers = [mha, encoder, decoder, SinusoidalPositions(D, 16), LearnedPositions(D, 16), LayerNorm(D)]
        rotary = RotaryMultiHeadAttention(D, H)
        x, memory, q = torch.randn(B, T, D), torch.randn(B, 7, D), torch.randn(B, H, T, D)
        key_mask = torch.ones(B, T, dtype=torch.bool)
        outputs = {
            "attention": mha(x, memory, memory, need_weights=False)[0],
            "masked attention": mha(x, x, x, causal_mask(T), need_weights=False, key_mask=key_mask)[0],
            "encoder layer": encoder(x, causal_mask(T), need_weights=False)[0],
            "decoder layer": decoder(x, memory, causal_mask(T), None, need_weights=False)[0],
            "sinusoidal": layers[3](x, start=3),
            "learned": layers[4](x),
            "layer norm": layers[5](x),
            "rotary positions": rotary_positions(x, start=2),
            "rotary attention": rotary(x, x, x, causal_mask(T), need_weights=False)[0],
            "causal linear attention": causal_linear_attention(x, x, x)[0],
            "recurrent linear attention": recurrent_linear_attention(x, x, x)[0],
        }
        tiled = tiled_attention(q, q, q, causal_mask(T), block_q=2, block_k=3)
    assert all(p.is_meta for layer in layers for p in [*layer.parameters(), *layer.buffers()])
    for name, y in outputs.items():
        assert y.is_meta and y.shape == (B, T, D) and y.dtype == torch.float32, name
    assert tiled[0].is_meta and tiled[0].shape == (B, H, T, D) and tiled[1].logsumexp.shape == (B, H, T)


@pytest.fixture
def no_tf32():
    """Full float32 matrix products and convolutions on CUDA, so that they agree with the CPU's."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_runs_on_its_inputs_device(name, device, no_tf32):
    torch.manual_seed(0)
    expected = _leaves(_run_plain(CASES[name]))
    torch.manual_seed(0)
    fn, args = CASES[name]()
    got = _leaves(fn(*_to(args, device)))
    assert len(got) == len(expected)
    for e, g in zip(expected, got, strict=True):
        if isinstance(e, torch.Tensor):
            assert isinstance(g, torch.Tensor) and g.device.type == device and g.dtype == e.dtype
            if e.is_floating_point():
                torch.testing.assert_close(g.cpu(), e, rtol=1e-3, atol=1e-4, equal_nan=True)
            else:
                assert torch.equal(g.cpu(), e)
        elif isinstance(e, float):
            assert math.isclose(g, e, rel_tol=1e-3, abs_tol=1e-4)
        else:
            assert g == e
