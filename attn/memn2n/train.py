"""Training MemN2N the paper's way (Sukhbaatar et al. 2015, §4.2): SGD, linear start, random noise."""

from __future__ import annotations

import copy
import numbers
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from attn._checks import check, check_choice, check_nonnegative_int, check_positive_int, check_positive_number, checked
from attn.data.babi import MEMORY_SIZE, BabiTensors, Example, build_vocab, split_sentences, vectorize
from attn.data.vocab import Vocab, tokenize
from attn.memn2n.measures import evaluate
from attn.memn2n.model import MemN2N, MemN2NConfig, time_index
from attn.training import progress_bar, seeded

__all__ = ["Answer", "MemN2NHistory", "MemN2NRun", "split_valid", "train_memn2n"]


@dataclass
class MemN2NHistory:
    """One dict per epoch (phase, lr, train/valid loss and error), the epoch whose weights were kept (lowest
    validation error, then loss, in the softmax phase) and the seconds spent training."""

    epochs: list[dict[str, Any]] = field(default_factory=list)
    best_epoch: int = 0
    seconds: float = 0.0


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
class MemN2NRun:
    """A trained model with its vocabulary and training history."""

    model: MemN2N
    vocab: Vocab
    history: MemN2NHistory

    @property
    def valid_error(self) -> float:
        """The validation error of the epoch whose weights were kept (to choose between runs, §4.2)."""
        return self.history.epochs[self.history.best_epoch - 1]["valid_error"]

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
    model_config = MemN2NConfig(len(vocab), memory_size=memory_size, **config)
    with seeded(seed):
        model = MemN2N(model_config)
    data, held_out = vectorize(train, vocab, memory_size), vectorize(valid, vocab, memory_size)
    rng = np.random.default_rng(seed)
    noise_generator = torch.Generator().manual_seed(seed)
    history = MemN2NHistory()
    best: tuple[float, float] | None = None
    best_state = None
    softmax_schedule = [("softmax", lr * 0.5 ** (e // decay_every)) for e in range(epochs)]
    schedule = [("linear", linear_lr)] * linear_start + softmax_schedule
    bar = progress_bar(total=len(schedule), show=progress, desc="epochs", leave=False)
    epoch = 0
    while epoch < len(schedule):
        phase, epoch_lr = schedule[epoch]
        epoch += 1
        start = time.perf_counter()
        linear = phase == "linear"
        optimizer = torch.optim.SGD(model.parameters(), lr=epoch_lr)
        model.train()
        loss_sum, wrong = 0.0, 0
        for index in np.array_split(rng.permutation(len(data)), max(1, len(data) // batch_size)):
            b = data[torch.from_numpy(index)]
            time_rows = time_index(b.lengths, b.story.shape[1], noise, noise_generator) if noise else None
            logits = model(b.story, b.query, b.lengths, time=time_rows, linear=linear).logits
            loss = nn.functional.cross_entropy(logits, b.answer, reduction="sum")
            optimizer.zero_grad(set_to_none=True)
            loss.backward()  # summed over the batch, as in the authors' code
            nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
            optimizer.step()
            loss_sum += loss.item()
            wrong += int((logits.argmax(-1) != b.answer).sum())
        history.seconds += time.perf_counter() - start
        scores = evaluate(model, held_out, linear=linear)
        record = {
            "epoch": epoch,
            "phase": phase,
            "lr": epoch_lr,
            "train_loss": loss_sum / len(data),
            "train_error": wrong / len(data),
            "valid_loss": scores["loss"],
            "valid_error": scores["error"],
        }
        history.epochs.append(record)
        bar.update()
        bar.set_postfix(valid_error=f"{scores['error']:.3f}")
        key = (scores["error"], scores["loss"])
        if not linear and (best is None or key <= best or keep == "last"):
            best, best_state, history.best_epoch = key, copy.deepcopy(model.state_dict()), epoch
        previous = history.epochs[-2]["valid_loss"] if len(history.epochs) > 1 else float("inf")
        if linear and linear_until == "valid_loss" and scores["loss"] >= previous:
            schedule = schedule[:epoch] + softmax_schedule  # the validation loss stopped falling: softmax back in
    bar.close()
    if best_state is not None:
        model.load_state_dict(best_state)
    model.eval()
    return MemN2NRun(model, vocab, history)
