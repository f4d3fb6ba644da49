"""The memory network's answer as a function of its sentences and of its weights, for attributions
(:mod:`attn.analysis`) and Jain & Wallace's counterfactual attention."""

from __future__ import annotations

import torch

from attn.data.babi import BabiTensors
from attn.memn2n.model import MemN2N

__all__ = ["answer_probability", "answer_distribution", "supporting_mask"]


def answer_probability(
    model: MemN2N, data: BabiTensors, scale: torch.Tensor | None = None, attention: torch.Tensor | None = None
) -> torch.Tensor:
    """``p(right answer | story)`` ``(B,)`` with sentence i scaled by ``scale[:, i]`` (0 = erased) and, if given,
    the hops' weights replaced by ``attention (B, K, M)``."""
    logits = model(data.story, data.query, data.lengths, scale=scale, attention=attention).logits  # (B, V)
    return logits.softmax(-1).gather(1, data.answer[:, None]).squeeze(1)


def answer_distribution(model: MemN2N, data: BabiTensors, hops: torch.Tensor, last_hop: torch.Tensor) -> torch.Tensor:
    """The answer distribution ``(B, V)`` when the last hop reads with ``last_hop (B, M)`` and the hops before it
    with ``hops[:, :-1]``, the model's own weights ``(B, K, M)`` (the readout Jain & Wallace perturb)."""
    if not isinstance(hops, torch.Tensor) or hops.dim() != 3 or hops.shape[0] != data.story.shape[0]:
        raise ValueError(f"hops must be the model's own weights (B, K, M), got {getattr(hops, 'shape', hops)!r}")
    attention = torch.cat([hops[:, :-1].detach(), last_hop[:, None]], dim=1)  # (B, K, M)
    return model(data.story, data.query, data.lengths, attention=attention).logits.softmax(-1)


def supporting_mask(data: BabiTensors) -> torch.Tensor:
    """``(B, M)`` bool: the memory slots of each question's supporting sentences (the truth)."""
    B, M, _ = data.story.shape
    device = data.supporting.device
    truth = torch.zeros(B, M + 1, dtype=torch.bool, device=device)
    truth[torch.arange(B, device=device)[:, None], torch.where(data.supporting >= 0, data.supporting, M)] = True
    return truth[:, :M]
