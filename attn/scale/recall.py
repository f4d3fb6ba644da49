"""What a memory can hold: associative recall without training, for softmax attention, linear attention and the
delta rule (the capacity argument of Schlag, Irie & Schmidhuber 2021, §4, measured)."""

from __future__ import annotations

import math

import torch

from attn._checks import check, check_choice, check_positive_int, check_positive_number, check_size, checked
from attn.functional import attend
from attn.scale.linear import (
    decayed_linear_attention,
    delta_rule_attention,
    elu_feature_map,
    recurrent_linear_attention,
)

__all__ = ["GRIDS", "KNOBS", "MEMORIES", "associative_recall", "best_setting"]

MEMORIES = ("softmax", "linear", "linear-elu", "delta")


def _unit(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=-1, keepdim=True)


def _pairs(num_pairs: int, d_k: int, writes: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """N keys ``(N, d_k)`` with N(0, 1) entries, and ``writes · N`` random unit values ``(writes · N, d_k)``."""
    g = torch.Generator().manual_seed(seed)
    keys = torch.randn(num_pairs, d_k, generator=g, dtype=torch.float64)  # (N, d_k)
    values = _unit(torch.randn(writes * num_pairs, d_k, generator=g, dtype=torch.float64))  # (writes N, d_k)
    return keys, values


# each memory's natural knobs: what a fair comparison searches (chapter 12, benchmarks/fast_weights.py)
KNOBS = {"softmax": ("sharpness", "recency"), "linear": ("decay",), "linear-elu": ("scale",), "delta": ("beta",)}
# the search each memory gets, its plain setting first (ties keep it): softmax its sharpness × a bias toward recent
# keys (20), linear attention a decay γ (10, 1 = the plain sum), the delta rule its β (10), elu + 1 the scale c of
# its inputs, φ(c k) (10; what a trained W_K sets, as it sets softmax's sharpness)
GRIDS = {
    "softmax": [{"sharpness": b, "recency": r} for r in (0.0, 1.0, 2.0, 4.0) for b in (8.0, 1.0, 2.0, 4.0, 16.0)],
    "linear": [{"decay": g} for g in (1.0, 0.99, 0.98, 0.95, 0.9, 0.85, 0.8, 0.7, 0.6, 0.5)],
    "linear-elu": [{"scale": c} for c in (1.0, 0.5, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0)],
    "delta": [{"beta": b} for b in (1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1)],
}


def _read(
    memory: str,
    keys: torch.Tensor,
    written: torch.Tensor,
    values: torch.Tensor,
    sharpness: float,
    recency: float,
    decay: float,
    beta: float,
    scale: float,
) -> torch.Tensor:
    """What ``memory`` returns for each key ``(N, d_v)`` after the pairs ``(written, values)`` were written in order."""
    (N, d_k), W = keys.shape, written.shape[0]
    if memory == "softmax":  # every write kept (a cache); softmax(sharpness · q·k / √d_k - recency · age)
        age = (W - 1 - torch.arange(W, dtype=keys.dtype)) // N  # (W,): 0 for the last round of writes
        scores = keys @ written.T * (sharpness / math.sqrt(d_k)) - recency * age  # (N, W)
        read, _ = attend(scores, values)
        return read
    if memory == "linear-elu":  # Katharopoulos et al. 2020: φ(c k) with φ = elu + 1, read normalised by φ(c q)·z
        _, state = recurrent_linear_attention(scale * written, scale * written, values)
        phi = elu_feature_map(scale * keys)  # (N, d_k)
        return (phi @ state.S) / (phi @ state.z).unsqueeze(-1)
    unit = _unit(written)  # (writes N, d_k): unit keys, so that β = 1 replaces a stored value exactly
    if memory == "linear":  # S = γ S + k vᵀ (γ = 1: the plain sum), read Sᵀ k
        _, state = decayed_linear_attention(unit, unit, values, decay, feature_map=None)
    else:  # delta rule: S += β k (v - Sᵀ k)ᵀ
        _, state = delta_rule_attention(unit, unit, values, beta=beta, feature_map=None)
    return _unit(keys) @ state.S  # (N, d_v)


def _associative_recall_args(memory: str, num_pairs: int, d_k: int, *, seed: int, writes: int = 1,
                             sharpness: float = 8.0, recency: float = 0.0, decay: float = 1.0, beta: float = 1.0,
                             scale: float = 1.0) -> None:  # fmt: skip
    check_choice("memory", memory, MEMORIES)
    N = check_positive_int("num_pairs", num_pairs)
    check_positive_int("d_k", d_k)
    writes = check_positive_int("writes", writes)
    check_positive_number("sharpness", sharpness)
    check_positive_number("scale", scale)
    check(not isinstance(recency, bool) and isinstance(recency, int | float) and 0 <= recency < math.inf,
          lambda: f"recency must be a finite number >= 0, got {recency!r}")  # fmt: skip
    _check_rate("decay", decay)
    _check_rate("beta", beta)
    check(not isinstance(seed, bool) and isinstance(seed, int), lambda: f"seed must be an int, got {seed!r}")
    check_size("the scores of every key against every value written (num_pairs x writes * num_pairs)", writes * N * N)
    check_size("the Python steps of the writes (writes * num_pairs)", writes * N, limit=10**6)


def _check_rate(name: str, x: object) -> None:
    check(not isinstance(x, bool) and isinstance(x, int | float) and 0 < x <= 1,
          lambda: f"{name} must be a number in (0, 1], got {x!r}")  # fmt: skip


@checked(_associative_recall_args)
def associative_recall(
    memory: str,
    num_pairs: int,
    d_k: int,
    *,
    seed: int,
    writes: int = 1,
    sharpness: float = 8.0,
    recency: float = 0.0,
    decay: float = 1.0,
    beta: float = 1.0,
    scale: float = 1.0,
) -> float:
    """The fraction of N keys for which ``memory`` returns the value written last under that key.

    N random keys (N(0, 1) entries in ``d_k`` dimensions) are written ``writes`` times in turn, each time with a
    new random unit value in ``d_k`` dimensions (so linear attention's state is ``d_k × d_k`` whatever N is). Then
    every key is read once; the answer is the written value (of all ``writes · N``) nearest the read in cosine, and
    it counts when it is the key's latest value. ``memory``: ``"softmax"`` (attention over every write kept,
    ``softmax(sharpness · q·k / √d_k - recency · age)``, age = how many rounds of writes came after: a bias toward
    recent keys like ALiBi's, Press et al. 2022), ``"linear"`` (``S ← decay · S + k vᵀ`` over unit keys, read
    ``Sᵀk``; decay 1 is the plain sum), ``"linear-elu"`` (φ = elu + 1 with the normalised read of Katharopoulos et
    al. 2020, of keys and queries times ``scale``: the input scale a trained ``W_K`` sets) or ``"delta"`` (the
    delta rule ``S += β k (v - Sᵀk)ᵀ`` over unit keys). Each memory reads only its own knobs (:data:`KNOBS`). No
    training; float64; deterministic in ``seed``.
    """
    N, d_k, writes = int(num_pairs), int(d_k), int(writes)
    sharpness, scale = float(sharpness), float(scale)
    keys, values = _pairs(N, d_k, writes, seed)
    written = keys.repeat(writes, 1)  # (writes N, d_k): all N keys, then all again with new values, ...
    read = _read(memory, keys, written, values, sharpness, float(recency), float(decay), float(beta), scale)  # (N, d_k)
    answer = (_unit(read) @ values.T).argmax(-1)  # (N,): the nearest value written
    latest = torch.arange(N) + (writes - 1) * N
    return float((answer == latest).double().mean())


def _best_setting_args(memory: str, num_pairs: int, d_k: int, grid: list[dict[str, float]], *, seeds: range,
                       writes: int = 1) -> None:  # fmt: skip
    check_choice("memory", memory, MEMORIES)
    check(bool(grid), "grid must hold at least one setting, got none")
    for setting in grid:
        check(isinstance(setting, dict) and set(setting) <= set(KNOBS[memory]),
              f"grid settings of {memory!r} may set {KNOBS[memory]}, got {setting!r}")  # fmt: skip
    check(len(seeds) > 0, "seeds must hold at least one seed")
    for setting in grid:  # best_setting runs associative_recall inside its own check: every call it makes, checked
        for seed in seeds:
            associative_recall.check(memory, num_pairs, d_k, seed=seed, writes=writes, **setting)


@checked(_best_setting_args)
def best_setting(
    memory: str, num_pairs: int, d_k: int, grid: list[dict[str, float]], *, seeds: range, writes: int = 1
) -> tuple[dict[str, float], float]:
    """The setting of ``grid`` (each a dict of ``memory``'s :data:`KNOBS`) with the highest mean recall over
    ``seeds``, and that mean: the selection rule every memory gets. Select on seeds apart from those reported."""
    means = [
        sum(associative_recall(memory, num_pairs, d_k, seed=s, writes=writes, **setting) for s in seeds) / len(seeds)
        for setting in grid
    ]
    best = max(range(len(grid)), key=lambda i: means[i])  # the first of equal means: grids list the plain one first
    return grid[best], means[best]
