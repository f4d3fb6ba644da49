"""How the recurrent attention model learns where to look (Mnih et al. 2014, §3.3): REINFORCE for the policy
(:func:`reinforce`), and the hybrid loss (:func:`ram_loss`): cross-entropy for the classifier, REINFORCE for the
policy, and the baseline's squared error."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from attn._checks import check, checked, require_tensor, shape_of

if TYPE_CHECKING:  # for the annotations only: the loss reads the output's fields
    from attn.vision.model import RAMOutput

__all__ = ["reinforce", "ram_loss"]


def _reinforce_args(log_probs: torch.Tensor, rewards: torch.Tensor, baselines: torch.Tensor) -> None:
    require_tensor("log_probs", log_probs, 2)
    require_tensor("rewards", rewards, 1)
    require_tensor("baselines", baselines, 2)
    check(log_probs.dim() == 2 and baselines.shape == log_probs.shape and rewards.shape == log_probs.shape[:1],
          f"log_probs and baselines must be (B, T) and rewards (B,), got log_probs {shape_of(log_probs)}, "
          f"baselines {shape_of(baselines)}, rewards {shape_of(rewards)}")  # fmt: skip


@checked(_reinforce_args)
def reinforce(log_probs: torch.Tensor, rewards: torch.Tensor, baselines: torch.Tensor) -> torch.Tensor:
    """A surrogate whose gradient is minus the REINFORCE estimate ``E[Σ_t ∇ log π(l_t) (R - b_t)]`` (Williams
    1992; Mnih et al. 2014, eq. 2): log_probs, baselines ``(B, T)``, rewards ``(B,)`` -> a scalar to minimise.
    The advantage ``R - b_t`` is a constant here: the baseline only lowers the estimate's variance."""
    advantage = (rewards[:, None] - baselines).detach()  # (B, T)
    return -(advantage * log_probs).sum(1).mean()


def _ram_loss_args(output: RAMOutput, answer: torch.Tensor) -> None:
    B, classes = output.logits.shape[0], output.logits.shape[-1]
    check(isinstance(answer, torch.Tensor) and answer.shape == (B,) and answer.dtype == torch.int64,
          lambda: f"answer must be ({B},) int64 class ids, got {_described(answer)}")  # fmt: skip
    check(not B or (int(answer.min()) >= 0 and int(answer.max()) < classes),
          lambda: f"answer must hold class ids in [0, {classes - 1}], got {answer.min()} to "
          f"{answer.max()}")  # fmt: skip


def _described(x: object) -> str:
    return f"{x.dtype} {shape_of(x)}" if isinstance(x, torch.Tensor) else type(x).__name__


@checked(_ram_loss_args)
def ram_loss(output: RAMOutput, answer: torch.Tensor) -> torch.Tensor:
    """The hybrid loss: cross-entropy for the classifier and core, REINFORCE for the policy with reward 1 for a
    right answer, and the baseline's squared error (Mnih et al. 2014, §3.3)."""
    reward = (output.logits.argmax(-1) == answer).to(output.logits.dtype)  # (B,)
    baseline_error = F.mse_loss(output.baselines, reward[:, None].expand_as(output.baselines))
    return (
        F.cross_entropy(output.logits, answer) + reinforce(output.log_probs, reward, output.baselines) + baseline_error
    )
