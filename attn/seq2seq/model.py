"""Learning to align: a bidirectional GRU encoder and a GRU decoder that attends to the encoder's annotations at every
step (Bahdanau et al. 2014).

At every output step the decoder asks "which source words matter now?": it scores its previous state
``s_{i-1}`` against every encoder annotation ``h_j`` (``e_ij = a(s_{i-1}, h_j)``), turns the scores into
weights ``α_ij = softmax_j(e_ij)`` and reads the context ``c_i = Σ_j α_ij h_j``. The weights of all steps
form the alignment matrix ``(T_target, T_source)``."""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import cast

import torch
from torch import nn

from attn._checks import check, check_choice, check_positive_int, checked
from attn.masks import padding_mask
from attn.seq2seq.scores import SCORES, Attention

__all__ = ["Seq2SeqConfig", "Seq2SeqOutput", "Decoded", "Seq2Seq"]


@dataclass
class Seq2SeqConfig:
    """Sizes of the encoder-decoder; ``attention`` is one of :data:`SCORES`."""

    source_vocab: int
    target_vocab: int
    d_embed: int = 32
    d_hidden: int = 64  # the decoder state; each encoder direction has d_hidden // 2
    d_attn: int = 64
    attention: str = "additive"

    def __post_init__(self) -> None:
        for name in ("source_vocab", "target_vocab", "d_embed", "d_hidden", "d_attn"):
            check_positive_int(name, getattr(self, name))
        check_choice("attention", self.attention, sorted(SCORES))
        check(self.d_hidden % 2 == 0, f"d_hidden must be even (two encoder directions), got {self.d_hidden}")


@dataclass
class Seq2SeqOutput:
    """Teacher-forced pass: logits ``(B, T, V)`` and alignments ``(B, T, S)`` (None without attention)."""

    logits: torch.Tensor
    alignments: torch.Tensor | None


@dataclass
class Decoded:
    """Greedy decoding: token ids ``(B, T)`` (after ``<eos>``: padding), their ``lengths`` (B,) without
    ``<eos>``, and the alignments ``(B, T, S)`` (None without attention)."""

    tokens: torch.Tensor
    lengths: torch.Tensor
    alignments: torch.Tensor | None


