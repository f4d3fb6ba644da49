"""What heads do: summaries of attention weights, switching heads off, and attributions scored against the truth.

Every summary takes one layer's weights ``(B, H, Tq, Tk)`` (as a model's forward returns them) and gives one
number per head ``(H,)``, averaged over the query positions that count; stack them over layers for a
``(layers, heads)`` picture. The patterns are those found in BERT (Clark et al. 2019) and in small
attention-only models (Olsson et al. 2022).

Attributions say how much each of a model's ``N`` input elements (sentences in memory, source words, image
patches) counts for one answer. They need only an *answer function* ``answer(scale (B, N)) -> (B,)``: the
probability the model gives its answer when element ``i`` of example ``b`` enters scaled by ``scale[b, i]``
(1 = as it is, 0 = removed). Each mechanism package builds one for its model (e.g.
:func:`attn.memn2n.explain.answer_probability`). A map is ``(B, N)``, larger = more important; ``valid (B, N)``
marks the real elements (padding is never ranked).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from attn._checks import (
    broadcast_shapes,
    check,
    check_distribution,
    check_positive_int,
    check_positive_number,
    checked,
    describe,
    shape_of,
)
from attn._random import normal, uniform
from attn.blocks.attention import MultiHeadAttention

__all__ = [
    "attention_entropy",
    "attention_distance",
    "mass_on",
    "previous_token_targets",
    "induction_targets",
    "ablate_heads",
    "occlusion",
    "gradient_x_input",
    "attention_x_gradient",
    "deletion_curve",
    "deletion_area",
    "decision_flip",
    "map_order",
    "random_map",
    "mass_on_truth",
    "chance_mass",
    "excess_mass",
    "rank_of_truth",
    "average_precision",
    "rank_correlation",
    "integrated_gradients",
    "MapScores",
    "score_map",
    "total_variation",
    "js_divergence",
    "permuted_attention",
    "adversarial_attention",
]

Answer = Callable[[torch.Tensor], torch.Tensor]


# --- the checks at each door ------------------------------------------------------------------------------------


def _check_layer(weights: object) -> None:
    check(isinstance(weights, torch.Tensor) and weights.dim() == 4,
          lambda: f"weights must be one layer's attention (B, H, Tq, Tk), got {describe(weights)}")  # fmt: skip


def _check_queries(weights: torch.Tensor, queries: torch.Tensor | None) -> None:
    """``queries``: None (every row counts) or a ``(B, Tq)`` bool mask marking at least one query row."""
    if queries is None:
        return
    B, H, Tq, Tk = weights.shape
    check(isinstance(queries, torch.Tensor) and queries.shape == (B, Tq) and queries.dtype == torch.bool,
          lambda: f"queries must be a (B, Tq) = ({B}, {Tq}) bool mask, got {describe(queries)}")  # fmt: skip
    check(bool(queries.any()), "queries marks no query row: there is nothing to average")


def _summary_args(weights: torch.Tensor, queries: torch.Tensor | None = None) -> None:
    _check_layer(weights)
    _check_queries(weights, queries)


def _mass_on_args(weights: torch.Tensor, targets: torch.Tensor, queries: torch.Tensor | None = None) -> None:
    _check_layer(weights)
    B, H, Tq, Tk = weights.shape
    check(isinstance(targets, torch.Tensor), lambda: "targets must be a bool tensor broadcastable to (B, Tq, Tk), "
          f"got {type(targets).__name__}")  # fmt: skip
    check(broadcast_shapes(shape_of(targets), (B, Tq, Tk)) == (B, Tq, Tk),
          lambda: f"targets must broadcast to (B, Tq, Tk) = ({B}, {Tq}, {Tk}), got {shape_of(targets)}")  # fmt: skip
    check(targets.dtype == torch.bool, lambda: f"targets must be a bool mask, got {targets.dtype}")
    _check_queries(weights, queries)


def _previous_token_targets_args(T: int, *, device: torch.device | str | None = None) -> None:
    check_positive_int("T", T)


def _induction_targets_args(periods: torch.Tensor, T: int) -> None:
    check_positive_int("T", T)
    integer = isinstance(periods, torch.Tensor) and periods.dim() == 1 and not periods.is_floating_point()
    check(integer and not bool((periods < 1).any()),
          lambda: f"periods must be a (B,) integer tensor of periods >= 1, got {describe(periods)}")  # fmt: skip


def _check_head(attentions: Sequence[MultiHeadAttention], layer: int, head: int) -> None:
    """``(layer, head)`` names a head of ``attentions`` (checked pair by pair: ``heads`` may be an iterator)."""
    check(all(isinstance(i, numbers.Integral) and not isinstance(i, bool) for i in (layer, head)),
          lambda: f"heads must hold (layer, head) pairs of ints, got {(layer, head)!r}")  # fmt: skip
    check(0 <= layer < len(attentions),
          lambda: f"layer {layer} is out of range: the model has {len(attentions)} layers")  # fmt: skip
    check(0 <= head < attentions[layer].h,
          lambda: f"head {head} is out of range: layer {layer} has {attentions[layer].h} heads")  # fmt: skip


# --- attention summaries: one layer's weights (B, H, Tq, Tk) -> (H,) ------------------------------------------------


def _query_rows(weights: torch.Tensor, queries: torch.Tensor | None) -> torch.Tensor:
    """The query rows that count, as a float ``(B, 1, Tq)`` (all of them if ``queries`` is None)."""
    B, H, Tq, Tk = weights.shape
    if queries is None:
        return weights.new_ones(B, 1, Tq)
    return queries.to(weights.dtype)[:, None, :]


def _mean_over_queries(per_query: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """``(B, H, Tq)`` values, ``(B, 1, Tq)`` row weights -> ``(H,)`` mean over the counted rows."""
    return (per_query * rows).sum((0, 2)) / rows.sum((0, 2)).clamp(min=1)


@checked(_summary_args)
def attention_entropy(weights: torch.Tensor, queries: torch.Tensor | None = None) -> torch.Tensor:
    """Mean entropy ``-Σ_j a_ij log a_ij`` (nats) of each head's attention rows: 0 = on one token, log T = uniform."""
    entropy = -torch.xlogy(weights, weights).sum(-1)  # (B, H, Tq); 0 log 0 = 0
    return _mean_over_queries(entropy, _query_rows(weights, queries))


