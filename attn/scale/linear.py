"""Linear attention as a fast-weight memory, and the delta rule that erases before it writes.

Replace softmax's ``exp(q·k)`` by a kernel ``φ(q)·φ(k)`` and causal attention becomes a recurrence with a state of
constant size (Katharopoulos et al. 2020, "Transformers are RNNs", eqs. 2-6 and 16-20): a matrix
``S = Σ_j φ(k_j) v_jᵀ`` written one outer product per token (a *fast weight*, Schlag, Irie & Schmidhuber 2021) and
a normaliser ``z = Σ_j φ(k_j)``. The masked product ``(φ(Q) φ(K)ᵀ ∘ M) V`` and the loop over tokens compute the same
numbers; the tests check it. Sums only add: :func:`delta_rule_attention` first reads what is stored under a key and
replaces it (Schlag et al. 2021, §4.2), so that ``d_k`` orthonormal keys hold ``d_k`` values exactly.

``feature_map=None`` everywhere means φ = identity *without* normalisation: linear attention then returns the raw
``(Q Kᵀ ∘ M) V``, and the delta rule uses the keys as given (stable for ``β |k|² <= 2``, e.g. unit keys).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import torch

from attn._checks import (
    broadcast_shapes,
    check,
    check_positive_int,
    check_positive_number,
    check_size,
    checked,
    describe,
    require_tensor,
    shape_of,
)

__all__ = [
    "elu_feature_map",
    "FastWeights",
    "causal_linear_attention",
    "linear_attention_step",
    "recurrent_linear_attention",
    "delta_rule_attention",
    "decayed_linear_attention",
    "chunked_linear_attention",
    "write_fast_weights",
    "read_fast_weights",
]

FeatureMap = Callable[[torch.Tensor], torch.Tensor] | None


def _elu_feature_map_args(x: torch.Tensor) -> None:
    require_tensor("x", x)


@checked(_elu_feature_map_args)
def elu_feature_map(x: torch.Tensor) -> torch.Tensor:
    """``φ(x) = elu(x) + 1`` (Katharopoulos et al. 2020, eq. 7): > 0 like ``exp`` (float32 rounds it to 0 below -17)."""
    return torch.nn.functional.elu(x) + 1


@dataclass(frozen=True)
class FastWeights:
    """The state of linear attention: ``S = Σ_j φ(k_j) v_jᵀ`` ``(..., D, d_v)`` and ``z = Σ_j φ(k_j)`` ``(..., D)``.

    Katharopoulos et al. 2020, eqs. 18-19. Its size does not grow with the number of tokens written (D is φ's width,
    ``d_k`` for :func:`elu_feature_map`). The delta rule keeps ``z`` as well but its read does not use it.
    """

    S: torch.Tensor
    z: torch.Tensor


# ---------------------------------------------------------------------------------------------------- the checks
#
# The functions below take a feature map, code of the caller's: they are not @checked (inside a checked call the
# caller's code would run unchecked) and call their door themselves, first thing. What only φ's output shows
# (its width, its sign, the width a state must have) is checked where φ is applied (_features, _initial_state).


def _linear_args(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, feature_map: FeatureMap, eps: float,
                 names: tuple[str, str, str] = ("query", "key", "value")) -> tuple[int, ...]:  # fmt: skip
    """The arguments every linear attention takes; returns the batch shape the inputs broadcast to."""
    batch = _qkv_args(query, key, value, names)
    check_positive_number("eps", eps)
    check(feature_map is None or callable(feature_map),
          lambda: f"feature_map must be a callable or None, got {type(feature_map).__name__}")  # fmt: skip
    return batch


def _qkv_args(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
              names: tuple[str, str, str] = ("query", "key", "value")) -> tuple[int, ...]:  # fmt: skip
    """Query, key ``(..., T, d_k)`` and value ``(..., T, d_v)`` of one length T, one dtype, batches that broadcast;
    returns the batch shape they broadcast to."""
    q_name, k_name, v_name = names
    require_tensor(q_name, query, 2)
    require_tensor(k_name, key, 2)
    require_tensor(v_name, value, 2)
    check(query.shape[-1] == key.shape[-1] and query.shape[-1] > 0, lambda: f"{q_name} and {k_name} must share "
          f"d_k >= 1, got {q_name} {shape_of(query)} and {k_name} {shape_of(key)}")  # fmt: skip
    check(query.shape[-2] == key.shape[-2] == value.shape[-2], lambda: f"{q_name}, {k_name} and {v_name} must have "
          f"the same length T (causal self-attention), got {q_name} {shape_of(query)}, {k_name} {shape_of(key)} and "
          f"{v_name} {shape_of(value)}")  # fmt: skip
    check(len({query.dtype, key.dtype, value.dtype}) == 1, lambda: f"{q_name}, {k_name} and {v_name} must share a "
          f"dtype, got {query.dtype}, {key.dtype} and {value.dtype}")  # fmt: skip
    batch = broadcast_shapes(query.shape[:-2], key.shape[:-2])
    batch = None if batch is None else broadcast_shapes(batch, value.shape[:-2])
    check(batch is not None, lambda: f"the leading (batch) dimensions of {q_name} {shape_of(query)}, {k_name} "
          f"{shape_of(key)} and {v_name} {shape_of(value)} do not broadcast")  # fmt: skip
    return cast(tuple[int, ...], batch)  # not None: checked


def _causal_linear_attention_args(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                                  feature_map: FeatureMap, eps: float) -> None:  # fmt: skip
    batch = _linear_args(query, key, value, feature_map, eps)
    check_size("the weights (..., T, T)", math.prod(batch) * query.shape[-2] ** 2)


def _linear_attention_step_args(q_t: torch.Tensor, k_t: torch.Tensor, v_t: torch.Tensor, feature_map: FeatureMap,
                                eps: float) -> None:  # fmt: skip
    require_tensor("q_t", q_t, 1)
    require_tensor("k_t", k_t, 1)
    require_tensor("v_t", v_t, 1)
    _linear_args(q_t.unsqueeze(-2), k_t.unsqueeze(-2), v_t.unsqueeze(-2), feature_map, eps, ("q_t", "k_t", "v_t"))


def _decayed_linear_attention_args(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, gamma: float,
                                   feature_map: FeatureMap, eps: float) -> None:  # fmt: skip
    _linear_args(query, key, value, feature_map, eps)
    check(not isinstance(gamma, bool) and isinstance(gamma, numbers.Real) and 0 < gamma <= 1,
          lambda: f"gamma must be a number in (0, 1], got {gamma!r}")  # fmt: skip


def _chunked_linear_attention_args(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, chunk: int,
                                   feature_map: FeatureMap, eps: float) -> None:  # fmt: skip
    _linear_args(query, key, value, feature_map, eps)
    check_positive_int("chunk", chunk)


def _delta_rule_attention_args(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                               beta: torch.Tensor | float, feature_map: FeatureMap, eps: float) -> None:  # fmt: skip
    lead = (*_linear_args(query, key, value, feature_map, eps), query.shape[-2])  # (..., T)
    check(isinstance(beta, torch.Tensor | numbers.Real) and not isinstance(beta, bool),
          lambda: f"beta must be a number or a tensor of shape (..., T), got {type(beta).__name__}")  # fmt: skip
    beta = torch.as_tensor(beta, dtype=query.dtype, device=query.device)
    check(broadcast_shapes(tuple(beta.shape), lead) == lead, lambda: "beta must be a number or one value per token, "
          f"shape {lead}, got shape {shape_of(beta)}")  # fmt: skip
    check(not beta.numel() or bool(((beta >= 0) & (beta <= 1)).all()), lambda: "beta must be in [0, 1], got values "
          f"from {float(beta.min()):.4g} to {float(beta.max()):.4g}")  # NaN fails too  # fmt: skip


# ---------------------------------------------------------------------------------------------------- linear attention


def causal_linear_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    feature_map: FeatureMap = elu_feature_map,
    eps: float = 1e-6,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Masked-product linear attention ``V'_i = Σ_{j<=i} φ(q_i)·φ(k_j) v_j / Σ_{j<=i} φ(q_i)·φ(k_j)`` (eqs. 2-6, 9).

    query, key ``(..., T, d_k)``, value ``(..., T, d_v)`` -> output ``(..., T, d_v)`` and weights ``(..., T, T)``:
    ``φ(Q) φ(K)ᵀ`` masked causally, each row divided by its sum (at least ``eps``), so rows with mass sum to 1.
    With ``feature_map=None`` the weights are the raw masked ``Q Kᵀ``, not normalised. O(T²): the picture; see
    :func:`recurrent_linear_attention` for the O(T) loop that gives the same output.
    """
    _causal_linear_attention_args(query, key, value, feature_map, eps)
    query, key, value = _broadcast(query, key, value)
    T = query.shape[-2]
    phi_q, phi_k = _features(query, key, feature_map)  # (..., T, D)
    causal = torch.ones(T, T, dtype=torch.bool, device=query.device).tril()  # (T, T), True = may attend
    weights = (phi_q @ phi_k.transpose(-2, -1)).masked_fill(~causal, 0.0)  # (..., T, T)
    if feature_map is not None:
        weights = weights / weights.sum(-1, keepdim=True).clamp_min(eps)  # eq. 6's denominator
    return weights @ value, weights  # (..., T, d_v), (..., T, T)


