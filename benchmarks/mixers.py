"""Chapters 5 and 6's learning-rate searches: every arm gets the same grid, chosen on held-out data.

1. The four mixers of ``attn.transformer.mixers`` (attention, a fixed linear mix, a full-reach convolution, a
   bidirectional GRU) on two tasks: ``lookup`` (the answer's position depends on the content) and
   ``neighbours`` (the answer depends on the positions i - 1 and i + 1). Each arm trains 600 Adam steps
   (batch 64) at each learning rate of the grid from the search seed (not one of the chapter's seeds 0-2) and
   is scored on 1,000 validation strings (drawn with seed 2: neither the training nor the test strings); the
   rate with the highest validation accuracy is the one the chapter uses.
2. The √d_k experiment (d_k = 256, 300 steps, the lookup task): the scaled mixer, the unscaled one, and the
   unscaled one started as the scaled one's function (``match_scaled_start``), same grid (from 0.0001), same rule.

3. Chapter 6's one-head and four-head encoders (``LanguageModel``, one layer, d_model 64, learned positions) on
   ``neighbours`` (symbols 1..8): each trains until 98 % of 500 validation strings (seed 2) are right, checked
   every 100 steps, for at most 3,000 steps, at 0.001, 0.003 and 0.01 from two search seeds (10 and 11, not
   the chapter's 0-2); the rate with the fewest steps to the goal, averaged over the two seeds (a run that
   never gets there counts as 3,100), is chosen.

Prints one table per part: validation accuracy (or steps to the goal) per rate, the chosen rate and the
parameter count.

    .venv/bin/python benchmarks/mixers.py [--quick] [--jobs N] [--part mixers|scale|heads]
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from functools import partial

import torch

from attn.data.sequences import tagging_task
from attn.training import seeded
from attn.transformer import tagging_accuracy
from attn.transformer.mixers import MIXERS, MixerTagger
from attn.transformer.train import train_mixer_tagger

GRID = (1e-3, 3e-3, 1e-2, 3e-2)
SCALE_GRID = (1e-4, 3e-4, *GRID)  # the √d_k arms: the third chose the old grid's lowest rate
HEADS_GRID = (1e-3, 3e-3, 1e-2)  # chapter 6: each run may take 3,000 steps
SEARCH_SEED = 10
HEADS_SEEDS = (10, 11)  # chapter 6: steps to a goal vary more from seed to seed than an accuracy does
T = 10
TASKS = {"lookup": 10, "neighbours": 8}  # task -> symbols
SCALE_ARMS = {
    "scaled": dict(scaled=True),
    "unscaled": dict(scaled=False),
    "unscaled, scaled start": dict(scaled=False, match_scaled_start=True),
}


def sizes(task: str) -> dict[str, int]:
    """The tagger's vocabulary and labels for ``task``."""
    k = TASKS[task]
    return dict(vocab_size=k**2 + k + 1 if task == "lookup" else k + 1, num_labels=k)


def data(task: str, n_train: int = 20_000) -> tuple:
    """Training, validation and test strings of ``task`` (seeds 0, 2 and 1), as chapter 5 draws them."""
    k = TASKS[task]
    return (tagging_task(task, n_train, T, k, seed=0), tagging_task(task, 1_000, T, k, seed=2),
            tagging_task(task, 2_000, T, k, seed=1))  # fmt: skip


def validation_accuracy(kind: str, task: str, lr: float, steps: int, seed: int = SEARCH_SEED, **options) -> float:
    """One run of the search: the validation accuracy after ``steps`` steps at rate ``lr``."""
    torch.set_num_threads(1)
    train, valid, _ = data(task)
    model, _ = train_mixer_tagger(kind, train, **sizes(task), steps=steps, lr=lr, seed=seed, **options)
    return tagging_accuracy(model, *valid)


def parameters(kind: str, task: str, **options) -> int:
    """The mixer tagger's parameter count."""
    with seeded(0):
        return sum(p.numel() for p in MixerTagger(kind, **sizes(task), max_len=T, **options).parameters())


def table(rows: dict[str, list[float]], params: dict[str, int], grid: tuple[float, ...] = GRID) -> dict[str, float]:
    """Print the search table; return the chosen rate per row."""
    print("| arm | " + " | ".join(f"lr {lr:g}" for lr in grid) + " | chosen | parameters |")
    print("|---" * (len(grid) + 3) + "|")
    chosen = {}
    for name, accuracies in rows.items():
        best = max(range(len(grid)), key=lambda i: accuracies[i])
        chosen[name] = grid[best]
        cells = " | ".join(f"{a:.1%}" for a in accuracies)
        print(f"| {name} | {cells} | {grid[best]:g} | {params[name]:,} |")
    return chosen


def over_runs(runs: list, jobs: int | None) -> list[float]:
    """``[run() for run in runs]``, ``jobs`` at a time in forked processes (one thread each)."""
    if jobs == 1:
        return [run() for run in runs]
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        futures = [pool.submit(run) for run in runs]
        return [f.result() for f in futures]


