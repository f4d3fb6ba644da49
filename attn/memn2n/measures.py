"""What is measured on a trained memory network: its loss and error on a set of questions, and the attention each hop
puts on the supporting sentences."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from attn._checks import check, checked
from attn.data.babi import BabiTensors
from attn.data.vocab import UNK, Vocab
from attn.memn2n.model import MemN2N

UNK_ID = Vocab([]).index[UNK]

__all__ = ["evaluate", "support_attention"]


def evaluate(
    model: MemN2N, data: BabiTensors, *, linear: bool = False, batch_size: int = 1000, unk: int = UNK_ID
) -> dict[str, Any]:
    """Mean cross-entropy, error rate and predicted word ids of ``model`` on ``data``.

    A question whose answer the vocabulary does not know (it became ``<unk>``) counts as wrong, whatever the
    model predicts.
    """
    model.eval()
    losses, predictions = [], []
    with torch.no_grad():
        for start in range(0, len(data), batch_size):
            b = data[start : start + batch_size]
            logits = model(b.story, b.query, b.lengths, linear=linear).logits
            losses.append(nn.functional.cross_entropy(logits, b.answer, reduction="sum"))
            predictions.append(logits.argmax(-1))
    predicted = torch.cat(predictions)
    return {
        "loss": float(sum(losses)) / len(data),
        "error": float(((predicted != data.answer) | (data.answer == unk)).float().mean()),
        "predictions": predicted,
    }


def _support_attention_args(hop_attention: torch.Tensor, supporting: torch.Tensor) -> None:
    N = hop_attention.shape[0]
    check(supporting.dim() == 2 and supporting.shape[0] == N,
          f"supporting must be (N={N}, S), got {tuple(supporting.shape)}")  # fmt: skip


@checked(_support_attention_args)
def support_attention(hop_attention: torch.Tensor, supporting: torch.Tensor) -> torch.Tensor:
    """Mean attention each hop puts on the supporting sentences: ``(N, K, M), (N, S) -> (K,)``.

    ``supporting`` holds memory slots, -1 for none (as :func:`attn.data.babi.vectorize` returns them).
    """
    N, K, M = hop_attention.shape
    slots = supporting.clamp_min(0).unsqueeze(1).expand(N, K, -1)  # (N, K, S)
    on_support = hop_attention.gather(2, slots) * (supporting >= 0).unsqueeze(1)  # (N, K, S)
    return on_support.sum(-1).mean(0)  # (K,)
