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

from attn._checks import check_dropout, check_nonnegative_int, check_positive_int, check_tokens, shape_of
from attn._random import sample
from attn.blocks.attention import KeyValue
from attn.blocks.layers import Decoder, Encoder
from attn.blocks.positions import LearnedPositions, SinusoidalPositions
from attn.functional import softmax
from attn.masks import causal_mask, sliding_window_mask

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
            check_positive_int("num_kv_heads", self.num_kv_heads)
            if self.num_heads % self.num_kv_heads:
                raise ValueError(f"num_heads={self.num_heads} is not divisible by num_kv_heads={self.num_kv_heads}")


def _check_config(config: TransformerConfig | LanguageModelConfig, vocabularies: tuple[str, ...]) -> None:
    for name in (*vocabularies, "d_model", "num_heads", "num_layers", "max_len"):
        check_positive_int(name, getattr(config, name))
    if isinstance(config, LanguageModelConfig):
        check_nonnegative_int("d_ff", config.d_ff)
    else:
        check_positive_int("d_ff", config.d_ff)
    if config.d_model % config.num_heads:
        raise ValueError(f"d_model={config.d_model} is not divisible by num_heads={config.num_heads}")
    check_dropout(config.dropout)
    if config.activation not in ("relu", "gelu"):
        raise ValueError(f"activation must be 'relu' or 'gelu', got {config.activation!r}")
    if config.positions not in POSITIONS:
        raise ValueError(f"positions must be one of {POSITIONS}, got {config.positions!r}")
    for name in vocabularies:
        if isinstance(config.pad, bool) or not isinstance(config.pad, numbers.Integral):
            raise ValueError(f"pad must be a token id (int), got {config.pad!r}")
        if not 0 <= config.pad < getattr(config, name):
            raise ValueError(f"pad={config.pad} is not an id of a vocabulary of {name}={getattr(config, name)}")


