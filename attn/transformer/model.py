"""Whole models: the encoder-decoder Transformer (Vaswani et al. 2017) and a decoder-only language model (GPT).

A forward pass returns a small dataclass carrying the logits and every layer's attention weights, each a
tuple over layers of ``(B, H, Tq, Tk)``, so every picture in the book shows exactly what ``forward`` computed.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import torch
from torch import nn

from attn._checks import (
    check,
    check_choice,
    check_dropout,
    check_dtype_of,
    check_nonnegative_int,
    check_positive_int,
    check_positive_ints,
    check_tokens,
    checked,
    describe,
    shape_of,
)
from attn._random import sample
from attn.blocks.attention import KeyValue
from attn.blocks.layers import Decoder, Encoder
from attn.blocks.positions import LearnedPositions, SinusoidalPositions
from attn.functional import softmax
from attn.masks import causal_mask, sliding_window_mask
from attn.training import evaluating

__all__ = [
    "TransformerConfig",
    "LanguageModelConfig",
    "Embedding",
    "TransformerOutput",
    "LanguageModelOutput",
    "KeyValueCache",
    "Transformer",
    "LanguageModel",
]

POSITIONS = ("sinusoidal", "learned", "none")


@dataclass
class TransformerConfig:
    """Sizes of an encoder-decoder :class:`Transformer`. The paper's base model is d_model=512, num_heads=8,
    num_layers=6, d_ff=2048, dropout=0.1; the defaults here train on a laptop CPU in a minute."""

    source_vocab: int
    target_vocab: int
    d_model: int = 64
    num_heads: int = 4
    num_layers: int = 2  # encoder layers, and as many decoder layers
    d_ff: int = 256
    dropout: float = 0.1
    max_len: int = 128
    positions: str = "sinusoidal"  # "sinusoidal", "learned" or "none"
    norm_first: bool = False  # False: post-LN as in the paper; True: pre-LN
    activation: str = "relu"
    pad: int = 0

    def __post_init__(self) -> None:
        _check_config(self, ("source_vocab", "target_vocab"))


@dataclass
class LanguageModelConfig:
    """Sizes of a :class:`LanguageModel`; ``causal=False`` makes it a bidirectional (BERT-style) encoder."""

    vocab_size: int
    d_model: int = 64
    num_heads: int = 4
    num_layers: int = 2
    d_ff: int = 256  # 0: attention-only layers, no feed-forward (Elhage et al. 2021)
    dropout: float = 0.1
    max_len: int = 128
    positions: str = "sinusoidal"
    norm_first: bool = True  # GPT-2 style
    activation: str = "gelu"
    pad: int = 0
    causal: bool = True
    num_kv_heads: int | None = None  # fewer key/value heads: grouped-query (1: multi-query) attention
    window: int | None = None  # attend to the last `window` positions only (a sliding window; None: all)

    def __post_init__(self) -> None:
        _check_config(self, ("vocab_size",))
        if self.window is not None:
            check_positive_int("window", self.window)
        if self.num_kv_heads is not None:
            check(check_positive_int("num_kv_heads", self.num_kv_heads) and self.num_heads % self.num_kv_heads == 0,
                  f"num_heads={self.num_heads} is not divisible by num_kv_heads={self.num_kv_heads}")  # fmt: skip


def _check_config(config: TransformerConfig | LanguageModelConfig, vocabularies: tuple[str, ...]) -> None:
    check_positive_ints(config, *vocabularies, "d_model", "num_heads", "num_layers", "max_len")
    (check_nonnegative_int if isinstance(config, LanguageModelConfig) else check_positive_int)("d_ff", config.d_ff)
    check(config.d_model % config.num_heads == 0,
          f"d_model={config.d_model} is not divisible by num_heads={config.num_heads}")  # fmt: skip
    check_dropout(config.dropout)
    check(config.activation in ("relu", "gelu"), f"activation must be 'relu' or 'gelu', got {config.activation!r}")
    check_choice("positions", config.positions, POSITIONS)
    check(not isinstance(config.pad, bool) and isinstance(config.pad, numbers.Integral),
          f"pad must be a token id (int), got {config.pad!r}")  # fmt: skip
    for name in vocabularies:
        check(0 <= config.pad < getattr(config, name),
              f"pad={config.pad} is not an id of a vocabulary of {name}={getattr(config, name)}")  # fmt: skip


class Embedding(nn.Module):
    """Token ids ``(B, T)`` -> ``embedding × √d_model`` (§3.4) + positional encoding, dropout: ``(B, T, d_model)``."""

    def __init__(self, vocab_size: int, d_model: int, max_len: int, positions: str, dropout: float, pad: int):
        super().__init__()
        self.vocab_size, self.d_model = vocab_size, d_model
        self.tokens = nn.Embedding(vocab_size, d_model, padding_idx=pad)
        nn.init.normal_(self.tokens.weight, std=d_model**-0.5)  # x √d_model gives unit-size vectors
        with torch.no_grad():
            self.tokens.weight[pad].zero_()
        kind = {"sinusoidal": SinusoidalPositions, "learned": LearnedPositions}.get(positions)
        self.positions = kind(d_model, max_len) if kind is not None else None
        self.dropout = nn.Dropout(dropout)

    def _forward_args(self, tokens: torch.Tensor, name: str = "tokens", start: int = 0) -> None:
        check_tokens(name, tokens, self.vocab_size)
        if self.positions is not None:
            self.positions.check_span(tokens.shape[1], start)

    @checked(_forward_args)
    def forward(self, tokens: torch.Tensor, name: str = "tokens", start: int = 0) -> torch.Tensor:
        """``start``: the position of the first token (incremental decoding reads tokens after ``start`` others)."""
        x = self.tokens(tokens) * math.sqrt(self.d_model)  # (B, T, d_model)
        if self.positions is not None:
            x = self.positions(x, start)
        return self.dropout(x)


def _check_ids(embedding: nn.Module, tokens: torch.Tensor, name: str, vocab_size: int) -> None:
    """The ids a model's embedding reads: its door's checks, or the vocabulary's where other code replaced it."""
    if isinstance(embedding, Embedding):
        Embedding.forward.check(embedding, tokens, name)
    else:
        check_tokens(name, tokens, vocab_size)


