"""Attention rollout (Abnar & Zuidema 2020): how much each input token flows into a token through all layers.

One layer's attention says where a token reads from in the layer below, but after a few layers the tokens are
mixtures. Rollout follows the mixing down: average the heads, add the identity for the residual connection
(``Â = 0.5 A + 0.5 I``), and multiply the layers: ``Ã_l = Â_l Ã_{l-1}``.

Chefer, Gur & Wolf's generic method (ICCV 2021, eqs. 5-6) rolls out attention weighted by its gradient instead:
``Ā_l = E_h[(∇A_l ⊙ A_l)⁺]`` and ``R ← R + Ā_l R`` from ``R = I``, the first layer first
(:func:`relevance_rollout`).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from attn._checks import check, check_distribution, check_positive_int, checked, require_tensor, shape_of

__all__ = ["attention_rollout", "relevance_rollout", "class_token_map"]


def _layers_args(name: str, layers: Sequence[torch.Tensor]) -> None:
    """``layers`` is a non-empty sequence of ``(B, H, T, T)`` tensors of one shape, ``name[i]`` each."""
    check(not isinstance(layers, torch.Tensor) and isinstance(layers, Sequence) and len(layers) > 0,
          f"{name} must be a non-empty sequence of (B, H, T, T) tensors, one per layer")  # fmt: skip
    for i, A in enumerate(layers):
        require_tensor(f"{name}[{i}]", A, 4)
        check(A.dim() == 4 and A.shape[-1] == A.shape[-2] and A.shape == layers[0].shape,
              f"{name}[{i}] must be (B, H, T, T) like the others ({shape_of(layers[0]) if i else None}), got "
              f"{shape_of(A)}")  # fmt: skip


def _attention_rollout_args(attentions: Sequence[torch.Tensor]) -> None:
    _layers_args("attentions", attentions)
    for i, A in enumerate(attentions):
        check_distribution(f"attentions[{i}]", A, allow_empty=True)  # weights (rows summing to 1), not raw scores


@checked(_attention_rollout_args)
def attention_rollout(attentions: Sequence[torch.Tensor]) -> torch.Tensor:
    """Layers' attention ``(B, H, T, T)``, first layer first -> the rollout ``(B, T, T)``: row i says how much of
    each input token reaches token i at the top (rows sum to 1)."""
    B, H, T, _ = attentions[0].shape
    identity = torch.eye(T, dtype=attentions[0].dtype, device=attentions[0].device)
    rollout = identity.expand(B, T, T)
    for A in attentions:
        A = 0.5 * A.mean(dim=1) + 0.5 * identity  # (B, T, T): heads averaged, the residual added
        rollout = (A / A.sum(-1, keepdim=True)) @ rollout  # (B, T, T)
    return rollout


def _relevance_rollout_args(relevances: Sequence[torch.Tensor]) -> None:
    _layers_args("relevances", relevances)
    for i, A in enumerate(relevances):
        check(not bool((A < 0).any()),
              f"relevances[{i}] has negative entries: pass the positive part (A ⊙ ∂p/∂A)⁺")  # fmt: skip


@checked(_relevance_rollout_args)
def relevance_rollout(relevances: Sequence[torch.Tensor]) -> torch.Tensor:
    """Chefer, Gur & Wolf 2021 (ICCV, eq. 6): layers' relevance ``Ā_l`` ``(B, H, T, T)`` (e.g. the heads of
    :func:`attn.analysis.attention_x_gradient`, ``(A ⊙ ∂p/∂A)⁺``; averaged over heads here), first layer first ->
    ``R (B, T, T)`` with ``R = I`` and ``R ← R + Ā_l R`` per layer. Row 0 minus the identity is the class token's
    relevance map over the tokens."""
    B, H, T, _ = relevances[0].shape
    R = torch.eye(T, dtype=relevances[0].dtype, device=relevances[0].device).expand(B, T, T)  # (B, T, T)
    for A in relevances:
        R = R + A.mean(dim=1) @ R  # (B, T, T): eq. 6, the heads averaged (eq. 5)
    return R


def _class_token_map_args(weights: torch.Tensor, grid: int) -> None:
    require_tensor("weights", weights, 3)
    grid = check_positive_int("grid", grid)
    check(weights.dim() == 3 and weights.shape[-1] == weights.shape[-2] and weights.shape[-1] == 1 + grid * grid,
          f"weights must be (B, T, T) with T = 1 + grid² = {1 + grid * grid}, got {shape_of(weights)}")  # fmt: skip


@checked(_class_token_map_args)
def class_token_map(weights: torch.Tensor, grid: int) -> torch.Tensor:
    """Row 0 (the class token) of ``(B, T, T)`` weights over the ``T - 1 = grid²`` patch tokens, renormalised to
    sum to 1 and laid out on the image: ``(B, grid, grid)``."""
    patches = weights[:, 0, 1:]  # (B, grid²)
    patches = patches / patches.sum(-1, keepdim=True).clamp_min(torch.finfo(weights.dtype).tiny)
    return patches.view(-1, grid, grid)