class Seq2Seq(nn.Module):
    """Bidirectional GRU encoder, GRU decoder that attends to the encoder's annotations at every step."""

    def __init__(self, config: Seq2SeqConfig):
        super().__init__()
        self.config = config
        D, E = config.d_hidden, config.d_embed
        self.source_embedding = nn.Embedding(config.source_vocab, E, padding_idx=0)
        self.target_embedding = nn.Embedding(config.target_vocab, E, padding_idx=0)
        self.encoder = nn.GRU(E, D // 2, batch_first=True, bidirectional=True)
        self.init_state = nn.Linear(D, D)  # s_0 = tanh(W_s [h_fwd_last; h_bwd_first])
        kind = SCORES[config.attention]
        self.attention = kind(D, D, config.d_attn) if kind is not None else None
        self.decoder = nn.GRUCell(E + D, D)  # s_i = f(s_{i-1}, y_{i-1}, c_i)
        self.output = nn.Linear(D + D + E, config.target_vocab)  # p(y_i | s_i, c_i, y_{i-1})

    def _encode_args(self, source: torch.Tensor, source_lengths: torch.Tensor) -> None:
        _source_args(source, source_lengths, self.config.source_vocab)

    @checked(_encode_args)
    def encode(self, source: torch.Tensor, source_lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Annotations ``h_j = [→h_j; ←h_j]`` ``(B, S, D)`` and the summary ``[→h_S; ←h_1]`` ``(B, D)``."""
        B, S = source.shape
        packed = nn.utils.rnn.pack_padded_sequence(
            self.source_embedding(source), source_lengths.cpu(), batch_first=True, enforce_sorted=False
        )
        annotations, last = self.encoder(packed)  # last: (2, B, D/2), one state per direction
        annotations, _ = nn.utils.rnn.pad_packed_sequence(annotations, batch_first=True, total_length=S)
        return annotations, torch.cat([last[0], last[1]], dim=-1)  # (B, S, D), (B, D)

    def step(
        self,
        y_prev: torch.Tensor,
        state: torch.Tensor,
        annotations: torch.Tensor,
        summary: torch.Tensor,
        mask: torch.Tensor,
        precomputed: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """One decoder step: logits ``(B, V)``, the new state ``(B, D)`` and the weights ``(B, S)``.

        ``precomputed`` is what the attention reads of the annotations at every step (``U_a h_j``:
        :meth:`Attention.precompute`), computed once per sentence by :meth:`precompute`."""
        if self.attention is None:
            context, weights = summary, None  # the bottleneck: the same vector at every step
        elif precomputed is None:
            context, weights = self.attention(state, annotations, mask)  # c_i from s_{i-1}
        else:  # by keyword: the call's arguments stay (state, annotations, mask), as hooks on the attention see them
            context, weights = self.attention(state, annotations, mask, precomputed=precomputed)
        embedded = self.target_embedding(y_prev)  # (B, E)
        state = self.decoder(torch.cat([embedded, context], dim=-1), state)
        logits = self.output(torch.cat([state, context, embedded], dim=-1))
        return logits, state, weights

    def precompute(self, annotations: torch.Tensor) -> torch.Tensor | None:
        """What the attention reads of the annotations at every step, once per sentence. None when the attention
        is not an :class:`Attention` (a module of your own): it is then called as ``(state, annotations, mask)``."""
        return self.attention.precompute(annotations) if isinstance(self.attention, Attention) else None

    def _forward_args(self, source: torch.Tensor, source_lengths: torch.Tensor, target_in: torch.Tensor) -> None:
        _source_args(source, source_lengths, self.config.source_vocab)
        _target_args(target_in, source.shape[0], self.config.target_vocab)

    @checked(_forward_args)
    def forward(self, source: torch.Tensor, source_lengths: torch.Tensor, target_in: torch.Tensor) -> Seq2SeqOutput:
        """Teacher forcing: read the reference ``target_in`` ``(B, T)`` (starting with ``<bos>``)."""
        annotations, summary = self.encode(source, source_lengths)
        mask = padding_mask(source_lengths, source.shape[1])  # (B, S)
        precomputed = self.precompute(annotations)
        state = torch.tanh(self.init_state(summary))
        logits, alignments = [], []
        for i in range(target_in.shape[1]):
            step_logits, state, weights = self.step(target_in[:, i], state, annotations, summary, mask, precomputed)
            logits.append(step_logits)
            alignments.append(weights)
        attended = cast(list[torch.Tensor], alignments)  # with attention, every step's weights are a tensor
        return Seq2SeqOutput(
            logits=torch.stack(logits, dim=1),  # (B, T, V)
            alignments=None if self.attention is None else torch.stack(attended, dim=1),  # (B, T, S)
        )

    def _greedy_decode_args(
        self, source: torch.Tensor, source_lengths: torch.Tensor, bos: int, eos: int, max_len: int = 30
    ) -> None:
        _token_args("bos", bos, self.config.target_vocab)
        _token_args("eos", eos, self.config.target_vocab)
        check_positive_int("max_len", max_len)
        _source_args(source, source_lengths, self.config.source_vocab)

    @torch.no_grad()
    @checked(_greedy_decode_args)
    def greedy_decode(
        self, source: torch.Tensor, source_lengths: torch.Tensor, bos: int, eos: int, max_len: int = 30
    ) -> Decoded:
        """Translate by taking the most likely word at each step until ``<eos>`` (or ``max_len`` steps)."""
        annotations, summary = self.encode(source, source_lengths)
        mask = padding_mask(source_lengths, source.shape[1])
        precomputed = self.precompute(annotations)
        state = torch.tanh(self.init_state(summary))
        B = source.shape[0]
        y = torch.full((B,), bos, dtype=torch.long, device=source.device)
        done = torch.zeros(B, dtype=torch.bool, device=source.device)
        lengths = torch.full((B,), max_len, dtype=torch.long, device=source.device)
        tokens, alignments = [], []
        for i in range(max_len):
            logits, state, weights = self.step(y, state, annotations, summary, mask, precomputed)
            y = logits.argmax(-1).masked_fill(done, 0)  # finished rows emit padding
            finished_now = (y == eos) & ~done
            lengths[finished_now] = i
            done |= finished_now
            tokens.append(y)
            if weights is not None:
                alignments.append(weights.masked_fill(done[:, None] & ~finished_now[:, None], 0.0))
            if bool(done.all()):
                break
        return Decoded(
            tokens=torch.stack(tokens, dim=1),  # (B, T)
            lengths=lengths,
            alignments=torch.stack(alignments, dim=1) if alignments else None,  # (B, T, S)
        )


def _source_args(source: torch.Tensor, source_lengths: torch.Tensor, vocab_size: int) -> None:
    _tensor_args("source", source)
    _tensor_args("source_lengths", source_lengths)
    check(source.dim() != 2 or source.shape[0] > 0,
          f"source is an empty batch (B = 0, shape {tuple(source.shape)}): give at least one sentence")  # fmt: skip
    check(source.dim() == 2 and source.dtype == torch.long,
          f"source must be a (B, S) tensor of token ids, got {source.dtype} {tuple(source.shape)}")  # fmt: skip
    check(source_lengths.shape == (source.shape[0],),
          f"source_lengths must have shape (B,) = ({source.shape[0]},), got {tuple(source_lengths.shape)}")  # fmt: skip
    _ids_args("source", source, vocab_size)
    check(int(source_lengths.min()) >= 1 and int(source_lengths.max()) <= source.shape[1],
          lambda: f"source_lengths must be in [1, {source.shape[1]}], got {source_lengths.tolist()}")  # fmt: skip


def _tensor_args(name: str, x: object) -> None:
    check(isinstance(x, torch.Tensor), lambda: f"{name} must be a torch.Tensor (attn.data.translation.encode_batch "
          f"makes them), got {type(x).__name__}")  # fmt: skip


def _target_args(target_in: torch.Tensor, B: int, vocab_size: int) -> None:
    check(isinstance(target_in, torch.Tensor),
          lambda: f"target_in must be a torch.Tensor of token ids, got {type(target_in).__name__}")  # fmt: skip
    check(target_in.dim() == 2 and target_in.dtype == torch.long and target_in.shape[0] == B
          and target_in.shape[1] >= 1, f"target_in must be a (B, T) tensor of token ids with B={B} and T >= 1, got "
          f"{target_in.dtype} {tuple(target_in.shape)}")  # fmt: skip
    _ids_args("target_in", target_in, vocab_size)


def _ids_args(name: str, ids: torch.Tensor, vocab_size: int) -> None:
    check(not ids.numel() or (int(ids.min()) >= 0 and int(ids.max()) < vocab_size),
          lambda: f"{name} ids must be in [0, {vocab_size}), got [{int(ids.min())}, {int(ids.max())}]")  # fmt: skip


def _token_args(name: str, token: int, vocab_size: int) -> None:
    check(not isinstance(token, bool) and isinstance(token, numbers.Integral) and 0 <= token < vocab_size,
          f"{name} must be a token id in [0, {vocab_size}) (the target vocabulary), got {token!r}")  # fmt: skip
