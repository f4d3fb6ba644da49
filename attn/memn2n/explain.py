"""The memory network's answer as a function of its sentences and of its weights, for attributions
(:mod:`attn.analysis`) and Jain & Wallace's counterfactual attention."""

from __future__ import annotations

import torch

from attn._checks import check, check_choice, check_dtype_of
from attn.data.babi import BabiTensors
from attn.memn2n.model import MemN2N, time_index

__all__ = ["answer_probability", "answer_distribution", "supporting_mask", "ERASES"]

ERASES = ("zero", "delete")


def _answer_probability_args(
    model: MemN2N,
    data: BabiTensors,
    scale: torch.Tensor | None = None,
    attention: torch.Tensor | None = None,
    erase: str = "zero",
) -> None:
    check_choice("erase", erase, ERASES)
    if isinstance(scale, torch.Tensor):
        check_dtype_of("scale", scale, model, "model")
    if isinstance(attention, torch.Tensor):
        check_dtype_of("attention", attention, model, "model")
    if erase == "delete" and scale is not None:
        B, M, _ = data.story.shape
        check(isinstance(scale, torch.Tensor) and scale.shape == (B, M),
              lambda: f"scale must be (B, M) = ({B}, {M}), one per sentence, got "
              f"{getattr(scale, 'shape', scale)}")  # fmt: skip
        check(attention is None, "erase='delete' moves the sentences: it takes no attention override")
        check(bool(((scale == 0) | (scale == 1)).all()),
              "erase='delete' needs a scale of 0 (deleted) or 1 (kept) per sentence")  # fmt: skip


def answer_probability(
    model: MemN2N,
    data: BabiTensors,
    scale: torch.Tensor | None = None,
    attention: torch.Tensor | None = None,
    erase: str = "zero",
) -> torch.Tensor:
    """``p(right answer | story)`` ``(B,)`` with sentence i scaled by ``scale[:, i]`` and, if given, the hops' weights
    replaced by ``attention (B, K, M)``. ``erase="zero"``: a scale of 0 leaves a zero memory (it scores 0 and still
    takes weight in the softmax); ``erase="delete"``: the sentences whose scale is 0 leave the story, the others keep
    their place in time (their rows of the temporal table), so the memory is masked, not shifted; then the scale
    must be 0 or 1."""
    _answer_probability_args(model, data, scale, attention, erase)
    story, lengths, time = data.story, data.lengths, None
    if erase == "delete" and scale is not None:
        B, M, _ = story.shape
        real = torch.arange(M, device=story.device) < lengths[:, None]  # (B, M)
        keep = (scale > 0) & real
        order = (~keep).to(torch.uint8).argsort(dim=-1, stable=True)  # (B, M): kept sentences first, in story order
        story = story.gather(1, order[:, :, None].expand_as(story))  # (B, M, J)
        time = time_index(lengths, M).gather(1, order)  # (B, M): each kept sentence's own age
        lengths, scale = keep.sum(-1), None
    logits = model(story, data.query, lengths, time=time, scale=scale, attention=attention).logits  # (B, V)
    return logits.softmax(-1).gather(1, data.answer[:, None]).squeeze(1)


def answer_distribution(model: MemN2N, data: BabiTensors, hops: torch.Tensor, last_hop: torch.Tensor) -> torch.Tensor:
    """The answer distribution ``(B, V)`` when the last hop reads with ``last_hop (B, M)`` and the hops before it
    with ``hops[:, :-1]``, the model's own weights ``(B, K, M)`` (the readout Jain & Wallace perturb)."""
    check(isinstance(hops, torch.Tensor) and hops.dim() == 3 and hops.shape[0] == data.story.shape[0],
          lambda: f"hops must be the model's own weights (B, K, M), got {getattr(hops, 'shape', hops)!r}")  # fmt: skip
    attention = torch.cat([hops[:, :-1].detach(), last_hop[:, None]], dim=1)  # (B, K, M)
    return model(data.story, data.query, data.lengths, attention=attention).logits.softmax(-1)


def supporting_mask(data: BabiTensors) -> torch.Tensor:
    """``(B, M)`` bool: the memory slots of each question's supporting sentences (the truth)."""
    B, M, _ = data.story.shape
    device = data.supporting.device
    truth = torch.zeros(B, M + 1, dtype=torch.bool, device=device)
    truth[torch.arange(B, device=device)[:, None], torch.where(data.supporting >= 0, data.supporting, M)] = True
    return truth[:, :M]