@dataclass
class TransformerOutput:
    """``logits (B, T, target_vocab)``; per layer ``encoder_attention (B, H, S, S)``, ``decoder_attention
    (B, H, T, T)`` and ``cross_attention (B, H, T, S)`` (None when run with ``need_weights=False``)."""

    logits: torch.Tensor
    encoder_attention: tuple[torch.Tensor, ...] | None
    decoder_attention: tuple[torch.Tensor, ...] | None
    cross_attention: tuple[torch.Tensor, ...] | None


@dataclass
class LanguageModelOutput:
    """``logits (B, T, vocab_size)`` (at t: the next token, if causal) and per layer ``attention (B, H, T, T)``."""

    logits: torch.Tensor
    attention: tuple[torch.Tensor, ...] | None


@dataclass(frozen=True)
class KeyValueCache:
    """What a causal :class:`LanguageModel` keeps between calls of :meth:`LanguageModel.extend`: the ids read so
    far ``tokens (B, T)`` (for the padding mask and the next position) and, per layer, the keys and values of
    those tokens, a :class:`~attn.blocks.attention.KeyValue` of ``(B, H_kv, T, d_k)`` tensors."""

    tokens: torch.Tensor
    layers: tuple[KeyValue, ...]

    @property
    def nbytes(self) -> int:
        """The bytes of keys and values held, all layers: 2 · layers · B · H_kv · T · d_k numbers."""
        return sum(kv.nbytes for kv in self.layers)

    def __len__(self) -> int:
        """T, the number of tokens read so far."""
        return self.tokens.shape[1]