def linear_attention_step(
    q_t: torch.Tensor,
    k_t: torch.Tensor,
    v_t: torch.Tensor,
    state: FastWeights | None = None,
    feature_map: FeatureMap = elu_feature_map,
    eps: float = 1e-6,
) -> tuple[torch.Tensor, FastWeights]:
    """One token (eqs. 18-20): write ``S += φ(k_t) v_tᵀ``, ``z += φ(k_t)``, then read ``y_t = φ(q_t)ᵀS / φ(q_t)·z``.

    q_t, k_t ``(..., d_k)``, v_t ``(..., d_v)``, state :class:`FastWeights` (None: empty) -> y_t ``(..., d_v)`` and
    the new state. The token is written before it is read: it attends to itself, as under the causal mask.
    """
    _linear_attention_step_args(q_t, k_t, v_t, feature_map, eps)
    query, key, value = _broadcast(q_t.unsqueeze(-2), k_t.unsqueeze(-2), v_t.unsqueeze(-2))  # (..., 1, ·)
    phi_q, phi_k = _features(query, key, feature_map)  # (..., 1, D)
    state = write_fast_weights(_initial_state(state, phi_k, value), phi_k[..., 0, :], value[..., 0, :])
    return read_fast_weights(state, phi_q[..., 0, :], feature_map is not None, eps), state


