"""Algorithmic sequence tasks with known answers: copy, reverse and sort strings of symbols (for an
encoder-decoder), and tagging tasks with one label per position: count, neighbours, reverse and lookup (for
an encoder that predicts at every position, :func:`tagging_task`).

The copy, reverse and sort tasks come as a :class:`~attn.data.translation.Corpus` of
:class:`~attn.data.translation.Pair` s, the same format as the translation corpus, with the true alignment
(which source position each output symbol comes from), so every model and picture in the book works on both.
Generation is deterministic from a seed.
"""

from __future__ import annotations

import numpy as np
import torch

from attn._checks import check, check_nonnegative_int, check_positive_int, check_size, checked
from attn.data.translation import Corpus, Pair
from attn.data.vocab import IGNORE, Vocab

__all__ = [
    "TASKS",
    "TAGGING_TASKS",
    "sequence_pair",
    "make_sequence_corpus",
    "tagging_task",
    "delayed_copy",
    "lookup_tokens",
    "repeated_sequences",
]

TASKS = ("copy", "reverse", "sort")
TAGGING_TASKS = ("count", "neighbours", "reverse", "lookup")
SYMBOLS = tuple("abcdefghijklmnopqrstuvwxyz")


def _sequence_pair_args(task: str, source: tuple[str, ...]) -> None:
    check(task in TASKS, lambda: f"task must be one of {TASKS}, got {task!r}")


@checked(_sequence_pair_args)
def sequence_pair(task: str, source: tuple[str, ...]) -> Pair:
    """The answer to ``task`` on ``source`` with its alignment (a stable sort: equal symbols keep their order)."""
    n = len(source)
    order = {
        "copy": list(range(n)),
        "reverse": list(range(n))[::-1],
        "sort": sorted(range(n), key=lambda i: source[i]),
    }[task]
    return Pair(tuple(source), tuple(source[i] for i in order), tuple(order))


def _make_sequence_corpus_args(
    task: str,
    n_train: int = 10_000,
    n_test: int = 500,
    num_symbols: int = 10,
    min_len: int = 3,
    max_len: int = 10,
    seed: int = 0,
) -> None:
    check(task in TASKS, lambda: f"task must be one of {TASKS}, got {task!r}")
    for name, value in (("n_train", n_train), ("n_test", n_test), ("min_len", min_len), ("max_len", max_len)):
        check_positive_int(name, value)
    check(check_positive_int("num_symbols", num_symbols) <= len(SYMBOLS),
          f"num_symbols must be in [1, {len(SYMBOLS)}], got {num_symbols}")  # fmt: skip
    check(min_len <= max_len, f"min_len={min_len} must be <= max_len={max_len}")
    check_nonnegative_int("seed", seed)


@checked(_make_sequence_corpus_args)
def make_sequence_corpus(
    task: str,
    n_train: int = 10_000,
    n_test: int = 500,
    num_symbols: int = 10,
    min_len: int = 3,
    max_len: int = 10,
    seed: int = 0,
) -> Corpus:
    """Random strings over the first ``num_symbols`` letters, of length ``min_len``..``max_len``; held-out
    strings never occur in training. Source and target share one vocabulary."""
    rng = np.random.default_rng(seed)
    symbols = SYMBOLS[:num_symbols]

    def draw() -> tuple[str, ...]:
        return tuple(symbols[i] for i in rng.integers(num_symbols, size=int(rng.integers(min_len, max_len + 1))))

    train = [draw() for _ in range(n_train)]
    seen = set(train)
    test: list[tuple[str, ...]] = []
    for _ in range(100 * n_test):
        source = draw()
        if source not in seen:
            seen.add(source)
            test.append(source)
            if len(test) == n_test:
                break
    check(len(test) == n_test, f"found only {len(test)} held-out strings unlike the training ones; ask for fewer")
    vocab = Vocab(symbols)
    return Corpus([sequence_pair(task, s) for s in train], [sequence_pair(task, s) for s in test], vocab, vocab)


def _tagging_task_args(task: str, n: int, length: int = 10, num_symbols: int = 6, seed: int = 0) -> None:
    check(task in TAGGING_TASKS, lambda: f"task must be one of {TAGGING_TASKS}, got {task!r}")
    for name, value in (("n", n), ("length", length), ("num_symbols", num_symbols)):
        check_positive_int(name, value)
    check(task != "neighbours" or length >= 3, f"the neighbours task needs length >= 3, got {length}")
    check_nonnegative_int("seed", seed)
    check_size(f"tagging_task({task!r}, {n}, {length})", n * length)
    check(task != "lookup" or 2 <= length <= num_symbols + 1,
          f"lookup needs 2 <= length <= num_symbols + 1 = {num_symbols + 1}, got {length}")  # fmt: skip


