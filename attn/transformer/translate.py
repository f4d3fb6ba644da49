"""Use trained models on typed or sampled text: translate with a :class:`~attn.transformer.Transformer` (greedy
or beam search), write sentences with a :class:`~attn.transformer.LanguageModel` (for the chapters' panels)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attn._checks import check, check_positive_int, is_real_number
from attn.data.translation import Translation, sentence_words
from attn.data.vocab import Vocab
from attn.training import evaluating
from attn.transformer.model import LanguageModel, Transformer

__all__ = ["BeamSearchOutput", "beam_search", "length_penalty_of", "translate", "sample_sentences"]


@dataclass
class BeamSearchOutput:
    """The best hypothesis per sentence, ``tokens (B, L)`` with L <= max_len (ids; after ``<eos>`` comes padding,
    as from :meth:`~attn.transformer.Transformer.greedy_decode`), its log-probability ``log_prob (B,)`` =
    Σ_t log p(y_t | y_<t, x) (up to and with ``<eos>``) and the ``score (B,)`` it won by, ``log_prob / lp(length)``;
    and the ``beam`` best hypotheses found, best first: ``beams (B, beam, L')`` with ``beam_scores (B, beam)``
    (-inf where fewer were found)."""

    tokens: torch.Tensor
    log_prob: torch.Tensor
    score: torch.Tensor
    beams: torch.Tensor
    beam_scores: torch.Tensor


def length_penalty_of(length: torch.Tensor, alpha: float) -> torch.Tensor:
    """``lp(Y) = ((5 + |Y|) / 6)^α`` (Wu et al. 2016, eq. 14); a hypothesis is ranked by ``log p(Y | X) / lp(Y)``,
    so α > 0 makes up for every extra word lowering the log-probability (Vaswani et al. 2017, §6.1: α = 0.6)."""
    return ((5.0 + length) / 6.0) ** alpha


def _check_length_penalty(length_penalty: object) -> None:
    check(is_real_number(length_penalty) and 0 <= length_penalty < math.inf,
          lambda: f"length_penalty must be a finite number >= 0, got {length_penalty!r}")  # fmt: skip


def _beam_search_args(model: Transformer, source: torch.Tensor, bos: int, eos: int, beam: int = 4,
                      max_len: int | None = None, length_penalty: float = 0.0) -> None:  # fmt: skip
    model.check_decoding(source, bos, eos, max_len)
    check_positive_int("beam", beam)
    _check_length_penalty(length_penalty)


@torch.no_grad()
def beam_search(
    model: Transformer,
    source: torch.Tensor,
    bos: int,
    eos: int,
    beam: int = 4,
    max_len: int | None = None,
    length_penalty: float = 0.0,
) -> BeamSearchOutput:
    """Keep the ``beam`` most likely partial translations of every sentence of ``source (B, S)``, extend each by
    every word and keep the ``beam`` likeliest again (Vaswani et al. 2017, §6.1: beam 4, length penalty 0.6).

    At each step the 2·beam likeliest extensions are looked at, best first: one that ends with ``<eos>`` among
    the first ``beam`` is put aside as ended; the ``beam`` best that do not end go on. A sentence is done when
    ``beam`` hypotheses have ended; the search stops when every sentence is done or after ``max_len`` words
    (then the live hypotheses count too, cut). Of those, the one with the highest ``log p(Y | X) / lp(Y)`` wins
    (:func:`length_penalty_of`, α = ``length_penalty``; 0: the log-probability itself). ``beam=1`` is greedy
    decoding. The hypotheses of every sentence not yet done go through the decoder together, ``(≤ B · beam, t)`` ids
    per step. Arguments as :meth:`~attn.transformer.Transformer.greedy_decode` -> :class:`BeamSearchOutput`."""
    _beam_search_args(model, source, bos, eos, beam, max_len, length_penalty)  # the model is the caller's: no @checked
    max_len = model.config.max_len if max_len is None else max_len
    k, alpha = int(beam), float(length_penalty)
    with evaluating(model):  # no dropout: decoding is deterministic
        B, V, pad, device = source.shape[0], model.config.target_vocab, model.config.pad, source.device
        dtype = next(model.parameters()).dtype  # the scores' dtype: a float64 model keeps float64 log-probabilities
        n = min(2 * k, k * V)  # candidates looked at: at most k of them end (one per hypothesis), k others go on
        memory, _ = model.encode(source, need_weights=False)  # (B, S, d_model)
        memory = memory.repeat_interleave(k, dim=0)  # (B k, S, d_model): each sentence once per hypothesis
        sources = source.repeat_interleave(k, dim=0)  # (B k, S)
        tokens = torch.full((B, k, 1), bos, dtype=torch.long, device=device)  # (B, k, t): the live hypotheses
        log_prob = torch.full((B, k), -math.inf, device=device, dtype=dtype)
        log_prob[:, 0] = 0.0  # (B, k): one hypothesis to start from, the empty one
        ended = torch.full((B, k, max_len), pad, dtype=torch.long, device=device)  # (B, k, max_len), then:
        ended_log_prob = torch.full((B, k), -math.inf, device=device, dtype=dtype)  # (B, k)
        ended_length = torch.zeros(B, k, dtype=torch.long, device=device)  # (B, k): words, <eos> included
        count = torch.zeros(B, dtype=torch.long, device=device)  # (B,): how many have ended
        rows, rank = torch.arange(B, device=device)[:, None], torch.arange(n, device=device)  # (B, 1), (n,)
        for t in range(1, max_len + 1):
            # Only sentences not yet done go through the decoder: a done one's live hypotheses are never chosen (below)
            live = (count < k).repeat_interleave(k).nonzero()[:, 0]  # (L,) rows of the B k hypotheses
            out = model.decode(tokens.flatten(0, 1)[live], memory[live], sources[live], need_weights=False).logits
            logits = out.new_zeros(B * k, V).index_put((live,), out[:, -1])  # (B k, V)
            total = log_prob[..., None] + torch.log_softmax(logits, dim=-1).view(B, k, V)  # (B, k, V): log p(y_≤t | x)
            top = total.flatten(1).topk(n, dim=1)  # (B, n) each, best first
            parent, word = top.indices // V, top.indices % V  # (B, n): which hypothesis goes on, with which word
            prefixes = tokens[rows, parent]  # (B, n, t)
            ends = (word == eos) & (rank < k) & top.values.isfinite()  # (B, n): <eos> among the k best
            slot = count[:, None] + ends.cumsum(dim=1) - 1  # (B, n): where each ending one is put aside
            ends &= slot < k  # a sentence with k ended hypotheses is done
            b, c = ends.nonzero(as_tuple=True)
            ended[b, slot[b, c], : t - 1] = prefixes[b, c, 1:]  # the words before <eos>
            ended[b, slot[b, c], t - 1] = eos
            ended_log_prob[b, slot[b, c]] = top.values[b, c]
            ended_length[b, slot[b, c]] = t
            count += ends.sum(dim=1)
            go_on = (rank + n * (word == eos)).argsort(dim=1)[:, :k]  # (B, k): the k best that do not end
            log_prob = top.values.gather(1, go_on)
            tokens = torch.cat([prefixes[rows, go_on], word.gather(1, go_on)[..., None]], dim=2)  # (B, k, t + 1)
            if bool((count >= k).all()):
                break
    return _best_of(tokens, log_prob, (ended, ended_log_prob, ended_length), count, pad, alpha)


def _best_of(
    tokens: torch.Tensor,
    log_prob: torch.Tensor,
    ended: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    count: torch.Tensor,
    pad: int,
    alpha: float,
) -> BeamSearchOutput:
    """The search's result: each sentence's best hypotheses by ``log p / lp``. Sentences not done by ``max_len``
    choose among their ended and their live (cut) hypotheses. ``tokens (B, k, t)`` and ``log_prob (B, k)`` are the
    live ones, ``ended`` = (words ``(B, k, max_len)``, log-probabilities, lengths), ``count (B,)`` how many ended."""
    words, ended_log_prob, ended_length = ended
    (B, k, max_len), rows = words.shape, torch.arange(words.shape[0], device=words.device)[:, None]
    cut = torch.full((B, k, max_len), pad, dtype=torch.long, device=words.device)
    cut[:, :, : tokens.shape[2] - 1] = tokens[:, :, 1:]
    cut_log_prob = log_prob.masked_fill((count >= k)[:, None], -math.inf)  # (B, k)
    hypotheses = torch.cat([words, cut], dim=1)  # (B, 2k, max_len)
    found = torch.cat([ended_log_prob, cut_log_prob], dim=1)  # (B, 2k)
    lengths = torch.cat([ended_length, torch.full_like(ended_length, tokens.shape[2] - 1)], dim=1)  # (B, 2k)
    lengths = lengths.masked_fill(found.isneginf(), 0)  # none found there
    scores = found / length_penalty_of(lengths.float(), alpha) if alpha else found  # (B, 2k)
    best = scores.topk(k, dim=1)  # (B, k) each, best first
    beams, beam_lengths = hypotheses[rows, best.indices], lengths.gather(1, best.indices)  # (B, k, max_len), (B, k)
    top_log_prob = found.gather(1, best.indices[:, :1])[:, 0]  # (B,)
    longest = int(beam_lengths[:, 0].max())
    return BeamSearchOutput(
        beams[:, 0, :longest], top_log_prob, best.values[:, 0], beams[:, :, : int(beam_lengths.max())], best.values
    )


def translate(
    model: Transformer,
    sentence: str,
    source_vocab: Vocab,
    target_vocab: Vocab,
    max_words: int = 20,
    beam: int = 1,
    length_penalty: float = 0.0,
) -> Translation:
    """Decode one typed sentence, greedily (``beam=1``) or by :func:`beam_search`; the alignment is the last
    layer's cross-attention averaged over heads, read while the model re-reads its own translation. Unknown
    words become ``<unk>`` (and are listed); empty or over-long input raises a ``ValueError`` that says so."""
    words = sentence_words(sentence, max_words)
    check_positive_int("beam", beam)
    _check_length_penalty(length_penalty)
    device = next(model.parameters()).device  # the words go where the model is
    source = torch.tensor([source_vocab.encode(words, eos=True)], device=device)  # (1, S)
    model.eval()
    longest = min(2 * max_words, model.config.max_len)
    if beam == 1:
        decoded = model.greedy_decode(source, target_vocab.bos, target_vocab.eos, longest)[0]  # (≤ longest,)
    else:
        searched = beam_search(model, source, target_vocab.bos, target_vocab.eos, beam, longest, length_penalty)
        decoded = searched.tokens[0]  # (≤ longest,)
    ended = (decoded == target_vocab.eos).nonzero()
    finished = len(ended) > 0
    n = int(ended[0]) if finished else len(decoded)
    target = [target_vocab.tokens[int(i)] for i in decoded[:n]]
    with torch.no_grad():
        # Row k of the decoder input predicts target word k (and, if the model ended, row n predicts <eos>).
        target_in = torch.cat([decoded.new_tensor([target_vocab.bos]), decoded[: n - 1 + finished]])[None]  # (1, rows)
        cross = model(source, target_in).cross_attention
    alignment = cross[-1][0].mean(0)  # (rows, S): heads averaged
    unknown = [w for w in words if w not in source_vocab]
    return Translation(words, target, finished, alignment, unknown)


def sample_sentences(
    model: LanguageModel,
    vocab: Vocab,
    n: int,
    temperature: float = 1.0,
    seed: int = 0,
    max_words: int = 20,
    cache: bool = False,
) -> list[str]:
    """``n`` sentences written by a causal :class:`~attn.transformer.LanguageModel` from ``<bos>``, each token
    drawn from ``softmax(logits / temperature)`` (0: greedy) with a generator seeded by ``seed``; a sentence
    ends at ``<eos>`` or after ``max_words`` tokens, and shows every token drawn (a special one by its name).
    ``cache=True`` writes with a key/value cache (:meth:`~attn.transformer.LanguageModel.generate`)."""
    check_positive_int("n", n)
    check(isinstance(vocab, Vocab) and len(vocab) == model.config.vocab_size, lambda: "vocab must be the model's "
          f"vocabulary of {model.config.vocab_size} tokens, got "
          f"{f'{len(vocab)} tokens' if isinstance(vocab, Vocab) else type(vocab).__name__}")  # fmt: skip
    check_positive_int("max_words", max_words)
    prompt = torch.full((n, 1), vocab.bos, dtype=torch.long, device=next(model.parameters()).device)  # (n, 1)
    steps = min(int(max_words), model.config.max_len)
    g = torch.Generator().manual_seed(seed)
    drawn = model.generate(prompt, steps, temperature=temperature, generator=g, cache=cache)  # (n, 1 + steps)
    written = drawn[:, 1:].tolist()  # n x steps
    ends = [row.index(vocab.eos) if vocab.eos in row else len(row) for row in written]
    return [" ".join(vocab.tokens[i] for i in row[:end]) for row, end in zip(written, ends, strict=True)]
