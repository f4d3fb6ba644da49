"""End-To-End Memory Networks (Sukhbaatar et al. 2015): soft attention over memories, read hop after hop.

The four parts of a memory network (Weston et al. 2015): **I**nput turns each sentence into a memory vector
(bag of words or position encoding, plus a temporal encoding); **G**eneralization writes them into the memory
(here: the most recent sentences, unchanged); **O**utput reads the memory with soft attention, once per hop,
updating the controller state ``u``; **R**esponse turns the final state into an answer word.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

from attn._checks import check, check_choice, check_float_tensor, check_positive_ints, check_positive_number, checked
from attn._random import uniform
from attn.functional import attend
from attn.masks import padding_mask

__all__ = ["MemN2NConfig", "MemN2NOutput", "MemN2N", "position_encoding", "memory_read", "time_index"]

if TYPE_CHECKING:  # a list of embedding tables is what the type checker is told (torch types items as Module)
    Tables = list[nn.Embedding]
else:
    Tables = nn.ModuleList

ENCODINGS = ("bow", "position")
TYINGS = ("adjacent", "layerwise")


@dataclass(frozen=True)
class MemN2NConfig:
    """Sizes and options of :class:`MemN2N`; the defaults are the paper's bAbI 1k settings (§4.2)."""

    vocab_size: int
    d: int = 20  # embedding size
    hops: int = 3  # K
    memory_size: int = 50  # rows of the temporal tables: the most recent sentences kept
    encoding: str = "position"  # "bow" (eq. 4's plain sum) or "position" (§4.1's l_j weights)
    temporal: bool = True  # temporal encoding T_A(i), T_C(i) (§4.1)
    init_std: float = 0.1
    attend_empty: bool = False  # every story fills memory_size slots; empty ones score 0 and read 0 (the authors')
    tying: str = "adjacent"  # §2.2: "adjacent" (A^{k+1} = C^k) or "layerwise" (one A, one C; u^{k+1} = H u^k + o^k)

    def __post_init__(self) -> None:
        check_positive_ints(self, "vocab_size", "d", "hops", "memory_size")
        check_choice("encoding", self.encoding, ENCODINGS)
        check_choice("tying", self.tying, TYINGS)
        check(isinstance(self.temporal, bool | np.bool_), f"temporal must be True or False, got {self.temporal!r}")
        check(isinstance(self.attend_empty, bool | np.bool_),
              f"attend_empty must be True or False, got {self.attend_empty!r}")  # fmt: skip
        check_positive_number("init_std", self.init_std)


@dataclass
class MemN2NOutput:
    """``logits (B, V)`` over the vocabulary and ``hop_attention (B, K, M)``: hop k's weights over memories (with
    ``attend_empty``, over the story's M slots: what the empty slots took is missing from the sum)."""

    logits: torch.Tensor
    hop_attention: torch.Tensor


def position_encoding(lengths: torch.Tensor, J: int, d: int) -> torch.Tensor:
    """§4.1's weight of embedding dimension k for word j of a J-word sentence: ``(...,) -> (..., J, d)``.

    Centred as in the authors' code, ``l_kj = 1 + 4 (k - (d+1)/2) (j - (J+1)/2) / (d J)``, which is about twice
    the paper's printed ``(1 - j/J) - (k/d)(1 - 2j/J)``: every weight is near 1 (a bag of words) and tilts
    with the word's place. (The printed form, at half the scale, leaves basic induction, task 16, at ~50 %
    error here.) ``J`` is the padded width; each sentence uses its own length (``lengths``); padding gets 0.
    """
    a, b = _position_factors(lengths, J, d)  # (d,), (..., J)
    j = torch.arange(1, J + 1, device=lengths.device)  # (J,)
    return (1 + b.unsqueeze(-1) * a) * (j <= lengths.unsqueeze(-1)).unsqueeze(-1)  # (..., J, d)