@checked(_tagging_task_args)
def tagging_task(
    task: str, n: int, length: int = 10, num_symbols: int = 6, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` random strings of ``length`` symbols (ids 1..num_symbols; 0 is left for padding) and one label per
    position: ``(n, length)`` inputs and labels.

    - ``"count"``: how many times the symbol at this position occurs in the string (1..length);
    - ``"neighbours"``: ``(x[i-1] - x[i+1]) mod num_symbols``, a function of both neighbours that is not
      symmetric in them (the first and last position are not scored: label -100);
    - ``"reverse"``: the symbol at the mirrored position ``length - 1 - i``;
    - ``"lookup"``: ``length - 1`` cards, each one token for a (key, value) pair with distinct keys
      (id ``1 + key * num_symbols + value``), then a query token for one of the keys (id
      ``1 + num_symbols² + key``); only the last position is scored, with the value on that key's card.
    """
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(1, num_symbols + 1, (n, length), generator=g)  # (n, T)
    if task == "lookup":
        keys = torch.rand(n, num_symbols, generator=g).argsort(-1)[:, : length - 1]  # (n, T-1) distinct keys
        values = torch.randint(num_symbols, (n, length - 1), generator=g)
        asked = torch.randint(length - 1, (n,), generator=g)  # which card the query asks about
        rows = torch.arange(n)
        query = 1 + num_symbols**2 + keys[rows, asked]
        x = torch.cat([1 + keys * num_symbols + values, query[:, None]], dim=1)  # (n, T)
        labels = torch.full_like(x, IGNORE)
        labels[:, -1] = values[rows, asked]
        return x, labels
    if task == "count":
        labels = (x[:, :, None] == x[:, None, :]).sum(-1)  # (n, T): occurrences of x[i]
    elif task == "reverse":
        labels = x.flip(1)
    else:
        labels = torch.full_like(x, IGNORE)
        labels[:, 1:-1] = (x[:, :-2] - x[:, 2:]) % num_symbols
    return x, labels


def _delayed_copy_args(n: int, length: int = 16, delay: int = 4, num_symbols: int = 8, seed: int = 0) -> None:
    for name, value in (("n", n), ("length", length), ("delay", delay), ("num_symbols", num_symbols)):
        check_positive_int(name, value)
    check(delay < length, f"delay must be < length={length}, got {delay}")
    check_nonnegative_int("seed", seed)
    check_size(f"delayed_copy({n}, {length})", n * length)


@checked(_delayed_copy_args)
def delayed_copy(
    n: int, length: int = 16, delay: int = 4, num_symbols: int = 8, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` random strings of ``length`` symbols (ids 1..num_symbols) labelled, at each position i >= ``delay``,
    with the symbol ``delay`` positions back: ``labels[:, i] = inputs[:, i - delay]`` (the first ``delay``
    positions are not scored: -100). A causal model must reach ``delay`` tokens back to score above chance."""
    g = torch.Generator().manual_seed(seed)
    inputs = torch.randint(1, num_symbols + 1, (n, length), generator=g)  # (n, T)
    labels = torch.full_like(inputs, IGNORE)
    labels[:, delay:] = inputs[:, :-delay]
    return inputs, labels


def _lookup_tokens_args(ids: torch.Tensor, num_symbols: int) -> None:
    strangers = [i for i in ids.tolist() if not 1 <= i <= num_symbols**2 + num_symbols]
    check(not strangers, lambda: f"id {strangers[0]} is not a lookup token for num_symbols={num_symbols}")


@checked(_lookup_tokens_args)
def lookup_tokens(ids: torch.Tensor, num_symbols: int) -> list[str]:
    """Readable names for one ``"lookup"`` string: a card ``"k3=7"`` (key 3 holds 7), a query ``"k3?"``."""
    return [
        f"k{(i - 1) // num_symbols}={(i - 1) % num_symbols}" if i <= num_symbols**2 else f"k{i - 1 - num_symbols**2}?"
        for i in ids.tolist()
    ]


def _repeated_sequences_args(
    n: int, length: int = 24, num_symbols: int = 32, periods: tuple[int, int] = (4, 12), seed: int = 0
) -> None:
    for name, value in (("n", n), ("length", length), ("num_symbols", num_symbols)):
        check_positive_int(name, value)
    low, high = periods
    check(1 <= check_positive_int("periods[0]", low) <= check_positive_int("periods[1]", high) < length,
          f"periods must satisfy 1 <= low <= high < length={length}, got {periods}")  # fmt: skip
    check_nonnegative_int("seed", seed)
    check_size(f"{n} strings of {length} tokens", n * length)


@checked(_repeated_sequences_args)
def repeated_sequences(
    n: int, length: int = 24, num_symbols: int = 32, periods: tuple[int, int] = (4, 12), seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` strings of ``length`` tokens, each a random segment (ids 1..num_symbols) repeated over and over, and
    each string's period (the segment's length, drawn from ``periods`` inclusive): ``(n, length)``, ``(n,)``.

    Before position ``period`` the next token is unpredictable; from there on it can be copied from one period
    back. The period differs from string to string, so no fixed positional offset copies it: the model has to
    find the earlier occurrence of the current token and read what followed it, which is what an induction
    head does (Olsson et al. 2022).
    """
    low, high = periods
    g = torch.Generator().manual_seed(seed)
    period = torch.randint(low, high + 1, (n,), generator=g)  # (n,)
    segment = torch.randint(1, num_symbols + 1, (n, high), generator=g)  # (n, high); row i uses period[i] of them
    t = torch.arange(length)
    return segment.gather(1, t[None, :] % period[:, None]), period  # (n, length), (n,)
