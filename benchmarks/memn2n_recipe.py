"""Memory networks: what each difference from the authors' recipe does on the tasks that fail most.

Trains the book's MemN2N (``attn.memn2n.train_memn2n``) on real bAbI 1k tasks (default 3, 6, 10, 11, 15) from
several seeds, once as the book trains it and once with each change below, and prints the mean test error
per task over the seeds (and the mean over tasks). The changes are the places where the paper's text or the
authors' MATLAB code (facebook/MemNN, MemN2N-babi-matlab) differ from the book's recipe:

- ``lr 0.005``: the softmax phase starts at 0.005, not 0.01 (the authors' ``config_babi.m`` lowers both);
- ``LS until valid loss``: the linear start ends when the validation loss stops falling (the paper's text),
  not after a fixed 20 epochs (the authors' code);
- ``last epoch``: keep the final weights (the authors' code), not the best validation epoch's;
- ``PE padded width``: position encoding over the padded sentence width J (the authors' code), not each
  sentence's own length (the paper's text);
- ``noise as authors``: each story's sentences get a random sorted subset of L + n time slots, n uniform in
  0..ceil(L/10) (the authors' code), not an independent 10 % chance of a blank after each sentence;
- ``empty slots attended``: the memory slots past a story's end take part in the softmax as zero vectors
  (score 0, read 0), as in the authors' code, instead of being masked out;
- ``layer-wise tying``: not a difference but the paper's other weight tying (§2.2, Table 1's LW column): one
  A and one C for every hop and ``u^{k+1} = H u^k + o^k`` (``MemN2NConfig.tying="layerwise"``).

``--chapter-schedule`` trains with chapter 3's compressed schedule (20 linear and 40 softmax epochs, halving every
10) instead of the paper's (20 and 100, halving every 25).

    .venv/bin/python benchmarks/memn2n_recipe.py [--tasks 3,6,10,11,15] [--seeds 4] [--jobs 2] [--data DIR]
                                                 [--variants NAME,NAME] [--chapter-schedule]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import torch
from common import ROOT

import attn.memn2n.model as memn2n_model
import attn.memn2n.train as memn2n_train
from attn.data.babi import read_task
from attn.memn2n import split_valid, train_memn2n
from attn.memn2n.__main__ import parse_tasks

DATA = ROOT.parent / "shared" / "babi" / "en"
VARIANTS = {
    "as in the book": {},
    "lr 0.005": {"lr": 0.005},
    "LS until valid loss": {"linear_until": "valid_loss"},
    "last epoch": {"keep": "last"},
    "PE padded width": {"patch": "padded_width"},
    "noise as authors": {"patch": "authors_noise"},
    "empty slots attended": {"attend_empty": True},
    "empty slots attended + LS until valid loss": {"attend_empty": True, "linear_until": "valid_loss"},
    "layer-wise tying": {"tying": "layerwise"},
}


def padded_width_factors(lengths: torch.Tensor, J: int, d: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``_position_factors`` with every sentence as long as the padded width J."""
    return memn2n_model.ORIGINAL_FACTORS(torch.full_like(lengths, J), J, d)


def authors_noise(lengths: torch.Tensor, M: int, noise: float = 0.0, generator: torch.Generator | None = None):
    """Time rows as the authors' code draws them: a sorted random subset of L + n slots, n in 0..ceil(noise L)."""
    t = memn2n_model.time_index(lengths, M)
    if noise <= 0:
        return t
    for b, L in enumerate(lengths.tolist()):
        n = int(torch.randint(0, math.ceil(L * noise) + 1, (1,), generator=generator))
        slots = torch.randperm(L + n, generator=generator)[:L].sort(descending=True).values  # oldest: largest
        t[b, :L] = slots
    return t


CHAPTER_SCHEDULE = {"linear_start": 20, "epochs": 40, "decay_every": 10}


def run(
    data: Path, task: int, seed: int, variant: str, schedule: dict | None = None
) -> tuple[str, int, int, float, float]:
    torch.set_num_threads(1)
    options = dict(VARIANTS[variant]) | (schedule or {})
    patch = options.pop("patch", None)
    memn2n_model.ORIGINAL_FACTORS = getattr(memn2n_model, "ORIGINAL_FACTORS", memn2n_model._position_factors)
    memn2n_model._position_factors = padded_width_factors if patch == "padded_width" else memn2n_model.ORIGINAL_FACTORS
    memn2n_train.time_index = authors_noise if patch == "authors_noise" else memn2n_model.time_index
    train, valid = split_valid(read_task(data, task, "train"), seed=0)
    result = train_memn2n(train, valid, seed=seed, progress=False, **options)
    return variant, task, seed, result.error(read_task(data, task, "test")), result.history.seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="folder of the bAbI 1k files")
    parser.add_argument("--tasks", type=parse_tasks, default=[3, 6, 10, 11, 15])
    parser.add_argument("--seeds", type=int, default=4, help="seeds 0..N-1 per task and variant")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated names")
    parser.add_argument("--chapter-schedule", action="store_true", help="chapter 3's 20 + 40 epochs")
    args = parser.parse_args()
    schedule = CHAPTER_SCHEDULE if args.chapter_schedule else None
    if not args.data.is_dir():
        sys.exit(f"no bAbI files at {args.data}: pass --data (tasks_1-20_v1-2/en)")
    variants = args.variants.split(",")
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        jobs = [
            pool.submit(run, args.data, t, s, v, schedule)
            for v in variants
            for t in args.tasks
            for s in range(args.seeds)
        ]
        results = [job.result() for job in jobs]
    errors = {(v, t): [] for v in variants for t in args.tasks}
    seconds = 0.0
    for v, t, _, error, s in results:
        errors[v, t].append(100 * error)
        seconds += s
    which = "chapter 3's schedule" if schedule else "the paper's schedule"
    print(f"mean test error % over seeds 0-{args.seeds - 1} (min-max), real bAbI 1k, one model per task, {which}\n")
    print("| change | " + " | ".join(f"task {t}" for t in args.tasks) + " | mean |")
    print("| --- |" + " ---: |" * (len(args.tasks) + 1))
    for v in variants:
        cells = [
            f"{sum(errors[v, t]) / len(errors[v, t]):.1f} ({min(errors[v, t]):.0f}-{max(errors[v, t]):.0f})"
            for t in args.tasks
        ]
        mean = sum(sum(errors[v, t]) / len(errors[v, t]) for t in args.tasks) / len(args.tasks)
        print(f"| {v} | " + " | ".join(cells) + f" | {mean:.1f} |")
    print(f"\n{len(results)} runs, {seconds:.0f} s of training, {time.perf_counter() - start:.0f} s wall")


if __name__ == "__main__":
    main()
