"""What a memory can hold: associative recall without training, for softmax attention, linear attention and the
delta rule (the capacity argument of Schlag, Irie & Schmidhuber 2021, §4, measured)."""

from __future__ import annotations

import math

import torch

from attn._checks import check_positive_int, check_positive_number
from attn.functional import attend
from attn.scale.linear import delta_rule_attention, elu_feature_map, recurrent_linear_attention

__all__ = ["MEMORIES", "associative_recall"]

MEMORIES = ("softmax", "linear", "linear-elu", "delta")


def _unit(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=-1, keepdim=True)


def _pairs(num_pairs: int, d_k: int, writes: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """N keys ``(N, d_k)`` with N(0, 1) entries, and ``writes · N`` random unit values ``(writes · N, d_k)``."""
    g = torch.Generator().manual_seed(seed)
    keys = torch.randn(num_pairs, d_k, generator=g, dtype=torch.float64)  # (N, d_k)
    values = _unit(torch.randn(writes * num_pairs, d_k, generator=g, dtype=torch.float64))  # (writes N, d_k)
    return keys, values


def _read(
    memory: str, keys: torch.Tensor, written: torch.Tensor, values: torch.Tensor, sharpness: float, recency: float
) -> torch.Tensor:
    """What ``memory`` returns for each key ``(N, d_v)`` after the pairs ``(written, values)`` were written in order."""
    (N, d_k), W = keys.shape, written.shape[0]
    if memory == "softmax":  # every write kept (a cache); softmax(sharpness · q·k / √d_k - recency · age)
        age = (W - 1 - torch.arange(W, dtype=keys.dtype)) // N  # (W,): 0 for the last round of writes
        scores = keys @ written.T * (sharpness / math.sqrt(d_k)) - recency * age  # (N, W)
        read, _ = attend(scores, values)
        return read
    if memory == "linear-elu":  # Katharopoulos et al. 2020: φ = elu + 1, read normalised by φ(q)·z
        _, state = recurrent_linear_attention(written, written, values)
        phi = elu_feature_map(keys)  # (N, d_k)
        return (phi @ state.S) / (phi @ state.z).unsqueeze(-1)
    unit = _unit(written)  # (writes N, d_k): unit keys, so that β = 1 replaces a stored value exactly
    if memory == "linear":  # S = Σ k vᵀ, read Sᵀ k
        _, state = recurrent_linear_attention(unit, unit, values, feature_map=None)
    else:  # delta rule, β = 1: S += k (v - Sᵀ k)ᵀ
        _, state = delta_rule_attention(unit, unit, values, beta=1.0, feature_map=None)
    return _unit(keys) @ state.S  # (N, d_v)


def associative_recall(
    memory: str,
    num_pairs: int,
    d_k: int,
    *,
    seed: int,
    writes: int = 1,
    sharpness: float = 8.0,
    recency: float = 0.0,
) -> float:
    """The fraction of N keys for which ``memory`` returns the value written last under that key.

    N random keys (N(0, 1) entries in ``d_k`` dimensions) are written ``writes`` times in turn, each time with a
    new random unit value in ``d_k`` dimensions (so linear attention's state is ``d_k × d_k`` whatever N is). Then
    every key is read once; the answer is the written value (of all ``writes · N``) nearest the read in cosine, and
    it counts when it is the key's latest value. ``memory``: ``"softmax"`` (attention over every write kept,
    ``softmax(sharpness · q·k / √d_k - recency · age)``, age = how many rounds of writes came after: a bias toward
    recent keys like ALiBi's, Press et al. 2022), ``"linear"`` (``S = Σ k vᵀ`` over unit keys, read ``Sᵀk``),
    ``"linear-elu"`` (φ = elu + 1 with the normalised read of Katharopoulos et al. 2020) or ``"delta"`` (the delta
    rule with β = 1 over unit keys). No training; float64; deterministic in ``seed``.
    """
    if memory not in MEMORIES:
        raise ValueError(f"memory must be one of {MEMORIES}, got {memory!r}")
    N, d_k = check_positive_int("num_pairs", num_pairs), check_positive_int("d_k", d_k)
    writes = check_positive_int("writes", writes)
    sharpness = check_positive_number("sharpness", sharpness)
    if isinstance(recency, bool) or not isinstance(recency, int | float) or not 0 <= recency < math.inf:
        raise ValueError(f"recency must be a finite number >= 0, got {recency!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an int, got {seed!r}")
    keys, values = _pairs(N, d_k, writes, seed)
    written = keys.repeat(writes, 1)  # (writes N, d_k): all N keys, then all again with new values, ...
    read = _read(memory, keys, written, values, sharpness, float(recency))  # (N, d_k)
    answer = (_unit(read) @ values.T).argmax(-1)  # (N,): the nearest value written
    latest = torch.arange(N) + (writes - 1) * N
    return float((answer == latest).double().mean())
