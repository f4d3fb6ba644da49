"""Training MemN2N the paper's way (Sukhbaatar et al. 2015, §4.2): SGD, linear start, random noise."""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import torch
from torch import nn

from attn._checks import check, check_choice, check_nonnegative_int, check_positive_int, check_positive_number, checked
from attn.data.babi import (
    MEMORY_SIZE,
    BabiTensors,
    Example,
    build_vocab,
    check_vectorizable,
    split_sentences,
    vectorize,
)
from attn.data.vocab import Vocab, tokenize
from attn.memn2n.measures import evaluate
from attn.memn2n.model import MemN2N, MemN2NConfig, time_index
from attn.training import Trained, fit, seeded

__all__ = ["Answer", "MemN2NRun", "split_valid", "train_memn2n"]


@dataclass
class Answer:
    """The model's answer to one story: the word, its probability, the sentences it kept in memory (oldest
    first), the attention of every hop over them ``(K, M)``, the words it did not know and the supporting
    sentences' indices (if the story came with them)."""

    answer: str
    probability: float
    sentences: list[str]
    hop_attention: torch.Tensor
    unknown: list[str]
    supporting: list[int]


@dataclass
class MemN2NRun(Trained[MemN2N]):
    """What :func:`train_memn2n` returns: the trained model and its history (one checkpoint per epoch: phase, lr,
    train/valid loss and error; ``history.kept``, the epoch whose weights were kept), with the vocabulary it reads
    stories in."""

    vocab: Vocab

    @property
    def best(self) -> dict[str, Any]:
        """The record of the epoch whose weights were kept (:func:`train_memn2n` always keeps one)."""
        return cast(dict[str, Any], self.history.kept)

    @property
    def valid_error(self) -> float:
        """The validation error of the epoch whose weights were kept (to choose between runs, §4.2)."""
        return self.best["valid_error"]

    def tensors(self, exs: Sequence[Example]) -> BabiTensors:
        """``exs`` vectorised with this run's vocabulary and memory size."""
        return vectorize(exs, self.vocab, self.model.config.memory_size)

    def error(self, exs: Sequence[Example]) -> float:
        """Fraction of ``exs`` answered wrongly."""
        return evaluate(self.model, self.tensors(exs))["error"]

    def answer(self, sentences: Sequence[str] | str, question: str) -> Answer:
        """Answer ``question`` about the story ``sentences`` (plain text, oldest first). A story given as one
        string is split into sentences at line breaks and after ``.``, ``!`` or ``?`` (:func:`split_sentences`)."""
        sentences = split_sentences(sentences) if isinstance(sentences, str) else sentences
        sentences = list(sentences) if isinstance(sentences, Iterable) else sentences
        check(isinstance(sentences, list) and all(isinstance(s, str) for s in sentences),
              lambda: f"sentences must be a list of strings (or one string), got {sentences!r:.80}")  # fmt: skip
        check(isinstance(question, str), lambda: f"question must be a string, got {type(question).__name__}")
        story = tuple(tokenize(s) for s in sentences if tokenize(s))
        query = tokenize(question)
        check(story, "the story has no words: give at least one sentence")
        check(query, lambda: f"the question {question!r} has no words")
        return self.read(Example(story, tuple(range(1, len(story) + 1)), query, ("?",), ()))

    def read(self, example: Example) -> Answer:
        """The model's answer to one example, with each hop's attention over the sentences it kept."""
        known = set(self.vocab.tokens)
        unknown = sorted({w for s in (*example.story, example.question) for w in s if w not in known})
        batch = vectorize([example], self.vocab, self.model.config.memory_size)
        with torch.no_grad():
            out = self.model(batch.story, batch.query, batch.lengths)
        probs = torch.softmax(out.logits[0], -1)
        best = int(probs.argmax())
        kept = [" ".join(s) for s in example.story[len(example.story) - int(batch.lengths[0]) :]]
        supporting = [int(i) for i in batch.supporting[0] if i >= 0]
        return Answer(self.vocab.tokens[best], float(probs[best]), kept, out.hop_attention[0], unknown, supporting)


