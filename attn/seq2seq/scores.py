"""The scores a decoder attends with (Bahdanau et al. 2014, App. A.1.2; Luong et al. 2015, §3.1), each the plain
:func:`attn.functional.attend` on top of a score function, returning ``(context, weights)``.

Masks follow :mod:`attn.masks`: ``True`` = may attend; padded source positions get weight exactly 0."""

from __future__ import annotations

import math

import torch
from torch import nn

from attn._checks import check, check_in_range, check_mask, check_same_dtype, check_shapes, checked, describe
from attn.functional import attend, dot_product_scores

__all__ = ["Attention", "AdditiveAttention", "DotAttention", "GeneralAttention", "BlurredAttention", "SCORES"]


class Attention(nn.Module):
    """Soft lookup of one query per example over that example's keys; subclasses define ``score``."""

    def precompute(self, keys: torch.Tensor) -> torch.Tensor:
        """What ``score`` reads of the keys ``(B, Tk, d_k)``: it does not depend on the query, so a decoder
        computes it once per sentence, not once per step (by default, the keys themselves)."""
        return keys

    def score(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """Scores ``e`` ``(B, 1, Tk)`` of queries ``(B, 1, d_q)`` against the keys as ``precompute`` left them."""
        raise NotImplementedError(f"{type(self).__name__} must define score(query, keys)")

    def _widths_args(self, query: torch.Tensor, keys: torch.Tensor) -> None:
        """The widths of query and keys the score was built for (any, unless a subclass says otherwise)."""

    def _forward_args(
        self,
        query: torch.Tensor,
        keys: torch.Tensor,
        mask: torch.Tensor | None = None,
        precomputed: torch.Tensor | None = None,
    ) -> None:
        check(isinstance(query, torch.Tensor) and isinstance(keys, torch.Tensor) and query.dim() == 2
              and keys.dim() == 3 and query.shape[0] == keys.shape[0],
              lambda: f"expected query (B, d_q) and keys (B, Tk, d_k) with the same B, got query {describe(query)} "
              f"and keys {describe(keys)}")  # fmt: skip
        check_shapes(query=(query, "B d_q"), keys=(keys, "B Tk d_k"))
        check_same_dtype(query=query, keys=keys)
        check(mask is None or isinstance(mask, torch.Tensor) and tuple(mask.shape) == tuple(keys.shape[:2]),
              lambda: f"mask must have shape (B, Tk) = {tuple(keys.shape[:2])}, got {describe(mask)}")  # fmt: skip
        if mask is not None:
            check_mask(mask, tuple(keys.shape[:2]), keys.device)
        check(precomputed is None or isinstance(precomputed, torch.Tensor) and precomputed.shape[:2] == keys.shape[:2],
              lambda: f"precomputed must be self.precompute(keys), shape (B, Tk, ...) = {tuple(keys.shape[:2])} + ..., "
              f"got {describe(precomputed)}")  # fmt: skip
        self._widths_args(query, keys)

    @checked(_forward_args)
    def forward(
        self,
        query: torch.Tensor,
        keys: torch.Tensor,
        mask: torch.Tensor | None = None,
        precomputed: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """query ``(B, d_q)``, keys ``(B, Tk, d_k)``, mask ``(B, Tk)`` -> context ``(B, d_k)``, weights ``(B, Tk)``;
        ``precomputed`` is ``self.precompute(keys)``, computed here when not given."""
        if precomputed is None:
            precomputed = self.precompute(keys)  # (B, Tk, ...)
        scores = self.score(query[:, None, :], precomputed)  # (B, 1, Tk)
        context, weights = attend(scores, keys, None if mask is None else mask[:, None, :])
        return context.squeeze(1), weights.squeeze(1)  # (B, d_k), (B, Tk)


def _width(name: str, x: torch.Tensor, size: int, d_name: str) -> None:
    check(x.shape[-1] == size, lambda: f"{name} has width {x.shape[-1]}, but the attention was built for "
          f"{d_name}={size}")  # fmt: skip


def _init(*shape: int) -> nn.Parameter:
    bound = 1 / math.sqrt(shape[-1])
    return nn.Parameter(torch.empty(*shape).uniform_(-bound, bound))


class AdditiveAttention(Attention):
    """Bahdanau et al. 2014, eq. 6 / App. A.1.2: ``e_ij = v_aᵀ tanh(W_a s_{i-1} + U_a h_j)``."""

    def __init__(self, d_query: int, d_key: int, d_attn: int):
        super().__init__()
        self.W_a = _init(d_attn, d_query)
        self.U_a = _init(d_attn, d_key)
        self.v_a = _init(d_attn)

    def _precompute_args(self, keys: torch.Tensor) -> None:
        check_shapes(keys=(keys, "... d_k"))
        _width("keys", keys, self.U_a.shape[1], "d_key")

    def _widths_args(self, query: torch.Tensor, keys: torch.Tensor) -> None:
        self._precompute_args(keys)
        _width("query", query, self.W_a.shape[1], "d_query")

    @checked(_precompute_args)
    def precompute(self, keys: torch.Tensor) -> torch.Tensor:
        return keys @ self.U_a.T  # U_a h_j (B, Tk, d_attn): the same at every step, "pre-computed" (App. A.1.2)

    def score(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        return (torch.tanh(query @ self.W_a.T + keys) @ self.v_a)[:, None, :]  # (B, 1, Tk)


class DotAttention(Attention):
    """Luong et al. 2015, eq. 8 "dot": ``e_ij = s · h_j`` (no parameters; d_query must equal d_key).

    ``d_attn`` is not used: it is accepted so that every score has the same constructor.
    """

    def __init__(self, d_query: int, d_key: int, d_attn: int | None = None):
        super().__init__()
        check(d_query == d_key, f"dot attention needs d_query == d_key, got d_query={d_query} and d_key={d_key}")

    def _widths_args(self, query: torch.Tensor, keys: torch.Tensor) -> None:
        check(query.shape[-1] == keys.shape[-1], f"dot attention needs query and keys of one width, got query "
              f"{tuple(query.shape)} and keys {tuple(keys.shape)}")  # fmt: skip

    def score(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        return dot_product_scores(query, keys)  # (B, 1, Tk)


class GeneralAttention(Attention):
    """Luong et al. 2015, eq. 8 "general": ``e_ij = sᵀ W_a h_j`` (``d_attn`` is not used, as for dot)."""

    def __init__(self, d_query: int, d_key: int, d_attn: int | None = None):
        super().__init__()
        self.W_a = _init(d_query, d_key)

    def _precompute_args(self, keys: torch.Tensor) -> None:
        check_shapes(keys=(keys, "... d_k"))
        _width("keys", keys, self.W_a.shape[1], "d_key")

    def _widths_args(self, query: torch.Tensor, keys: torch.Tensor) -> None:
        self._precompute_args(keys)
        _width("query", query, self.W_a.shape[0], "d_query")

    @checked(_precompute_args)
    def precompute(self, keys: torch.Tensor) -> torch.Tensor:
        return keys @ self.W_a.T  # W_a h_j (B, Tk, d_query), the same at every step

    def score(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        return dot_product_scores(query, keys)  # (B, 1, Tk)


class BlurredAttention(Attention):
    """A trained attention with its weights blended toward uniform: ``α' = (1 - mix) · α + mix · u``, where
    ``u`` spreads the weight evenly over the positions the mask allows, and the context ``c = Σ_j α'_j h_j``.

    An experiment at inference time: put it in place of a model's ``attention`` (``mix`` = 0 changes nothing,
    ``mix`` = 1 reads the plain average of the annotations at every step, wherever the learned weights looked).
    Its arguments are checked by the attention it blends.
    """

    def __init__(self, attention: Attention, mix: float):
        super().__init__()
        self.attention, self.mix = attention, check_in_range("mix", mix, 0, 1)

    def precompute(self, keys: torch.Tensor) -> torch.Tensor:
        return self.attention.precompute(keys)

    def forward(
        self,
        query: torch.Tensor,
        keys: torch.Tensor,
        mask: torch.Tensor | None = None,
        precomputed: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """query ``(B, d_q)``, keys ``(B, Tk, d_k)``, mask ``(B, Tk)`` -> context ``(B, d_k)``, weights ``(B, Tk)``."""
        _, weights = self.attention(query, keys, mask, precomputed=precomputed)  # (B, Tk)
        allowed = torch.ones_like(weights) if mask is None else mask.to(weights.dtype)
        weights = (1 - self.mix) * weights + self.mix * allowed / allowed.sum(-1, keepdim=True)
        return (weights[:, None, :] @ keys).squeeze(1), weights  # (B, d_k), (B, Tk)


SCORES: dict[str, type[Attention] | None] = {
    "additive": AdditiveAttention,
    "dot": DotAttention,
    "general": GeneralAttention,
    "none": None,  # the baseline: one fixed summary of the source, no attention
}