class Transformer(nn.Module):
    """The encoder-decoder Transformer (Vaswani et al. 2017, Fig. 1). Padding (``config.pad``) is masked out
    of every attention; the decoder's self-attention is causal, so one forward pass trains every position."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.config = c = config
        self.source_embedding = Embedding(c.source_vocab, c.d_model, c.max_len, c.positions, c.dropout, c.pad)
        self.target_embedding = Embedding(c.target_vocab, c.d_model, c.max_len, c.positions, c.dropout, c.pad)
        sizes = (c.num_layers, c.d_model, c.num_heads, c.d_ff, c.dropout, c.norm_first, c.activation)
        self.encoder = Encoder(*sizes)
        self.decoder = Decoder(*sizes)
        self.out = nn.Linear(c.d_model, c.target_vocab)  # the pre-softmax linear transformation (§3.4)

    def source_mask(self, source: torch.Tensor) -> torch.Tensor:
        """``(B, S)`` ids -> ``(B, 1, 1, S)``: True where the key is a real token."""
        return (source != self.config.pad)[:, None, None, :]

    def target_mask(self, target: torch.Tensor) -> torch.Tensor:
        """``(B, T)`` ids -> ``(B, 1, T, T)``: position i may attend to real tokens j <= i."""
        return causal_mask(target.shape[1], device=target.device) & (target != self.config.pad)[:, None, None, :]

    # ------------------------------------------------------------------------------------- the checks at each door

    def _encode_args(self, source: torch.Tensor, need_weights: bool = True) -> None:
        _check_ids(self.source_embedding, source, "source", self.config.source_vocab)

    def _decode_args(
        self, target: torch.Tensor, memory: torch.Tensor, source: torch.Tensor, need_weights: bool = True
    ) -> None:
        _check_ids(self.target_embedding, target, "target", self.config.target_vocab)
        d_model = self.config.d_model
        check(isinstance(memory, torch.Tensor) and memory.dim() == 3 and memory.shape[-1] == d_model,
              lambda: f"memory must have shape (B, S, d_model={d_model}), got {describe(memory)}")  # fmt: skip
        check(target.shape[0] == memory.shape[0], lambda: f"target {shape_of(target)} and memory "
              f"{shape_of(memory)} must have the same batch size")  # fmt: skip
        check(isinstance(source, torch.Tensor) and source.shape == memory.shape[:2],
              lambda: f"source must be the ids (B, S) = {tuple(memory.shape[:2])} that memory encodes, got "
              f"{describe(source)}")  # fmt: skip
        check_dtype_of("memory", memory, self)

    def _forward_args(self, source: torch.Tensor, target: torch.Tensor, need_weights: bool = True) -> None:
        _check_ids(self.source_embedding, source, "source", self.config.source_vocab)
        _check_ids(self.target_embedding, target, "target", self.config.target_vocab)
        check(source.shape[0] == target.shape[0], lambda: f"source {shape_of(source)} and target "
              f"{shape_of(target)} must have the same batch size")  # fmt: skip

    def check_decoding(self, source: torch.Tensor, bos: int, eos: int, max_len: int | None = None) -> None:
        """The arguments of a decoder (:meth:`greedy_decode`, beam search): a ValueError naming a bad one."""
        check_tokens("source", source, self.config.source_vocab)
        check(source.shape[0] > 0, lambda: f"source must hold at least one sentence, got shape {tuple(source.shape)}")
        max_len = check_positive_int("max_len", self.config.max_len if max_len is None else max_len)
        check(max_len <= self.config.max_len or self.config.positions == "none", lambda: f"max_len={max_len} is "
              f"longer than the model's positional table (max_len={self.config.max_len})")  # fmt: skip
        self._check_token_id("bos", bos)
        self._check_token_id("eos", eos)

    def _check_token_id(self, name: str, token: object) -> None:
        V = self.config.target_vocab
        check(not isinstance(token, bool) and isinstance(token, numbers.Integral) and 0 <= int(token) < V,
              lambda: f"{name} must be a target token id below {V}, got {token!r}")  # fmt: skip

    # ------------------------------------------------------------------------------------------------ the equations

    @checked(_encode_args)
    def encode(
        self, source: torch.Tensor, need_weights: bool = True
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...] | None]:
        """source ids ``(B, S)`` -> memory ``(B, S, d_model)`` and the encoder's self-attention per layer."""
        return self.encoder(self.source_embedding(source, "source"), self.source_mask(source), need_weights)

    @checked(_decode_args)
    def decode(
        self, target: torch.Tensor, memory: torch.Tensor, source: torch.Tensor, need_weights: bool = True
    ) -> TransformerOutput:
        """Decoder input ids ``(B, T)`` (starting with ``<bos>``) and the memory of ``source`` -> logits
        ``(B, T, V)`` for the next token at every position, with the decoder's attention (no encoder part)."""
        x = self.target_embedding(target, "target")
        x, self_weights, cross_weights = self.decoder(
            x, memory, self.target_mask(target), self.source_mask(source), need_weights
        )
        return TransformerOutput(self.out(x), None, self_weights, cross_weights)

    @checked(_forward_args)
    def forward(self, source: torch.Tensor, target: torch.Tensor, need_weights: bool = True) -> TransformerOutput:
        """source ids ``(B, S)``, decoder input ids ``(B, T)`` -> :class:`TransformerOutput`."""
        memory, encoder_weights = self.encode(source, need_weights)
        decoded = self.decode(target, memory, source, need_weights)
        decoded.encoder_attention = encoder_weights
        return decoded

    @torch.no_grad()
    @checked(check_decoding)
    def greedy_decode(self, source: torch.Tensor, bos: int, eos: int, max_len: int | None = None) -> torch.Tensor:
        """Decode one token at a time, always the most likely: ids ``(B, ≤ max_len)``; after ``<eos>`` comes padding
        (a sentence that has ended leaves the decoder's batch)."""
        max_len = self.config.max_len if max_len is None else max_len
        with evaluating(self):  # no dropout: decoding is deterministic
            memory, _ = self.encode(source, need_weights=False)
            B = source.shape[0]
            tokens = torch.full((B, 1), bos, dtype=torch.long, device=source.device)  # (B, 1): <bos>
            done = torch.zeros(B, dtype=torch.bool, device=source.device)
            for _ in range(max_len):
                live = (~done).nonzero()[:, 0]  # (L,): the sentences still being written; the ended ones get padding
                # (L, V): the live sentences' scores of the next word
                logits = self.decode(tokens[live], memory[live], source[live], need_weights=False).logits[:, -1]
                step = torch.full_like(done, self.config.pad, dtype=torch.long).index_put((live,), logits.argmax(-1))
                tokens = torch.cat([tokens, step[:, None]], dim=1)  # (B, t + 1)
                done |= step == eos
                if bool(done.all()):
                    break
        return tokens[:, 1:]