def _split_valid_args(exs: Sequence[Example], fraction: float = 0.1, seed: int = 0) -> None:
    check(0 < fraction < 1, f"fraction must be in (0, 1), got {fraction}")


@checked(_split_valid_args)
def split_valid(exs: Sequence[Example], fraction: float = 0.1, seed: int = 0) -> tuple[list[Example], list[Example]]:
    """Hold out a random ``fraction`` of ``exs`` for validation (the paper holds out 10 %)."""
    order = np.random.default_rng(seed).permutation(len(exs))
    n_valid = max(1, round(len(exs) * fraction))
    return [exs[i] for i in order[n_valid:]], [exs[i] for i in order[:n_valid]]


def _train_memn2n_args(
    train: Sequence[Example],
    valid: Sequence[Example] | None = None,
    *,
    epochs: int = 100,
    linear_start: int = 20,
    batch_size: int = 32,
    lr: float = 0.01,
    linear_lr: float = 0.005,
    decay_every: int = 25,
    max_grad_norm: float = 40.0,
    noise: float = 0.1,
    seed: int = 0,
    vocab: Vocab | None = None,
    progress: bool = True,
    linear_until: str = "epochs",
    keep: str = "best",
    **config: Any,
) -> None:
    """Counts are ints (``linear_start`` >= 0), rates positive numbers (the rule of every trainer), ``noise`` in
    [0, 1), and there are questions to train on and to validate on."""
    check_choice("linear_until", linear_until, ("epochs", "valid_loss"))
    check_choice("keep", keep, ("best", "last"))
    check_positive_int("epochs", epochs)
    check_nonnegative_int("linear_start", linear_start)
    check_positive_int("batch_size", batch_size)
    check_positive_int("decay_every", decay_every)
    check_positive_number("lr", lr)
    check_positive_number("linear_lr", linear_lr)
    check_positive_number("max_grad_norm", max_grad_norm)
    check(not isinstance(noise, bool) and isinstance(noise, numbers.Real) and 0 <= noise < 1,
          f"noise must be a number in [0, 1), got {noise!r}")  # fmt: skip
    train, valid = split_valid(train, seed=0) if valid is None else (train, valid)
    check(len(train) > 0 and len(valid) > 0,
          f"need training and validation questions, got {len(train)} and {len(valid)}")  # fmt: skip
    for questions in (train, valid):  # vectorize runs unchecked inside: its size guard runs here
        check_vectorizable(questions, config.get("memory_size", MEMORY_SIZE))