@checked(_summary_args)
def attention_distance(weights: torch.Tensor, queries: torch.Tensor | None = None) -> torch.Tensor:
    """Mean distance ``Σ_j a_ij |i - j|`` (in tokens) each head looks away from the query's own position."""
    B, H, Tq, Tk = weights.shape
    i, j = torch.arange(Tq, device=weights.device), torch.arange(Tk, device=weights.device)
    distance = (i[:, None] - j[None, :]).abs().to(weights.dtype)  # (Tq, Tk)
    return _mean_over_queries((weights * distance).sum(-1), _query_rows(weights, queries))


@checked(_mass_on_args)
def mass_on(weights: torch.Tensor, targets: torch.Tensor, queries: torch.Tensor | None = None) -> torch.Tensor:
    """Mean attention each head puts on the keys ``targets`` marks (bool, broadcastable to ``(B, Tq, Tk)``,
    e.g. ``(B, 1, Tk)`` for "the [SEP] token" or ``(Tq, Tk)`` for "the previous token"), over ``queries``."""
    B, H, Tq, Tk = weights.shape
    targets = torch.broadcast_to(targets, (B, Tq, Tk))
    mass = (weights * targets[:, None].to(weights.dtype)).sum(-1)  # (B, H, Tq)
    return _mean_over_queries(mass, _query_rows(weights, queries))


@checked(_previous_token_targets_args)
def previous_token_targets(T: int, *, device: torch.device | str | None = None) -> torch.Tensor:
    """``(T, T)``: query i marks key i - 1 (a previous-token head attends there); on ``device`` (that of the
    weights it is used with)."""
    return torch.ones(int(T) - 1, dtype=torch.bool, device=device).diag(-1)


@checked(_induction_targets_args)
def induction_targets(periods: torch.Tensor, T: int) -> torch.Tensor:
    """For strings that repeat with period ``periods (B,)``: ``(B, T, T)`` marking, for a query i >= p, every key
    i - m p + 1 (m >= 1, i - m p >= 0): the token that followed each earlier occurrence of token i, where an
    induction head looks (Olsson et al. 2022); in the third period that is two keys, one per earlier period."""
    i = torch.arange(int(T), device=periods.device)
    q, k = i[:, None], i[None, :]  # (T, 1) queries, (1, T) keys
    p = periods[:, None, None]  # (B, 1, 1)
    # key k = q - m p + 1 follows the occurrence at k - 1 = q - m p >= 0, one or more whole periods back
    return (k >= 1) & (k <= q - p + 1) & ((q + 1 - k) % p == 0)  # (B, T, T)