def recurrent_linear_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    state: FastWeights | None = None,
    feature_map: FeatureMap = elu_feature_map,
    eps: float = 1e-6,
) -> tuple[torch.Tensor, FastWeights]:
    """Causal linear attention as an RNN (Katharopoulos et al. 2020, eqs. 16-20): one write and one read per token.

    Shapes as :func:`causal_linear_attention`, whose output it equals; returns the final :class:`FastWeights` too,
    so that a sequence can be fed in pieces: passing the state on continues where the last call stopped.
    """
    _linear_args(query, key, value, feature_map, eps)
    query, key, value = _broadcast(query, key, value)
    phi_q, phi_k = _features(query, key, feature_map)  # (..., T, D)
    state = _initial_state(state, phi_k, value)
    outputs = []
    for t in range(query.shape[-2]):
        state = write_fast_weights(state, phi_k[..., t, :], value[..., t, :])
        outputs.append(read_fast_weights(state, phi_q[..., t, :], feature_map is not None, eps))  # (..., d_v)
    return _stack(outputs, value), state  # (..., T, d_v)


def decayed_linear_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    gamma: float,
    state: FastWeights | None = None,
    feature_map: FeatureMap = elu_feature_map,
    eps: float = 1e-6,
) -> tuple[torch.Tensor, FastWeights]:
    """Linear attention with a fixed decay: ``S_t = γ S_{t-1} + φ(k_t) v_tᵀ``, ``z_t = γ z_{t-1} + φ(k_t)``.

    Older writes fade by γ per token, a recency bias that lets a newer value under the same key outweigh an older
    one (the fixed decay of RetNet, Sun et al. 2023, eq. 1; gated linear attention, Yang et al. 2024, makes γ
    depend on the token). The read is :func:`read_fast_weights`'s, normalised by ``φ(q)·z`` unless
    ``feature_map=None``. ``gamma`` in (0, 1]; 1 is :func:`recurrent_linear_attention`. Shapes as that function.
    """
    _decayed_linear_attention_args(query, key, value, gamma, feature_map, eps)
    query, key, value = _broadcast(query, key, value)
    phi_q, phi_k = _features(query, key, feature_map)  # (..., T, D)
    state = _initial_state(state, phi_k, value)
    outputs = []
    for t in range(query.shape[-2]):
        faded = FastWeights(gamma * state.S, gamma * state.z)  # (..., D, d_v), (..., D)
        state = write_fast_weights(faded, phi_k[..., t, :], value[..., t, :])
        outputs.append(read_fast_weights(state, phi_q[..., t, :], feature_map is not None, eps))  # (..., d_v)
    return _stack(outputs, value), state  # (..., T, d_v)