def steps_to_goal(heads: int, lr: float, max_steps: int, seed: int = SEARCH_SEED) -> tuple[int, float]:
    """Chapter 6's run: (the step at which validation accuracy first reached 98 %, or max_steps + 100 if never;
    the last validation accuracy)."""
    from attn.transformer import LanguageModel, LanguageModelConfig, train_tagger

    torch.set_num_threads(1)
    symbols = 8
    train = tagging_task("neighbours", 20_000, T, symbols, seed=0)
    valid = tagging_task("neighbours", 500, T, symbols, seed=2)
    config = LanguageModelConfig(symbols + 1, d_model=64, num_heads=heads, num_layers=1, d_ff=128, dropout=0.0,
                                 max_len=T, positions="learned", causal=False)  # fmt: skip
    _, history = train_tagger(partial(LanguageModel, config), *train, max_steps, lr=lr, seed=seed, every=100,
                              valid=valid, goal=0.98, progress=False)  # fmt: skip
    last = history.checkpoints[-1]
    return (last["step"] if last["accuracy"] >= 0.98 else max_steps + 100), last["accuracy"]


def heads_table(max_steps: int, jobs: int | None) -> None:
    """Print chapter 6's search: steps to the goal per head count and rate, mean over the search seeds."""
    arms, n = (1, 4), len(HEADS_SEEDS)
    runs = [partial(steps_to_goal, h, lr, max_steps, seed) for h in arms for lr in HEADS_GRID for seed in HEADS_SEEDS]
    got = over_runs(runs, jobs)
    print(f"\nneighbours, LanguageModel with 1 or 4 heads: steps to 98 % validation accuracy (at most {max_steps};")
    print(f"seeds {', '.join(map(str, HEADS_SEEDS))}; a run that never gets there counts as {max_steps + 100:,})")
    print("| heads | " + " | ".join(f"lr {lr:g}" for lr in HEADS_GRID) + " | chosen |")
    print("|---" * (len(HEADS_GRID) + 2) + "|")
    for i, h in enumerate(arms):
        row = [got[(i * len(HEADS_GRID) + j) * n : (i * len(HEADS_GRID) + j + 1) * n] for j in range(len(HEADS_GRID))]
        mean = [sum(steps for steps, _ in seeds) / n for seeds in row]
        best = min(range(len(HEADS_GRID)), key=lambda j: (mean[j], -min(a for _, a in row[j])))
        cells = " | ".join(
            f"{m:,.0f} (" + ", ".join(f"{s:,}" if s <= max_steps else f"not: {a:.1%}" for s, a in seeds) + ")"
            for m, seeds in zip(mean, row, strict=True)
        )
        print(f"| {h} | {cells} | {HEADS_GRID[best]:g} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few steps: checks that the script runs")
    parser.add_argument("--jobs", type=int, default=None, help="runs at a time (default: one per core)")
    parser.add_argument("--part", choices=("mixers", "scale", "heads"), action="append", help="default: all")
    parser.add_argument("--task", choices=tuple(TASKS), action="append", help="the mixers' tasks (default: both)")
    args = parser.parse_args()
    parts = args.part or ["mixers", "scale", "heads"]
    torch.set_num_threads(1)
    steps, scale_steps = (20, 10) if args.quick else (600, 300)
    start = time.perf_counter()
    for task in (args.task or TASKS) if "mixers" in parts else ():
        runs = [partial(validation_accuracy, kind, task, lr, steps) for kind in MIXERS for lr in GRID]
        got = over_runs(runs, jobs=args.jobs)
        rows = {kind: got[i * len(GRID) : (i + 1) * len(GRID)] for i, kind in enumerate(MIXERS)}
        print(f"\n{task}: validation accuracy after {steps} steps (search seed {SEARCH_SEED}, 1,000 strings)")
        table(rows, {kind: parameters(kind, task) for kind in MIXERS})
    if "heads" in parts:
        heads_table(100 if args.quick else 3000, args.jobs)
    if "scale" not in parts:
        print(f"\ntime: {time.perf_counter() - start:.0f} s")
        return
    runs = [
        partial(validation_accuracy, "attention", "lookup", lr, scale_steps, d_k=256, **options)
        for options in SCALE_ARMS.values()
        for lr in SCALE_GRID
    ]
    got = over_runs(runs, jobs=args.jobs)
    n = len(SCALE_GRID)
    rows = {name: got[i * n : (i + 1) * n] for i, name in enumerate(SCALE_ARMS)}
    print(f"\nlookup, attention with d_k = 256: validation accuracy after {scale_steps} steps")
    table(rows, {name: parameters("attention", "lookup", d_k=256, **o) for name, o in SCALE_ARMS.items()}, SCALE_GRID)
    print(f"\ntime: {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