def _position_factors(lengths: torch.Tensor, J: int, d: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``l_kj = 1 + a_k b_j``: ``a_k = 4 (k - (d+1)/2) / d`` ``(d,)`` and ``b_j = (j - (J+1)/2) / J`` ``(..., J)``."""
    k = torch.arange(1, d + 1, dtype=torch.float, device=lengths.device)  # (d,)
    J_s = lengths.clamp_min(1).unsqueeze(-1).float()  # (..., 1): each sentence's own length
    j = torch.arange(1, J + 1, dtype=torch.float, device=lengths.device)  # (J,)
    return 4 * (k - (d + 1) / 2) / d, (j - (J_s + 1) / 2) / J_s


def memory_read(
    u: torch.Tensor, m: torch.Tensor, c: torch.Tensor, mask: torch.Tensor, linear: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """One hop, eqs. 1-2: ``p_i = softmax(uᵀ m_i)``, ``o = Σ_i p_i c_i`` -> ``(o (B, d), p (B, M))``.

    u ``(B, d)``, memories m and c ``(B, M, d)``, mask ``(B, M)`` (``True`` = a real memory). ``linear=True``
    drops the softmax (the paper's linear start, §4.2): p is the raw score, still 0 on padded memories.
    """
    scores = (m @ u.unsqueeze(-1)).squeeze(-1)  # (B, M)
    if linear:
        p = scores.masked_fill(~mask, 0.0)  # (B, M)
        return (p.unsqueeze(-1) * c).sum(-2), p
    o, p = attend(scores.unsqueeze(-2), c, mask.unsqueeze(-2))  # (B, 1, d), (B, 1, M)
    return o.squeeze(-2), p.squeeze(-2)


def time_index(
    lengths: torch.Tensor, M: int, noise: float = 0.0, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Row of the temporal table for each memory slot: 0 for the most recent sentence, counting back.

    ``noise > 0`` (the paper's random noise, §4.2) spreads the sentences out as if a fraction ``noise`` of
    empty memories had been inserted between them at random, so the model cannot rely on exact offsets.
    """
    i = torch.arange(M, device=lengths.device)  # (M,)
    valid = i < lengths.unsqueeze(-1)  # (B, M)
    t = (lengths.unsqueeze(-1) - 1 - i).clamp_min(0)  # (B, M)
    if noise > 0:
        blanks = (uniform(valid.shape, generator, valid.device) < noise) & valid  # an empty memory just after slot i
        t = t + blanks.flip(-1).cumsum(-1).flip(-1)  # (B, M): + the blanks from slot i to the newest
    return t


class MemN2N(nn.Module):
    """End-to-end memory network with the weight tying of §2.2.

    Adjacent (``config.tying="adjacent"``, the default): ``A^{k+1} = C^k``, ``B = A^1``, ``Wᵀ = C^K``, and
    ``u^{k+1} = u^k + o^k``. Layer-wise, RNN-like (``"layerwise"``, Table 1's LW column): one ``A`` and one ``C``
    for every hop, ``B`` and ``W`` of their own, and a learned linear map between hops, ``u^{k+1} = H u^k + o^k``.

    ``forward(story (B, M, J), query (B, J), lengths (B,))`` -> :class:`MemN2NOutput`. Word id 0 is padding
    (its embedding is fixed at zero); slots past ``lengths[b]`` are padded memories and get weight 0.
    """

    _null: torch.Tensor  # a buffer: the null word's id, 0

    def __init__(self, config: MemN2NConfig):
        super().__init__()
        self.config = config
        K, V, d = config.hops, config.vocab_size, config.d
        # adjacent: E[0] = B = A^1, E[k] = C^k = A^{k+1}, E[K] = C^K = Wᵀ: K + 1 tables instead of 2K + 2.
        # layer-wise: E[0] = B, E[1] = A, E[2] = C, E[3] = Wᵀ, and T[0] = T_A, T[1] = T_C for every hop.
        n = K + 1 if config.tying == "adjacent" else 4
        self.E = Tables(nn.Embedding(V, d, padding_idx=0) for _ in range(n))
        n_time = K + 1 if config.tying == "adjacent" else 2
        self.T = Tables(nn.Embedding(config.memory_size, d) for _ in range(n_time)) if config.temporal else None
        self.H = nn.Linear(d, d, bias=False) if config.tying == "layerwise" else None
        for table in [*self.E, *(self.T or [])] + ([self.H] if self.H is not None else []):
            nn.init.normal_(table.weight, std=config.init_std)
        self.register_buffer("_null", torch.zeros(1, dtype=torch.long), persistent=False)
        for table in self.E:
            with torch.no_grad():
                table.weight[0].zero_()  # the null word

    def encode(self, k: int, words: torch.Tensor) -> torch.Tensor:
        """Sentence vectors ``Σ_j l_j ⊙ E_k x_j`` (eq. 4 with §4.1's weights): ``(..., J) -> (..., d)``."""
        return self.encode_tables(range(k, k + 1), words).squeeze(-2)

    def encode_tables(self, tables: range, words: torch.Tensor) -> torch.Tensor:
        """:meth:`encode` with several tables in one lookup: ``(..., J) -> (..., len(tables), d)``.

        With position encoding, ``l_kj = 1 + a_k b_j`` splits the sum in two bags of words (no ``(..., J, d)``
        tensor is built): ``Σ_j l_kj (E x_j)_k = Σ_j (E x_j)_k + a_k Σ_j b_j (E x_j)_k``.
        """
        n, d, J = len(tables), self.config.d, words.shape[-1]
        weight = torch.cat([self.E[k].weight for k in tables], dim=-1)  # (V, n d)
        if J == 0:
            return weight.new_zeros(*words.shape[:-1], n, d)
        flat = words.reshape(-1)  # (N J,): one bag per sentence, the null word 0 left out
        offsets = torch.arange(0, flat.numel(), J, device=words.device)  # (N,)
        x = nn.functional.embedding_bag(flat, weight, offsets, mode="sum", padding_idx=0)  # (N, n d)
        if self.config.encoding == "position":
            a, b = (t.to(weight.dtype) for t in _position_factors((words != 0).sum(-1), J, d))  # (d,), (..., J)
            tilt = nn.functional.embedding_bag(
                flat, weight, offsets, mode="sum", per_sample_weights=b.reshape(-1), padding_idx=0
            )  # (N, n d): Σ_j b_j E x_j
            x = x + a.repeat(n) * tilt
        return x.view(*words.shape[:-1], n, d)  # (..., n, d)

    def _forward_args(
        self,
        story: torch.Tensor,
        query: torch.Tensor,
        lengths: torch.Tensor,
        *,
        time: torch.Tensor | None = None,
        linear: bool = False,
        scale: torch.Tensor | None = None,
        attention: torch.Tensor | None = None,
    ) -> None:
        c = self.config
        _long_args("story", story, 3)
        _long_args("query", query, 2)
        _long_args("lengths", lengths, 1)
        B, M, _ = story.shape
        check(query.shape[0] == B and lengths.shape[0] == B, f"story, query and lengths must share the batch size, got "
              f"story {tuple(story.shape)}, query {tuple(query.shape)}, lengths {tuple(lengths.shape)}")  # fmt: skip
        check(M <= c.memory_size, f"story has {M} memory slots but the model keeps at most memory_size={c.memory_size}")
        check(bool(((lengths >= 0) & (lengths <= M)).all()),
              lambda: f"lengths must lie in [0, {M}] (story {tuple(story.shape)}), got {lengths.tolist()}")  # fmt: skip
        _word_ids_args("story", story, c.vocab_size)
        _word_ids_args("query", query, c.vocab_size)
        check(time is None or (isinstance(time, torch.Tensor) and time.shape == (B, M) and time.dtype == torch.long
                               and not bool((time < 0).any())),
              lambda: f"time must be a (B, M) = ({B}, {M}) long tensor >= 0, got {_described(time)}")  # fmt: skip
        if scale is not None:
            check_float_tensor("scale", scale, (B, M), "B, M")
        if attention is not None:
            check_float_tensor("attention", attention, (B, c.hops, M), "B, K, M")
            check(c.attend_empty or not bool((attention.detach() * ~padding_mask(lengths, M)[:, None]).any()),
                  "attention puts weight on padded memory slots (past lengths): they must get 0")  # fmt: skip

    @checked(_forward_args)
    def forward(
        self,
        story: torch.Tensor,
        query: torch.Tensor,
        lengths: torch.Tensor,
        *,
        time: torch.Tensor | None = None,
        linear: bool = False,
        scale: torch.Tensor | None = None,
        attention: torch.Tensor | None = None,
    ) -> MemN2NOutput:
        """``scale (B, M)`` multiplies each sentence's memory vectors (1 = as it is, 0 = erased: attributions,
        :func:`attn.memn2n.explain.answer_probability`); ``attention (B, K, M)`` replaces the weights the hops compute
        (Jain & Wallace's counterfactual attention; padded slots must get 0)."""
        B, M, _ = story.shape
        mask = padding_mask(lengths, M)  # (B, M)
        K, d = self.config.hops, self.config.d
        layerwise = self.H is not None
        # adjacent: memories[:, :, k] from table E_k (K+1 of them); layer-wise: A's and C's (2 of them)
        tables = range(1, 3) if layerwise else range(K + 1)
        memories = self.encode_tables(tables, story)  # (B, M, n, d)
        if self.T is not None:
            time = time_index(lengths, M) if time is None else time.clamp_max(self.config.memory_size - 1)
            T = torch.cat([table.weight for table in self.T], dim=-1)  # (memory_size, n d)
            memories = memories + T[time].unflatten(-1, (len(tables), d))  # (B, M, n, d): + T_k(i)
        if scale is not None:  # chapter 13's attributions: sentence i scaled by scale[:, i]
            memories = memories * scale[:, :, None, None]  # (B, M, K+1, d)
        if self.config.attend_empty:  # the authors' code: all memory_size slots, the empty ones zero vectors
            empty = self.config.memory_size - M  # slots past the batch's longest story
            memories = nn.functional.pad(memories * mask[:, :, None, None], (0, 0, 0, 0, 0, empty))  # (B, size, n, d)
            mask = torch.ones(B, self.config.memory_size, dtype=torch.bool, device=story.device)  # empty slots score 0
        u = self.encode(0, query)  # (B, d)
        hops = []
        for k in range(K):
            # (B, M, d): m_i from A^k, c_i from C^k (adjacent: C^k = A^{k+1}; layer-wise: the same A and C)
            m, c = (memories[:, :, 0], memories[:, :, 1]) if layerwise else (memories[:, :, k], memories[:, :, k + 1])
            o, p = memory_read(u, m, c, mask, linear)
            if attention is not None:  # chapter 13: read with the weights given instead, o = Σ_i a_i c_i
                p = nn.functional.pad(attention[:, k], (0, mask.shape[1] - M))  # (B, M or memory_size)
                o = (p.unsqueeze(-1) * c).sum(-2)  # (B, d)
            if self.H is not None:  # layer-wise: u^{k+1} = H u^k + o^k
                u = self.H(u)
            u = u + o  # adjacent: u^{k+1} = u^k + o^k
            hops.append(p)
        logits = u @ self.E[-1].weight.T  # (B, V): a = softmax(W u^{K+1}), eq. 3 (adjacent: W(o^K + u^K))
        logits = logits.index_fill(-1, self._null, float("-inf"))  # the null word is no answer: W's row 0 stays 0
        return MemN2NOutput(logits, torch.stack(hops, dim=1)[..., :M])  # (B, V), (B, K, M): the story's slots


def _long_args(name: str, t: torch.Tensor, dims: int) -> None:
    check(isinstance(t, torch.Tensor) and t.dim() == dims and t.dtype == torch.long,
          lambda: f"{name} must be a {dims}-d long tensor, got " + (f"{t.dtype} tensor of shape {tuple(t.shape)}"
          if isinstance(t, torch.Tensor) else type(t).__name__))  # fmt: skip


def _word_ids_args(name: str, t: torch.Tensor, vocab_size: int) -> None:
    check(not t.numel() or (int(t.min()) >= 0 and int(t.max()) < vocab_size),
          lambda: f"{name} has word ids outside [0, {vocab_size}): min {int(t.min())}, max {int(t.max())}")  # fmt: skip


def _described(x: object) -> str:
    return f"{x.dtype} {tuple(x.shape)}" if isinstance(x, torch.Tensor) else type(x).__name__