def chunked_linear_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    chunk: int,
    state: FastWeights | None = None,
    feature_map: FeatureMap = elu_feature_map,
    eps: float = 1e-6,
) -> tuple[torch.Tensor, FastWeights]:
    """Causal linear attention in chunks of C tokens, the form used to train it (Katharopoulos et al. 2020's
    recurrence, blocked as in Hua et al. 2022 and Yang et al. 2024): within a chunk the masked product
    ``(φ(Q_c) φ(K_c)ᵀ ∘ M) V_c`` (C × C), across chunks the state ``φ(Q_c) S`` carried from the chunks before, then
    ``S += φ(K_c)ᵀ V_c``. Per chunk ``4 C² D`` + ``4 C D d_v`` multiply-adds' FLOPs; T / C sequential steps.

    Equals :func:`causal_linear_attention` (and the recurrence) for every ``chunk >= 1``; returns the final
    :class:`FastWeights` like :func:`recurrent_linear_attention`. Shapes as that function.
    """
    _chunked_linear_attention_args(query, key, value, chunk, feature_map, eps)
    query, key, value = _broadcast(query, key, value)
    phi_q, phi_k = _features(query, key, feature_map)  # (..., T, D)
    state = _initial_state(state, phi_k, value)
    S, z = state.S, state.z  # (..., D, d_v), (..., D)
    T, outputs = query.shape[-2], []
    for start in range(0, T, chunk):
        q_c, k_c, v_c = (x[..., start : start + chunk, :] for x in (phi_q, phi_k, value))  # (..., C, ·)
        C = q_c.shape[-2]
        causal = torch.ones(C, C, dtype=torch.bool, device=query.device).tril()  # (C, C)
        inside = (q_c @ k_c.transpose(-2, -1)).masked_fill(~causal, 0.0)  # (..., C, C): this chunk's keys
        numerator = inside @ v_c + q_c @ S  # (..., C, d_v): this chunk + the state of the chunks before
        if feature_map is not None:
            denominator = inside.sum(-1, keepdim=True) + (q_c * z.unsqueeze(-2)).sum(-1, keepdim=True)  # φ(q)·z
            numerator = numerator / denominator.clamp_min(eps)
        outputs.append(numerator)
        S, z = S + k_c.transpose(-2, -1) @ v_c, z + k_c.sum(-2)  # write the chunk: S += φ(K_c)ᵀ V_c
    out = torch.cat(outputs, dim=-2) if outputs else _stack([], value)
    return out, FastWeights(S, z)


# ---------------------------------------------------------------------------------------------------- delta rule