@checked(_train_memn2n_args)
def train_memn2n(
    train: Sequence[Example],
    valid: Sequence[Example] | None = None,
    *,
    epochs: int = 100,
    linear_start: int = 20,
    batch_size: int = 32,
    lr: float = 0.01,
    linear_lr: float = 0.005,
    decay_every: int = 25,
    max_grad_norm: float = 40.0,
    noise: float = 0.1,
    seed: int = 0,
    vocab: Vocab | None = None,
    progress: bool = True,
    linear_until: str = "epochs",
    keep: str = "best",
    **config: Any,
) -> MemN2NRun:
    """Train a :class:`MemN2N` with the paper's recipe (§4.2), seeded; keep the best validation epoch.

    Without ``valid``, 10 % of ``train`` is held out (the same questions for every ``seed``, so that runs differ
    only in their initial weights, batch order and noise). ``linear_start`` epochs first run without the softmax
    at ``linear_lr`` (as in the authors' code: 20 epochs at 0.005), then ``epochs`` epochs with it at ``lr``,
    halved every ``decay_every`` epochs. SGD, batches of 32, gradient norm clipped at 40, ``noise`` = the
    fraction of random empty memories for the temporal encoding. ``config`` sets :class:`MemN2NConfig` fields;
    with ``attend_empty=True`` the memory has as many slots as the longest story (at most 50), as in the authors'
    code.
    ``linear_until="valid_loss"`` ends the linear start early, at the first epoch whose validation loss does not
    fall (the paper's text; ``"epochs"``: all ``linear_start`` epochs, as in the authors' code). ``keep="last"``
    keeps the final weights (the authors' code) instead of the best validation epoch's.
    """
    if valid is None:
        train, valid = split_valid(train, seed=0)
    vocab = vocab or build_vocab(train)
    longest = max(len(ex.story) for ex in (*train, *valid))
    default_size = min(MEMORY_SIZE, longest) if config.get("attend_empty") else MEMORY_SIZE  # the authors' sz
    memory_size = config.pop("memory_size", default_size)
    with seeded(seed):
        model = MemN2N(MemN2NConfig(len(vocab), memory_size=memory_size, **config))
    data, held_out = vectorize(train, vocab, memory_size), vectorize(valid, vocab, memory_size)
    softmax_phase = [("softmax", lr * 0.5 ** (e // decay_every)) for e in range(epochs)]
    plan = [("linear", linear_lr)] * linear_start + softmax_phase  # each epoch's phase and rate
    epoch = _Epochs(data, plan, batch_size, noise, seed)

    def checkpoint(model: MemN2N, step: int) -> dict[str, Any]:
        record = epoch.record(evaluate(model, held_out, linear=epoch.linear))
        if epoch.linear and linear_until == "valid_loss" and record["valid_loss"] >= epoch.previous_valid_loss:
            plan[record["epoch"] :] = softmax_phase  # the validation loss stopped falling: softmax back in
        epoch.previous_valid_loss = record["valid_loss"]
        return record

    def kept(record: dict[str, Any]) -> tuple[float, ...] | None:  # the softmax phase's best epoch, or its last
        if record["phase"] == "linear":
            return None
        return (0.0,) if keep == "last" else (record["valid_error"], record["valid_loss"])

    history = fit(model, epoch.loss, len(plan) * epoch.batches, lr=1.0, clip=max_grad_norm, optimizer=torch.optim.SGD,
                  schedule=epoch.rate, checkpoint=checkpoint, every=epoch.batches, keep=kept, progress=progress,
                  stop_when=lambda record: record["epoch"] == len(plan))  # fmt: skip
    return MemN2NRun(model, history, vocab)


class _Epochs:
    """The paper's epochs as steps of :func:`attn.training.fit`: each epoch a new order of the questions, batches
    of ``batch_size``, the loss summed over a batch (as in the authors' code), the rate and phase of ``plan``."""

    def __init__(self, data: BabiTensors, plan: list[tuple[str, float]], batch_size: int, noise: float, seed: int):
        self.data, self.plan, self.noise = data, plan, noise
        self.batches = max(1, len(data) // batch_size)
        self.rng, self.noise_generator = np.random.default_rng(seed), torch.Generator().manual_seed(seed)
        self.order: list[np.ndarray] = []
        self.number, self.loss_sum, self.wrong = 0, 0.0, 0
        self.previous_valid_loss = float("inf")

    @property
    def linear(self) -> bool:
        return self.plan[self.number - 1][0] == "linear"

    def rate(self, step: int) -> float:
        return self.plan[(step - 1) // self.batches][1]

    def loss(self, model: MemN2N, step: int) -> torch.Tensor:
        number, i = divmod(step - 1, self.batches)
        if i == 0:  # a new epoch: the questions in a new order
            self.number, self.loss_sum, self.wrong = number + 1, 0.0, 0
            self.order = np.array_split(self.rng.permutation(len(self.data)), self.batches)
        b = self.data[torch.from_numpy(self.order[i])]
        time_rows = time_index(b.lengths, b.story.shape[1], self.noise, self.noise_generator) if self.noise else None
        logits = model(b.story, b.query, b.lengths, time=time_rows, linear=self.linear).logits
        loss = nn.functional.cross_entropy(logits, b.answer, reduction="sum")
        self.loss_sum += loss.item()
        self.wrong += int((logits.argmax(-1) != b.answer).sum())
        return loss

    def record(self, scores: dict[str, Any]) -> dict[str, Any]:
        phase, rate = self.plan[self.number - 1]
        n, valid = len(self.data), {"valid_loss": scores["loss"], "valid_error": scores["error"]}
        return {"epoch": self.number, "phase": phase, "lr": rate, "train_loss": self.loss_sum / n,
                "train_error": self.wrong / n, **valid}  # fmt: skip
