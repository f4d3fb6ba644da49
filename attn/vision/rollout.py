"""Attention rollout (Abnar & Zuidema 2020): how much each input token flows into a token through all layers.

One layer's attention says where a token reads from in the layer below, but after a few layers the tokens are
mixtures. Rollout follows the mixing down: average the heads, add the identity for the residual connection
(``Â = 0.5 A + 0.5 I``), and multiply the layers: ``Ã_l = Â_l Ã_{l-1}``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from attn._checks import check_distribution, check_positive_int, require_tensor, shape_of

__all__ = ["attention_rollout", "class_token_map"]


def attention_rollout(attentions: Sequence[torch.Tensor]) -> torch.Tensor:
    """Layers' attention ``(B, H, T, T)``, first layer first -> the rollout ``(B, T, T)``: row i says how much of
    each input token reaches token i at the top (rows sum to 1)."""
    if isinstance(attentions, torch.Tensor) or not isinstance(attentions, Sequence) or not attentions:
        raise ValueError("attentions must be a non-empty sequence of (B, H, T, T) tensors, one per layer")
    shape = None
    for i, A in enumerate(attentions):
        require_tensor(f"attentions[{i}]", A, 4)
        if A.dim() != 4 or A.shape[-1] != A.shape[-2] or (shape is not None and A.shape != shape):
            raise ValueError(f"attentions[{i}] must be (B, H, T, T) like the others ({shape}), got {shape_of(A)}")
        shape = A.shape
        check_distribution(f"attentions[{i}]", A, allow_empty=True)  # weights (rows summing to 1), not raw scores
    B, H, T, _ = shape
    identity = torch.eye(T, dtype=attentions[0].dtype, device=attentions[0].device)
    rollout = identity.expand(B, T, T)
    for A in attentions:
        A = 0.5 * A.mean(dim=1) + 0.5 * identity  # (B, T, T): heads averaged, the residual added
        rollout = (A / A.sum(-1, keepdim=True)) @ rollout  # (B, T, T)
    return rollout


def class_token_map(weights: torch.Tensor, grid: int) -> torch.Tensor:
    """Row 0 (the class token) of ``(B, T, T)`` weights over the ``T - 1 = grid²`` patch tokens, renormalised to
    sum to 1 and laid out on the image: ``(B, grid, grid)``."""
    require_tensor("weights", weights, 3)
    grid = check_positive_int("grid", grid)
    if weights.dim() != 3 or weights.shape[-1] != weights.shape[-2] or weights.shape[-1] != 1 + grid * grid:
        raise ValueError(f"weights must be (B, T, T) with T = 1 + grid² = {1 + grid * grid}, got {shape_of(weights)}")
    patches = weights[:, 0, 1:]  # (B, grid²)
    patches = patches / patches.sum(-1, keepdim=True).clamp_min(torch.finfo(weights.dtype).tiny)
    return patches.view(-1, grid, grid)