class LanguageModel(nn.Module):
    """A decoder-only Transformer (GPT, Radford et al. 2018): self-attention layers with a causal mask, so the
    output at position t predicts token t + 1 for every t at once. ``causal=False`` gives a bidirectional
    encoder that predicts at every position from the whole sequence (BERT-style)."""

    def __init__(self, config: LanguageModelConfig):
        super().__init__()
        self.config = c = config
        self.embedding = Embedding(c.vocab_size, c.d_model, c.max_len, c.positions, c.dropout, c.pad)
        self.layers = Encoder(
            c.num_layers, c.d_model, c.num_heads, c.d_ff, c.dropout, c.norm_first, c.activation,
            num_kv_heads=c.num_kv_heads,
        )  # fmt: skip
        self.out = nn.Linear(c.d_model, c.vocab_size)

    def mask(self, tokens: torch.Tensor) -> torch.Tensor:
        """``(B, T)`` ids -> ``(B, 1, T, T)`` (causal, or with a window) or ``(B, 1, 1, T)``: True where a key may
        be attended to. With ``config.window = w`` position i sees keys i - w < j (:func:`sliding_window_mask`)."""
        keep = (tokens != self.config.pad)[:, None, None, :]
        T, window = tokens.shape[1], self.config.window
        if window is not None:
            return keep & sliding_window_mask(T, window, causal=self.config.causal, device=tokens.device)
        return keep & causal_mask(T, device=tokens.device) if self.config.causal else keep

    # ------------------------------------------------------------------------------------- the checks at each door

    def _forward_args(self, tokens: torch.Tensor, need_weights: bool = True) -> None:
        _check_ids(self.embedding, tokens, "tokens", self.config.vocab_size)

    def _extend_args(self, tokens: torch.Tensor, cache: KeyValueCache | None = None, need_weights: bool = True) -> None:
        check(self.config.causal, "extend needs a causal model (config.causal=True)")
        check_tokens("tokens", tokens, self.config.vocab_size)
        check(cache is None or isinstance(cache, KeyValueCache),
              lambda: f"cache must be a KeyValueCache (or None), got {type(cache).__name__}")  # fmt: skip
        if cache is not None:
            check(cache.tokens.shape[0] == tokens.shape[0], lambda: f"tokens {shape_of(tokens)} and cache.tokens "
                  f"{shape_of(cache.tokens)} differ in batch size")  # fmt: skip
            self.layers.check_past(cache.layers, tokens.shape[0])
        cached, new = 0 if cache is None else len(cache), tokens.shape[1]
        check(self.config.positions == "none" or cached + new <= self.config.max_len,
              lambda: f"{cached} cached and {new} new tokens need {cached + new} positions but the model has "
              f"max_len={self.config.max_len}")  # fmt: skip

    def _generate_args(self, prompt: torch.Tensor, steps: int, temperature: float = 0.0,
                       generator: torch.Generator | None = None, cache: bool = False) -> None:  # fmt: skip
        check(self.config.causal, "generate needs a causal model (config.causal=True)")
        check_tokens("prompt", prompt, self.config.vocab_size)
        check_positive_int("steps", steps)
        number = not isinstance(temperature, bool) and isinstance(temperature, numbers.Real)
        check(number and 0 <= temperature < math.inf,
              lambda: f"temperature must be a finite number >= 0 (0: greedy), got {temperature!r}")  # fmt: skip
        check(isinstance(cache, bool), lambda: f"cache must be True or False, got {cache!r}")
        T = prompt.shape[1] + steps - 1  # the last token is never read back
        check(self.config.positions == "none" or T <= self.config.max_len,
              lambda: f"a prompt of length {prompt.shape[1]} and steps={steps} need {T} positions but the model has "
              f"max_len={self.config.max_len}")  # fmt: skip

    # ------------------------------------------------------------------------------------------------ the equations

    @checked(_forward_args)
    def forward(self, tokens: torch.Tensor, need_weights: bool = True) -> LanguageModelOutput:
        """ids ``(B, T)`` -> :class:`LanguageModelOutput` with logits ``(B, T, V)``."""
        x, attention = self.layers(self.embedding(tokens), self.mask(tokens), need_weights)
        return LanguageModelOutput(self.out(x), attention)

    @checked(_extend_args)
    def extend(
        self, tokens: torch.Tensor, cache: KeyValueCache | None = None, need_weights: bool = True
    ) -> tuple[LanguageModelOutput, KeyValueCache]:
        """Incremental decoding (a key/value cache): read Tn new ids ``(B, Tn)`` after the T' in ``cache`` (none
        if None) -> the rows of ``forward(all ids)`` for the new positions, logits ``(B, Tn, V)`` and per layer
        attention ``(B, H, Tn, T)`` with T = T' + Tn, and the cache that reads on from there. Earlier tokens are
        not re-read: each layer attends from the new positions to its cached keys and values."""
        start = 0 if cache is None else len(cache)
        seen = tokens if cache is None else torch.cat([cache.tokens, tokens], dim=1)  # (B, T)
        T = seen.shape[1]
        new = torch.arange(start, T, device=tokens.device)[:, None]  # (Tn, 1): the positions of the new tokens
        keys = torch.arange(T, device=tokens.device)[None, :]  # (1, T)
        causal = keys <= new  # (Tn, T): the rows start.. of causal_mask(T)
        if self.config.window is not None:
            causal = causal & (keys > new - self.config.window)  # the rows of sliding_window_mask(T, window)
        mask = (seen != self.config.pad)[:, None, None, :] & causal  # (B, 1, Tn, T)
        x = self.embedding(tokens, start=start)  # (B, Tn, d_model)
        x, attention, layers = self.layers.extend(x, None if cache is None else cache.layers, mask, need_weights)
        return LanguageModelOutput(self.out(x), attention), KeyValueCache(seen, layers)

    @torch.no_grad()
    @checked(_generate_args)
    def generate(
        self,
        prompt: torch.Tensor,
        steps: int,
        temperature: float = 0.0,
        generator: torch.Generator | None = None,
        cache: bool = False,
    ) -> torch.Tensor:
        """Continue ``prompt`` by ``steps`` tokens: ``(B, T) -> (B, T + steps)``. ``temperature=0`` appends the
        most likely token (greedy); ``temperature > 0`` samples from ``softmax(logits / temperature)``.
        ``cache=True`` reads each new token once (:meth:`extend`, a key/value cache) instead of re-reading the
        whole prefix at every step: the same logits up to float rounding, O(T) instead of O(T²) per token (off by
        default, so that what the chapters saved is reproduced bit for bit)."""
        tokens, past = prompt, None
        with evaluating(self):  # no dropout while writing
            for _ in range(steps):
                if not cache:
                    logits = self(tokens, need_weights=False).logits[:, -1]  # (B, V)
                else:  # the prompt at first, then only the token last appended
                    out, past = self.extend(tokens if past is None else tokens[:, -1:], past, need_weights=False)
                    logits = out.logits[:, -1]  # (B, V)
                if temperature == 0:
                    step = logits.argmax(-1, keepdim=True)  # (B, 1)
                else:
                    # any τ > 0: a tiny one gives the argmax, not NaN
                    p = softmax(logits, temperature=float(temperature))
                    step = sample(p, generator)  # (B, 1)
                tokens = torch.cat([tokens, step], dim=1)
        return tokens