class Embedding(nn.Module):
    """Token ids ``(B, T)`` -> ``embedding × √d_model`` (§3.4) + positional encoding, dropout: ``(B, T, d_model)``."""

    def __init__(self, vocab_size: int, d_model: int, max_len: int, positions: str, dropout: float, pad: int):
        super().__init__()
        self.vocab_size, self.d_model = vocab_size, d_model
        self.tokens = nn.Embedding(vocab_size, d_model, padding_idx=pad)
        nn.init.normal_(self.tokens.weight, std=d_model**-0.5)  # x √d_model gives unit-size vectors
        with torch.no_grad():
            self.tokens.weight[pad].zero_()
        self.positions = {"sinusoidal": SinusoidalPositions, "learned": LearnedPositions}.get(positions)
        if self.positions is not None:
            self.positions = self.positions(d_model, max_len)
        self.dropout = nn.Dropout(dropout)

    def forward(self, tokens: torch.Tensor, name: str = "tokens", start: int = 0) -> torch.Tensor:
        """``start``: the position of the first token (incremental decoding reads tokens after ``start`` others)."""
        check_tokens(name, tokens, self.vocab_size)
        x = self.tokens(tokens) * math.sqrt(self.d_model)  # (B, T, d_model)
        if self.positions is not None:
            x = self.positions(x, start)
        return self.dropout(x)


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

    def encode(
        self, source: torch.Tensor, need_weights: bool = True
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...] | None]:
        """source ids ``(B, S)`` -> memory ``(B, S, d_model)`` and the encoder's self-attention per layer."""
        return self.encoder(self.source_embedding(source, "source"), self.source_mask(source), need_weights)

    def decode(
        self, target: torch.Tensor, memory: torch.Tensor, source: torch.Tensor, need_weights: bool = True
    ) -> TransformerOutput:
        """Decoder input ids ``(B, T)`` (starting with ``<bos>``) and the memory of ``source`` -> logits
        ``(B, T, V)`` for the next token at every position, with the decoder's attention (no encoder part)."""
        if target.shape[0] != memory.shape[0]:
            raise ValueError(f"target {shape_of(target)} and memory {shape_of(memory)} must have the same batch size")
        x = self.target_embedding(target, "target")
        x, self_weights, cross_weights = self.decoder(
            x, memory, self.target_mask(target), self.source_mask(source), need_weights
        )
        return TransformerOutput(self.out(x), None, self_weights, cross_weights)

    def forward(self, source: torch.Tensor, target: torch.Tensor, need_weights: bool = True) -> TransformerOutput:
        """source ids ``(B, S)``, decoder input ids ``(B, T)`` -> :class:`TransformerOutput`."""
        for name, tokens in (("source", source), ("target", target)):
            if not isinstance(tokens, torch.Tensor) or tokens.dim() != 2:
                check_tokens(name, tokens, 1)  # raises, naming the argument
        if source.shape[0] != target.shape[0]:
            raise ValueError(f"source {shape_of(source)} and target {shape_of(target)} must have the same batch size")
        memory, encoder_weights = self.encode(source, need_weights)
        decoded = self.decode(target, memory, source, need_weights)
        decoded.encoder_attention = encoder_weights
        return decoded

    def check_decoding(self, source: torch.Tensor, bos: int, eos: int, max_len: int | None) -> int:
        """The arguments of a decoder (:meth:`greedy_decode`, beam search), checked: ``max_len`` or its default."""
        check_tokens("source", source, self.config.source_vocab)
        if source.shape[0] == 0:
            raise ValueError(f"source must hold at least one sentence, got shape {tuple(source.shape)}")
        max_len = check_positive_int("max_len", self.config.max_len if max_len is None else max_len)
        if max_len > self.config.max_len and self.config.positions != "none":
            raise ValueError(
                f"max_len={max_len} is longer than the model's positional table (max_len={self.config.max_len})"
            )
        for name, token in (("bos", bos), ("eos", eos)):
            if (
                isinstance(token, bool)
                or not isinstance(token, numbers.Integral)
                or not 0 <= token < self.config.target_vocab
            ):
                raise ValueError(f"{name} must be a target token id below {self.config.target_vocab}, got {token!r}")
        return max_len

    @torch.no_grad()
    def greedy_decode(self, source: torch.Tensor, bos: int, eos: int, max_len: int | None = None) -> torch.Tensor:
        """Decode one token at a time, always the most likely: ids ``(B, ≤ max_len)``; after ``<eos>`` comes padding
        (a sentence that has ended leaves the decoder's batch)."""
        max_len = self.check_decoding(source, bos, eos, max_len)
        was_training = self.training
        self.eval()  # no dropout: decoding is deterministic
        memory, _ = self.encode(source, need_weights=False)
        B = source.shape[0]
        tokens = torch.full((B, 1), bos, dtype=torch.long, device=source.device)  # (B, 1): <bos>
        done = torch.zeros(B, dtype=torch.bool, device=source.device)
        for _ in range(max_len):
            live = (~done).nonzero()[:, 0]  # (L,): the sentences still being written; the ended ones get padding
            logits = self.decode(tokens[live], memory[live], source[live], need_weights=False).logits[:, -1]  # (L, V)
            step = torch.full_like(done, self.config.pad, dtype=torch.long).index_put((live,), logits.argmax(-1))
            tokens = torch.cat([tokens, step[:, None]], dim=1)  # (B, t + 1)
            done |= step == eos
            if bool(done.all()):
                break
        self.train(was_training)
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

    def forward(self, tokens: torch.Tensor, need_weights: bool = True) -> LanguageModelOutput:
        """ids ``(B, T)`` -> :class:`LanguageModelOutput` with logits ``(B, T, V)``."""
        x, attention = self.layers(self.embedding(tokens), self.mask(tokens), need_weights)
        return LanguageModelOutput(self.out(x), attention)

    def extend(
        self, tokens: torch.Tensor, cache: KeyValueCache | None = None, need_weights: bool = True
    ) -> tuple[LanguageModelOutput, KeyValueCache]:
        """Incremental decoding (a key/value cache): read Tn new ids ``(B, Tn)`` after the T' in ``cache`` (none
        if None) -> the rows of ``forward(all ids)`` for the new positions, logits ``(B, Tn, V)`` and per layer
        attention ``(B, H, Tn, T)`` with T = T' + Tn, and the cache that reads on from there. Earlier tokens are
        not re-read: each layer attends from the new positions to its cached keys and values."""
        if not self.config.causal:
            raise ValueError("extend needs a causal model (config.causal=True)")
        check_tokens("tokens", tokens, self.config.vocab_size)
        if cache is not None and not isinstance(cache, KeyValueCache):
            raise ValueError(f"cache must be a KeyValueCache (or None), got {type(cache).__name__}")
        if cache is not None and cache.tokens.shape[0] != tokens.shape[0]:
            raise ValueError(
                f"tokens {shape_of(tokens)} and cache.tokens {shape_of(cache.tokens)} differ in batch size"
            )
        start = 0 if cache is None else len(cache)
        seen = tokens if cache is None else torch.cat([cache.tokens, tokens], dim=1)  # (B, T)
        T = seen.shape[1]
        if self.config.positions != "none" and T > self.config.max_len:
            raise ValueError(f"{start} cached and {tokens.shape[1]} new tokens need {T} positions "
                             f"but the model has max_len={self.config.max_len}")  # fmt: skip
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
        if not self.config.causal:
            raise ValueError("generate needs a causal model (config.causal=True)")
        check_tokens("prompt", prompt, self.config.vocab_size)
        steps = check_positive_int("steps", steps)
        if (
            isinstance(temperature, bool)
            or not isinstance(temperature, numbers.Real)
            or not 0 <= temperature < math.inf
        ):
            raise ValueError(f"temperature must be a finite number >= 0 (0: greedy), got {temperature!r}")
        if not isinstance(cache, bool):
            raise ValueError(f"cache must be True or False, got {cache!r}")
        if self.config.positions != "none" and prompt.shape[1] + steps - 1 > self.config.max_len:
            raise ValueError(
                f"a prompt of length {prompt.shape[1]} and steps={steps} need {prompt.shape[1] + steps - 1} positions "
                f"but the model has max_len={self.config.max_len}"
            )
        was_training = self.training
        self.eval()  # no dropout while writing
        tokens, past = prompt, None
        for _ in range(steps):
            if not cache:
                logits = self(tokens, need_weights=False).logits[:, -1]  # (B, V)
            else:  # the prompt at first, then only the token last appended
                out, past = self.extend(tokens if past is None else tokens[:, -1:], past, need_weights=False)
                logits = out.logits[:, -1]  # (B, V)
            if temperature == 0:
                step = logits.argmax(-1, keepdim=True)  # (B, 1)
            else:
                p = softmax(logits, temperature=float(temperature))  # any τ > 0: a tiny one gives the argmax, not NaN
                step = sample(p, generator)  # (B, 1)
            tokens = torch.cat([tokens, step], dim=1)
        self.train(was_training)
        return tokens