@contextmanager
def ablate_heads(attentions: Sequence[MultiHeadAttention], heads: Iterable[tuple[int, int]]) -> Iterator[None]:
    """Inside the block, each ``(layer, head)`` in ``heads`` contributes nothing: its slice of ``W_o`` (the
    columns that read that head's output) is zero, so ``Concat(head_1, ..., head_h) W_O`` drops it. The weights
    are restored on leaving the block, even after an error."""
    saved = []
    try:
        with torch.no_grad():
            for layer, head in heads:
                _check_head(attentions, layer, head)  # as the block is entered: heads may be read only once
                mha = attentions[layer]
                columns = mha.W_o.weight[:, head * mha.d_k : (head + 1) * mha.d_k]  # (d_model, d_k): head's columns
                saved.append((columns, columns.clone()))
                columns.zero_()
        yield
    finally:
        with torch.no_grad():
            for columns, original in reversed(saved):
                columns.copy_(original)


# --- attributions: answer(scale (B, N)) -> (B,), maps (B, N) -----------------------------------------------------
# The functions that call an answer function are not @checked (the caller's code would run unchecked inside): they
# call their door on their first line, and check what the answer function returns.


def _check_valid(valid: torch.Tensor) -> None:
    check(isinstance(valid, torch.Tensor) and valid.dim() == 2 and valid.dtype == torch.bool,
          lambda: f"valid must be a (B, N) bool mask of the real elements, got {describe(valid)}")  # fmt: skip
    check(bool(valid.any(-1).all()), "valid marks no element in some row: every example needs one element to "
          "attribute to")  # fmt: skip


def _check_map(name: str, scores: torch.Tensor, valid: torch.Tensor) -> None:
    check(isinstance(scores, torch.Tensor) and scores.shape == valid.shape and scores.is_floating_point(),
          lambda: f"{name} must be a float (B, N) map like valid {shape_of(valid)}, "
          f"got {describe(scores)}")  # fmt: skip
    bad = ~torch.isfinite(scores) & valid  # (B, N): a NaN would sort first and rank the truth best
    check(not bool(bad.any()), lambda: f"{name} must be finite at the real elements, got {int(bad.sum())} NaN or "
          f"infinite value(s), the first at {_first(bad)}")  # fmt: skip


def _first(where: torch.Tensor) -> str:
    """The first (row, element) of a bool ``(B, N)`` tensor's True entries, for messages."""
    row, element = (int(i) for i in where.nonzero()[0])
    return f"row {row}, element {element}"


def _check_truth(truth: object, valid: torch.Tensor) -> None:
    check(isinstance(truth, torch.Tensor) and truth.shape == valid.shape and truth.dtype == torch.bool,
          lambda: f"truth must be a (B, N) bool mask like valid {shape_of(valid)}, got {describe(truth)}")  # fmt: skip


def _check_order(order: torch.Tensor, valid: torch.Tensor) -> None:
    """``order`` ``(B, N)``: each row a permutation of the element indices ``0 … N-1`` (as :func:`map_order` gives)."""
    B, N = valid.shape
    check(isinstance(order, torch.Tensor) and order.shape == (B, N) and not order.is_floating_point()
          and not order.is_complex(),
          lambda: f"order must be (B, N) = ({B}, {N}) element indices (map_order), got {describe(order)}")  # fmt: skip
    # (B,): the rows that are not a permutation (every row of a bool tensor)
    wrong = (order.sort(-1).values != torch.arange(N, device=order.device)).any(-1) | (order.dtype == torch.bool)
    check(not bool(wrong.any()), lambda: f"order must hold each element index 0 … {N - 1} once per row (map_order); "
          f"row {int(wrong.nonzero()[0])} is {order[int(wrong.nonzero()[0])].tolist()[:12]}")  # fmt: skip


def _ordered_args(order: torch.Tensor, valid: torch.Tensor) -> None:
    _check_valid(valid)
    _check_order(order, valid)


def _answer(answer: Answer, scale: torch.Tensor) -> torch.Tensor:
    """``answer(scale)``, checked to be one probability per example."""
    p = answer(scale)
    check(isinstance(p, torch.Tensor) and p.shape == scale.shape[:1] and p.is_floating_point(),
          lambda: f"answer must return (B,) = ({scale.shape[0]},) probabilities, got {describe(p)}")  # fmt: skip
    check(bool(torch.isfinite(p).all()), lambda: f"answer must return finite values, got "
          f"{p.detach().flatten()[:4].tolist()}")  # fmt: skip
    return p


def occlusion(answer: Answer, valid: torch.Tensor) -> torch.Tensor:
    """Occlusion (Zeiler & Fergus 2014): ``p(all) - p(all but element i)``, one element removed at a time -> ``(B, N)``
    (0 at padding). Positive = the answer needs the element."""
    _check_valid(valid)
    B, N = valid.shape
    keep = valid.float()  # (B, N)
    with torch.no_grad():
        full = _answer(answer, keep)  # (B,)
        drops = []
        for i in range(N):
            without = keep.clone()
            without[:, i] = 0.0
            drops.append(full - _answer(answer, without))  # (B,)
    return torch.stack(drops, dim=1) * valid  # (B, N)