def delta_rule_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    beta: torch.Tensor | float,
    state: FastWeights | None = None,
    feature_map: FeatureMap = elu_feature_map,
    eps: float = 1e-6,
) -> tuple[torch.Tensor, FastWeights]:
    """The delta rule (Schlag et al. 2021, eqs. 23-26): ``S_t = S_{t-1} + β_t φ(k_t) (v_t - S_{t-1}ᵀ φ(k_t))ᵀ``.

    The value stored under the key, ``v̄_t = S_{t-1}ᵀ φ(k_t)``, is erased and the new one added (the NTM's erase and
    add, in one outer product); the read is ``y_t = S_tᵀ φ(q_t)``. φ(k), φ(q) are divided by their sum (§4.2);
    ``feature_map=None``: keys and queries as given. query, key ``(..., T, d_k)``, value ``(..., T, d_v)``, beta in
    [0, 1], a number or ``(..., T)`` -> output ``(..., T, d_v)`` and the final :class:`FastWeights`.
    """
    _delta_rule_attention_args(query, key, value, beta, feature_map, eps)
    query, key, value = _broadcast(query, key, value)
    beta = torch.as_tensor(beta, dtype=query.dtype, device=query.device).expand(query.shape[:-1]).unsqueeze(-1)
    phi_q, phi_k = _features(query, key, feature_map)  # (..., T, D)
    if feature_map is not None:
        phi_q, phi_k = _sum_normalised(phi_q, eps), _sum_normalised(phi_k, eps)
    state = _initial_state(state, phi_k, value)
    outputs = []
    for t in range(query.shape[-2]):
        state = _delta_write(state, phi_k[..., t, :], value[..., t, :], beta[..., t, :])
        outputs.append(_delta_read(state, phi_q[..., t, :]))  # (..., d_v)
    return _stack(outputs, value), state  # (..., T, d_v)


def _delta_write(state: FastWeights, phi_k: torch.Tensor, v: torch.Tensor, beta: torch.Tensor) -> FastWeights:
    """``S += β φ(k) (v - Sᵀφ(k))ᵀ``: replace the value stored under ``φ(k)`` (a fraction β of the way)."""
    stored = _delta_read(state, phi_k)  # (..., d_v): v̄ = Sᵀ φ(k)
    S = state.S + phi_k.unsqueeze(-1) * (beta * (v - stored)).unsqueeze(-2)  # (..., D, d_v)
    return FastWeights(S, state.z + phi_k)


def _delta_read(state: FastWeights, phi_q: torch.Tensor) -> torch.Tensor:
    """``Sᵀ φ(q)`` ``(..., d_v)``: no normaliser, the keys already sum to 1."""
    return (phi_q.unsqueeze(-2) @ state.S).squeeze(-2)  # (..., d_v)


def _sum_normalised(x: torch.Tensor, eps: float) -> torch.Tensor:
    return x / x.sum(-1, keepdim=True).clamp_min(eps)


# ---------------------------------------------------------------------------------------------------- shared parts


def _features(query: torch.Tensor, key: torch.Tensor, feature_map: FeatureMap) -> tuple[torch.Tensor, torch.Tensor]:
    """``φ(query), φ(key)`` (identity for None), checked to keep the leading shape and share a width D."""
    if feature_map is None:
        return query, key
    phi_q, phi_k = feature_map(query), feature_map(key)
    _check_features("query", query, phi_q)
    _check_features("key", key, phi_k)
    check(phi_q.shape[-1] == phi_k.shape[-1], lambda: "feature_map gave query and key different widths: "
          f"{shape_of(phi_q)} and {shape_of(phi_k)}")  # fmt: skip
    return phi_q, phi_k


def _check_features(name: str, x: torch.Tensor, phi: object) -> None:
    """``φ(x)`` keeps x's leading shape, has a width D >= 1 and no negative entry: eq. 6 divides by φ(q)·Σφ(k), a
    sum that must be positive (NaN fails too; on the meta device there are no values to read)."""
    check(isinstance(phi, torch.Tensor) and phi.shape[:-1] == x.shape[:-1] and phi.shape[-1] >= 1,
          lambda: f"feature_map must map {name} {shape_of(x)} to shape {(*x.shape[:-1], 'D')}, got "
          f"{describe(phi)}")  # fmt: skip
    phi = cast(torch.Tensor, phi)  # checked: a tensor
    check(not phi.numel() or phi.is_meta or bool((phi >= 0).all()), lambda: "feature_map must give features >= 0 "
          f"(the normalised forms divide by φ(q)·Σφ(k)); it gave {phi.min().item():.3g} for {name} {shape_of(phi)}; "
          "use feature_map=None for the unnormalised sum")  # fmt: skip


def write_fast_weights(state: FastWeights, phi_k: torch.Tensor, v: torch.Tensor) -> FastWeights:
    """``S += φ(k) vᵀ``, ``z += φ(k)`` (eqs. 18-19): one outer product into the fast weights."""
    S = state.S + phi_k.unsqueeze(-1) * v.unsqueeze(-2)  # (..., D, d_v)
    return FastWeights(S, state.z + phi_k)  # z: (..., D)


def read_fast_weights(state: FastWeights, phi_q: torch.Tensor, normalise: bool, eps: float) -> torch.Tensor:
    """``φ(q)ᵀ S / φ(q)·z`` (eq. 20), the denominator at least ``eps``; without ``normalise`` only ``φ(q)ᵀ S``."""
    numerator = (phi_q.unsqueeze(-2) @ state.S).squeeze(-2)  # (..., d_v)
    if not normalise:
        return numerator
    z = (phi_q * state.z).sum(-1, keepdim=True)  # φ(q)·z (..., 1)
    return numerator / z.clamp_min(eps)  # (..., d_v)


def _initial_state(state: FastWeights | None, phi_k: torch.Tensor, v: torch.Tensor) -> FastWeights:
    """``state``, checked against ``φ(key) (..., T, D)`` and ``value (..., T, d_v)``; None: zeros of their sizes."""
    lead, D, d_v = tuple(v.shape[:-2]), phi_k.shape[-1], v.shape[-1]
    if state is None:
        return FastWeights(v.new_zeros(*lead, D, d_v), v.new_zeros(*lead, D))
    check(isinstance(state, FastWeights), lambda: f"state must be a FastWeights or None, got {type(state).__name__}")
    S, z = state.S, state.z
    check(isinstance(S, torch.Tensor) and isinstance(z, torch.Tensor) and S.dim() >= 2 and z.dim() >= 1,
          "state.S and state.z must be tensors of shapes (..., D, d_v) and (..., D)")  # fmt: skip
    check(S.shape[-2:] == (D, d_v) and z.shape[-1] == D and S.shape[:-2] == z.shape[:-1],
          lambda: f"state must have S (..., {D}, {d_v}) and z (..., {D}) to match φ(key) {shape_of(phi_k)} and value "
          f"{shape_of(v)}, got S {shape_of(S)} and z {shape_of(z)}")  # fmt: skip
    check(broadcast_shapes(S.shape[:-2], lead) is not None and S.dtype == v.dtype and z.dtype == v.dtype,
          lambda: f"state (S {S.dtype} {shape_of(S)}) must share the dtype {v.dtype} and batch {lead} of the "
          "inputs")  # fmt: skip
    return state


def _stack(outputs: list[torch.Tensor], value: torch.Tensor) -> torch.Tensor:
    """The per-token outputs as ``(..., T, d_v)``; T = 0 gives an empty one."""
    if not outputs:
        return value.new_zeros(*value.shape[:-2], 0, value.shape[-1])
    return torch.stack(outputs, dim=-2)  # (..., T, d_v)


def _broadcast(
    query: torch.Tensor, key: torch.Tensor, value: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Query, key and value (checked: their batches broadcast) as views of one batch shape."""
    qk = cast(tuple[int, ...], broadcast_shapes(query.shape[:-2], key.shape[:-2]))
    batch = cast(tuple[int, ...], broadcast_shapes(qk, value.shape[:-2]))
    T = query.shape[-2]
    return query.expand(*batch, T, -1), key.expand(*batch, T, -1), value.expand(*batch, T, -1)