def gradient_x_input(answer: Answer, valid: torch.Tensor) -> torch.Tensor:
    """Gradient × input (Shrikumar et al. 2016; Denil et al. 2014), summed over each element's vector:
    ``Σ_d x_id ∂p/∂x_id = ∂p/∂s_i`` at ``s = 1``, where ``s_i`` scales element i's input vector -> ``(B, N)``."""
    _check_valid(valid)
    scale = valid.float().requires_grad_(True)  # (B, N)
    with torch.enable_grad():
        p = _answer(answer, scale)
        if not p.requires_grad:  # the answer does not depend on the scales at all
            return torch.zeros(valid.shape, device=valid.device)
        (grad,) = torch.autograd.grad(p.sum(), scale, allow_unused=True)
    return torch.zeros(valid.shape, device=valid.device) if grad is None else grad * valid


def _attention_x_gradient_args(weights: torch.Tensor | Sequence[torch.Tensor], probability: torch.Tensor) -> None:
    tensors = [weights] if isinstance(weights, torch.Tensor) else list(weights) if isinstance(weights, Sequence) else []
    check(tensors and all(isinstance(w, torch.Tensor) and w.requires_grad and w.dim() >= 1 for w in tensors),
          lambda: f"weights must be attention tensors on the graph of probability, "
          f"got {describe(weights)}")  # fmt: skip
    B = tensors[0].shape[0]
    check(isinstance(probability, torch.Tensor) and probability.shape == (B,),
          lambda: f"probability must be (B,) = ({B},), one per example, got {describe(probability)}")  # fmt: skip
    check(probability.requires_grad, "probability was computed without a graph (under torch.no_grad?): it has no "
          "gradient")  # fmt: skip


@checked(_attention_x_gradient_args)
def attention_x_gradient(
    weights: torch.Tensor | Sequence[torch.Tensor], probability: torch.Tensor
) -> torch.Tensor | list[torch.Tensor]:
    """Attention × gradient, Chefer, Gur and Wolf (ICCV 2021), eq. 5 before the mean over heads: ``(A ⊙ ∂p/∂A)⁺``.

    ``weights``: attention tensors (one, or a sequence such as a model's layers or decoding steps) that
    ``probability (B,)`` was computed from: they must lie on its graph (as the weights a model's forward returns
    do). Returns one detached tensor per input, each of its shape (average the heads yourself). The paper
    differentiates the class's logit: pass the logit as ``probability`` to follow it."""
    single = isinstance(weights, torch.Tensor)
    tensors = [weights] if isinstance(weights, torch.Tensor) else list(weights)
    grads = torch.autograd.grad(probability.sum(), tensors, retain_graph=True, allow_unused=True)
    # zeros would read as "irrelevant", when the weights were never used: only the graph shows it
    check(any(g is not None for g in grads), "the weights are not on the graph of probability: it was not computed "
          "from them")  # fmt: skip
    relevance = [  # a layer or step the answer did not use (a later decoding step, say) gets zeros
        (w * g).clamp_min(0).detach() if g is not None else torch.zeros_like(w).detach()
        for w, g in zip(tensors, grads, strict=True)
    ]
    return relevance[0] if single else relevance


def _map_order_args(scores: torch.Tensor, valid: torch.Tensor) -> None:
    _check_valid(valid)
    _check_map("scores", scores, valid)


@checked(_map_order_args)
def map_order(scores: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """``(B, N)`` element indices, most important first (padding last); ties keep their order."""
    return scores.masked_fill(~valid, float("-inf")).argsort(dim=-1, descending=True, stable=True)


def _random_map_args(valid: torch.Tensor, generator: torch.Generator) -> None:
    _check_valid(valid)
    check(isinstance(generator, torch.Generator), lambda: "generator must be a torch.Generator (seeded: the map is a "
          f"baseline to repeat), got {type(generator).__name__}")  # fmt: skip


@checked(_random_map_args)
def random_map(valid: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """A map of random scores ``(B, N)`` (uniform in [0, 1) at real elements): the baseline every map must beat."""
    return uniform(valid.shape, generator, valid.device) * valid


def deletion_curve(answer: Answer, order: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Deletion (Samek et al. 2017; Petsiuk et al. 2018): remove the elements one by one in ``order`` ``(B, N)``
    and record the answer's probability -> ``(B, N + 1)``; column k is with the first k removed (padding is
    skipped: once a row's real elements are gone its value stays)."""
    _ordered_args(order, valid)
    B, N = valid.shape
    keep = valid.float()
    rows = torch.arange(B, device=valid.device)
    with torch.no_grad():
        curve = [_answer(answer, keep)]
        for k in range(N):
            keep = keep.clone()
            keep[rows, order[:, k]] = 0.0
            curve.append(_answer(answer, keep))
    return torch.stack(curve, dim=1)  # (B, N + 1)


def _check_full(curve: torch.Tensor) -> None:
    """A deletion curve's values are probabilities, the first (every element kept) above 0: areas and shares left
    are fractions of it."""
    check(bool(((curve >= 0) & (curve <= 1)).all()),
          "curve must hold probabilities in [0, 1] (deletion_curve), got values outside or NaN")  # fmt: skip
    zero = (curve[:, 0] == 0).nonzero().flatten().tolist()
    check(not zero, lambda: f"the answer's probability with every element kept is 0 in rows {zero[:8]}: a fraction "
          "of it is undefined")  # fmt: skip


def _deletion_area_args(curve: torch.Tensor, valid: torch.Tensor) -> None:
    _check_valid(valid)
    B, N = valid.shape
    check(isinstance(curve, torch.Tensor) and curve.shape == (B, N + 1),
          lambda: f"curve must be (B, N + 1) = ({B}, {N + 1}) (deletion_curve), got {describe(curve)}")  # fmt: skip
    _check_full(curve)


@checked(_deletion_area_args)
def deletion_area(curve: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Area under a deletion curve ``(B, N + 1)`` over each row's own ``n`` real elements, as a fraction of the
    full answer's probability: ``mean_{k<n}(p_k + p_{k+1}) / 2 / p_0`` -> ``(B,)``. Smaller = the map found what the
    answer needs sooner (more faithful)."""
    B, N = valid.shape
    n = valid.sum(-1)  # (B,)
    steps = (curve[:, :-1] + curve[:, 1:]) / 2  # (B, N): trapezoids
    counted = torch.arange(N, device=n.device)[None, :] < n[:, None]  # (B, N)
    return (steps * counted).sum(-1) / n / curve[:, 0]


def decision_flip(decides: Answer, order: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """The share of the real elements removed, in ``order`` ``(B, N)``, when the model's decision first changes
    (Serrano & Smith 2019's score) -> ``(B,)``; 1 if it never changes. ``decides(scale (B, N)) -> (B,)`` bool is True
    while the decision is the one made with every real element (so it is True at ``scale = valid``). Removes one
    element per call, as :func:`deletion_curve` does, and stops once every row's decision has changed."""
    _ordered_args(order, valid)
    B, N = valid.shape
    n = valid.sum(-1)  # (B,)
    keep = valid.float()
    first = n + 1  # (B,): the number removed when the decision changed; n + 1 = not yet
    with torch.no_grad():
        for k in range(int(n.max())):
            keep = keep.scatter(1, order[:, k : k + 1], 0.0)
            same = decides(keep)
            check(isinstance(same, torch.Tensor) and same.shape == (B,) and same.dtype == torch.bool,
                  f"decides must return (B,) = ({B},) bools, got {describe(same)}")  # fmt: skip
            first = torch.where(~same & (first > n) & (k < n), k + 1, first)
            if bool((first <= n).all()):
                break
    return (first.float() / n.clamp_min(1)).clamp(max=1.0)


def _mass_on_truth_args(scores: torch.Tensor, truth: torch.Tensor, valid: torch.Tensor) -> None:
    _check_valid(valid)
    _check_map("scores", scores, valid)
    _check_truth(truth, valid)


@checked(_mass_on_truth_args)
def mass_on_truth(scores: torch.Tensor, truth: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Agreement: the share of a map's positive mass on the true elements ``truth (B, N)`` -> ``(B,)`` (0 if the
    map has no positive mass)."""
    positive = scores.clamp_min(0) * valid  # (B, N)
    total = positive.sum(-1)
    return torch.where(total > 0, (positive * truth).sum(-1) / total.clamp_min(torch.finfo(total.dtype).tiny), 0.0)


def _ranking_args(scores: torch.Tensor, truth: torch.Tensor, valid: torch.Tensor) -> None:
    _mass_on_truth_args(scores, truth, valid)
    check(bool((truth & valid).any(-1).all()),
          "truth marks no real element in some row: there is no true element to rank")  # fmt: skip


@checked(_ranking_args)
def rank_of_truth(scores: torch.Tensor, truth: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Agreement: the rank (1 = first) of the highest-scoring true element among the real ones -> ``(B,)``; ties
    count against the map (a flat map ranks the truth last)."""
    best = scores.masked_fill(~(truth & valid), float("-inf")).amax(-1, keepdim=True)  # (B, 1)
    above = ((scores >= best) & valid & ~truth).sum(-1)  # (B,): false elements at or above the best true one
    return above + 1


def _chance_mass_args(truth: torch.Tensor, valid: torch.Tensor) -> None:
    _check_valid(valid)
    _check_truth(truth, valid)


@checked(_chance_mass_args)
def chance_mass(truth: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """The mass on the truth of a flat map (every real element the same positive score): ``|truth| / n`` -> ``(B,)``,
    the agreement of a map that knows nothing; it differs by model (2 of 15 sentences, 1 of 10 words...)."""
    return (truth & valid).sum(-1).float() / valid.sum(-1).float()


@checked(_mass_on_truth_args)
def excess_mass(scores: torch.Tensor, truth: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Chance-corrected mass on the truth, ``(mass - chance) / (1 - chance)`` -> ``(B,)``: 0 for a flat map, 1 for a
    map whose positive mass is all on the truth, negative below chance (a row whose truth is every element: 0)."""
    mass, chance = mass_on_truth(scores, truth, valid), chance_mass(truth, valid)
    room = 1 - chance
    return torch.where(room > 0, (mass - chance) / room.clamp_min(torch.finfo(room.dtype).tiny), 0.0)


@checked(_ranking_args)
def average_precision(scores: torch.Tensor, truth: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Agreement by the map's whole order: rank the real elements by score (largest first; ties count against the map,
    false elements before true ones) and average, over the true elements, the share of true elements among those
    ranked at or above each -> ``(B,)``. 1 = every true element ahead of every false one; a random order gets about
    the truth's share. Only the order counts: a signed map and its positive part score the same, and one bright
    element does not make a map agree."""
    true = truth & valid
    key = scores.masked_fill(~valid, float("-inf"))
    by_truth = true.float().argsort(dim=-1, stable=True)  # false elements first: ties break against the map
    order = by_truth.gather(1, key.gather(1, by_truth).argsort(dim=-1, descending=True, stable=True))  # (B, N)
    hits = true.gather(1, order).float()  # (B, N): 1 where the k-th ranked element is true
    precision = hits.cumsum(-1) / torch.arange(1, hits.shape[1] + 1, device=hits.device)  # (B, N)
    return (precision * hits).sum(-1) / hits.sum(-1)


def _rank_correlation_args(a: torch.Tensor, b: torch.Tensor, valid: torch.Tensor) -> None:
    _check_valid(valid)
    _check_map("a", a, valid)
    _check_map("b", b, valid)


@checked(_rank_correlation_args)
def rank_correlation(a: torch.Tensor, b: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Spearman's rank correlation of two maps over each row's real elements -> ``(B,)`` (ties take the mean rank):
    1 = the same order, about 0 = unrelated. Adebayo et al. (2018) compare a map with the one the same method gives
    for a model with random weights: a map that does not change explains the input, not the model."""

    def ranks(x: torch.Tensor) -> torch.Tensor:  # mean ranks among the real elements (B, N), 0 at padding
        x = x.double().masked_fill(~valid, float("inf"))
        below = (x[:, None, :] < x[:, :, None]).sum(-1).double()  # (B, N): elements below each
        tied = (x[:, None, :] == x[:, :, None]).sum(-1).double()  # (B, N): including itself
        return (below + (tied + 1) / 2) * valid

    n = valid.sum(-1, keepdim=True).double()
    ra, rb = ranks(a), ranks(b)
    ra = (ra - ra.sum(-1, keepdim=True) / n) * valid  # centred over the real elements
    rb = (rb - rb.sum(-1, keepdim=True) / n) * valid
    norm = (ra.square().sum(-1) * rb.square().sum(-1)).sqrt()
    return torch.where(norm > 0, (ra * rb).sum(-1) / norm.clamp_min(1e-300), 0.0).float()


def _integrated_gradients_args(answer: Answer, valid: torch.Tensor, steps: int = 32) -> None:
    _check_valid(valid)
    check_positive_int("steps", steps)


def integrated_gradients(answer: Answer, valid: torch.Tensor, steps: int = 32) -> torch.Tensor:
    """Integrated gradients (Sundararajan et al. 2017, eq. 1, the midpoint rule): the slope ``∂p/∂s_i`` averaged
    along ``s = α v`` for ``α = (k - ½) / steps``, ``v`` the float of ``valid``, times ``v_i`` -> ``(B, N)``. A row sums
    to ``p(v) - p(0)`` up to the rule's error (completeness), where gradient × input sees only the slope at ``v``."""
    _integrated_gradients_args(answer, valid, steps)
    steps = int(steps)
    v = valid.float()  # (B, N)
    total = torch.zeros_like(v)
    with torch.enable_grad():
        for k in range(steps):
            s = ((k + 0.5) / steps * v).requires_grad_(True)  # (B, N): a point on the path
            p = _answer(answer, s)
            if p.requires_grad:
                (grad,) = torch.autograd.grad(p.sum(), s, allow_unused=True)
                total += 0 if grad is None else grad
    return total / steps * v


@dataclass(frozen=True)
class MapScores:
    """One map's scores, each averaged over the examples: agreement with the truth (``mass`` on it, ``excess`` =
    that mass corrected for chance (:func:`excess_mass`), ``ap`` = :func:`average_precision`, the ``rank`` of its best
    element, ``top1`` = how often that rank is 1) and faithfulness (``deletion``: the area under the
    deletion curve, :func:`deletion_area`; ``left``: the share of the answer's probability left once as many
    elements as the truth marks are removed in the map's order; ``curve``: the mean deletion curve ``(N + 1,)``)."""

    mass: float
    rank: float
    top1: float
    deletion: float
    left: float
    curve: torch.Tensor
    excess: float = float("nan")
    ap: float = float("nan")


def score_map(answer: Answer, scores: torch.Tensor, truth: torch.Tensor, valid: torch.Tensor) -> MapScores:
    """Score one map ``(B, N)`` against the truth ``(B, N)`` and by its deletion curve (:class:`MapScores`)."""
    rank = rank_of_truth(scores, truth, valid).float()  # checks the map, the truth and valid
    curve = deletion_curve(answer, map_order(scores, valid), valid)  # (B, N + 1)
    _check_full(curve)  # what the answer function returned
    k = (truth & valid).sum(-1)  # (B,): as many removals as the truth has elements
    left = curve.gather(1, k[:, None]).squeeze(1) / curve[:, 0]
    return MapScores(
        mass=float(mass_on_truth(scores, truth, valid).mean()),
        rank=float(rank.mean()),
        top1=float((rank == 1).float().mean()),
        deletion=float(deletion_area(curve, valid).mean()),
        left=float(left.mean()),
        curve=curve.mean(0),
        excess=float(excess_mass(scores, truth, valid).mean()),
        ap=float(average_precision(scores, truth, valid).mean()),
    )


# --- Jain & Wallace 2019: other attention, the same answer -----------------------------------------------------


def _pair_args(p: torch.Tensor, q: torch.Tensor) -> None:
    """Two float tensors of distributions over the last axis, with shapes that broadcast."""
    for name, x in (("p", p), ("q", q)):
        check(isinstance(x, torch.Tensor) and x.is_floating_point() and x.dim() >= 1 and x.shape[-1] >= 1,
              f"{name} must be a float tensor of distributions (..., K), got {describe(x)}")  # fmt: skip
    check(broadcast_shapes(shape_of(p), shape_of(q)) is not None,
          lambda: f"p and q must have shapes that broadcast, got {shape_of(p)} and {shape_of(q)}")  # fmt: skip
    check_distribution("p", p.detach())
    check_distribution("q", q.detach())


@checked(_pair_args)
def total_variation(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """``TVD(p, q) = ½ Σ |p - q|`` over the last axis (Jain & Wallace 2019, eq. 1): 0 = the same, 1 = disjoint."""
    return 0.5 * (p - q).abs().sum(-1)


@checked(_pair_args)
def js_divergence(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Jensen-Shannon divergence (nats) over the last axis: 0 = the same, ``log 2`` = disjoint supports."""
    tiny = torch.finfo(p.dtype).tiny  # 0 log 0 = 0, with a finite gradient where a weight is exactly 0
    log_m = (0.5 * (p + q)).clamp_min(tiny).log()
    kl_p = (p * (p.clamp_min(tiny).log() - log_m)).sum(-1)
    kl_q = (q * (q.clamp_min(tiny).log() - log_m)).sum(-1)
    return 0.5 * (kl_p + kl_q)


def _check_weights(weights: object, valid: torch.Tensor) -> None:
    check(isinstance(weights, torch.Tensor) and weights.shape == valid.shape and weights.is_floating_point(),
          lambda: f"weights must be (B, N) attention like valid {shape_of(valid)}, "
          f"got {describe(weights)}")  # fmt: skip


def _check_readout(readout: object) -> None:
    check(callable(readout), lambda: "readout must be a callable (B, N) attention -> (B, classes), "
          f"got {type(readout).__name__}")  # fmt: skip


def _readout(readout: Callable[[torch.Tensor], torch.Tensor], weights: torch.Tensor) -> torch.Tensor:
    """``readout(weights)``, checked to be ``(B, classes)`` output probabilities."""
    y = readout(weights)
    check(isinstance(y, torch.Tensor) and y.dim() == 2 and y.shape[0] == weights.shape[0] and y.is_floating_point(),
          lambda: f"readout must return (B, classes) = ({weights.shape[0]}, K) probabilities, "
          f"got {describe(y)}")  # fmt: skip
    check_distribution("readout's output", y.detach())
    return y


def _permuted_attention_args(
    readout: Callable[[torch.Tensor], torch.Tensor],
    weights: torch.Tensor,
    valid: torch.Tensor,
    permutations: int,
    generator: torch.Generator,
) -> None:
    _check_valid(valid)
    _check_weights(weights, valid)
    check_positive_int("permutations", permutations)
    _check_readout(readout)


def permuted_attention(
    readout: Callable[[torch.Tensor], torch.Tensor],
    weights: torch.Tensor,
    valid: torch.Tensor,
    permutations: int,
    generator: torch.Generator,
) -> torch.Tensor:
    """Jain & Wallace's permutation test: shuffle each row's weights among its real elements, ``permutations``
    times, and measure how far the output moves: ``(B, permutations)`` total variation between ``readout(weights)``
    and ``readout(shuffled)``. ``readout`` maps ``(B, N)`` attention to ``(B, classes)`` output probabilities."""
    _permuted_attention_args(readout, weights, valid, permutations, generator)
    weights = weights.detach()
    with torch.no_grad():
        before = _readout(readout, weights)
        moved = []
        for _ in range(permutations):
            noise = uniform(valid.shape, generator, valid.device).masked_fill(~valid, float("inf"))
            shuffled = weights.clone()
            for b in range(len(weights)):  # shuffle row b's real weights among its real elements
                real = valid[b].nonzero().squeeze(-1)
                shuffled[b, real] = weights[b, real[noise[b, real].argsort()]]
            moved.append(total_variation(before, _readout(readout, shuffled)))
    return torch.stack(moved, dim=1)


def _adversarial_attention_args(
    readout: Callable[[torch.Tensor], torch.Tensor],
    weights: torch.Tensor,
    valid: torch.Tensor,
    *,
    tolerance: float = 0.01,
    steps: int = 300,
    lr: float = 0.1,
    penalty: float = 100.0,
    seed: int = 0,
) -> None:
    _check_valid(valid)
    _check_weights(weights, valid)
    check_positive_int("steps", steps)
    check_positive_number("tolerance", tolerance)  # finite: an infinite rate or penalty would return the input as is
    check_positive_number("lr", lr)
    check_positive_number("penalty", penalty)
    check(not isinstance(seed, bool) and isinstance(seed, int), f"seed must be an int, got {seed!r}")
    _check_readout(readout)


def adversarial_attention(
    readout: Callable[[torch.Tensor], torch.Tensor],
    weights: torch.Tensor,
    valid: torch.Tensor,
    *,
    tolerance: float = 0.01,
    steps: int = 300,
    lr: float = 0.1,
    penalty: float = 100.0,
    seed: int = 0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Jain & Wallace's adversarial attention (§4.2): for each row, attention as far from ``weights`` ``(B, N)`` as
    possible (Jensen-Shannon) whose output stays within ``tolerance`` total variation of the original's.

    Gradient ascent on ``JSD(a', a) - penalty · max(0, TVD(y', y) - tolerance)`` over ``a' = softmax(z)`` (Adam,
    ``steps``), started from uniform attention with N(0, 3²) noise on its logits (as Jain & Wallace's code: started
    from the weights, the ascent climbs to their own peak when they are peaked); every step's ``a'`` that keeps the
    output is a candidate and the farthest is kept (the original weights if none). ``readout`` maps ``(B, N)``
    attention to ``(B, classes)`` probabilities. Returns the adversarial attention ``(B, N)`` and its divergence from
    ``weights`` ``(B,)``."""
    _adversarial_attention_args(readout, weights, valid, tolerance=tolerance, steps=steps, lr=lr, penalty=penalty,
                                seed=seed)  # fmt: skip
    weights = weights.detach()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        target = _readout(readout, weights)  # (B, classes)
    z = (3 * normal(weights.shape, g, weights.device)).masked_fill(~valid, float("-inf"))  # (B, N) logits
    z = z.requires_grad_(True)
    optimizer = torch.optim.Adam([z], lr=lr)
    best, best_jsd = weights.clone(), weights.new_zeros(len(weights))
    with torch.enable_grad():
        for _ in range(steps):
            a = torch.softmax(z, dim=-1)  # (B, N)
            tvd = total_variation(readout(a), target)  # (B,)
            jsd = js_divergence(a, weights)  # (B,)
            with torch.no_grad():
                better = (tvd <= tolerance) & (jsd > best_jsd)
                best[better], best_jsd[better] = a[better], jsd[better]
            loss = (-jsd + penalty * (tvd - tolerance).clamp_min(0)).sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return best, best_jsd
