"""Train End-To-End Memory Networks on bAbI files.

python -m attn.memn2n train --data DIR --task N     one task: per-epoch progress, test error
python -m attn.memn2n table --data DIR              all 20 tasks next to the paper's PE LS RN column
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import torch
from tqdm.auto import tqdm

from attn.data.babi import read_task, task_file
from attn.memn2n.train import train_memn2n

FAILED = 0.05  # the paper counts a task as failed above 5 % test error
PAPER_COLUMN = "PE_LS_RN"
REFERENCE_NAME = "memn2n_table1_1k_error.csv"


@dataclass
class TaskResult:
    task: int
    name: str
    test_error: float
    valid_error: float
    valid_loss: float
    best_epoch: int
    seconds: float
    seed: int
    runs: int = 1


def pick(runs: list[TaskResult]) -> TaskResult:
    """The run with the lowest validation error (then loss); its seconds become the sum over all runs."""
    best = min(runs, key=lambda r: (r.valid_error, r.valid_loss))
    return replace(best, seconds=sum(r.seconds for r in runs), runs=len(runs))


def run_task(data: Path, task: int, seed: int, epochs: int, d: int, lr: float, progress: bool) -> TaskResult:
    """Train on one task's training file (10 % held out) and score the test file."""
    torch.set_num_threads(1)
    train, test = read_task(data, task, "train"), read_task(data, task, "test")
    run = train_memn2n(train, epochs=epochs, seed=seed, d=d, lr=lr, progress=progress)
    best = run.history.epochs[run.history.best_epoch - 1]
    name = task_file(data, task, "train").stem.split("_", 1)[1].removesuffix("_train")
    return TaskResult(
        task, name, run.error(test), best["valid_error"], best["valid_loss"], run.history.best_epoch,
        run.history.seconds, seed,
    )  # fmt: skip


def read_reference(path: Path | None) -> dict[int, float]:
    """The paper's per-task test error (%) from a CSV with ``task`` and ``PE_LS_RN`` columns, if given."""
    if path is None:
        return {}
    with path.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    if not rows or PAPER_COLUMN not in rows[0] or "task" not in rows[0]:
        raise ValueError(f"{path}: expected columns 'task' and '{PAPER_COLUMN}'")
    return {int(r["task"]): float(r[PAPER_COLUMN]) for r in rows}


def find_reference(data: Path) -> Path | None:
    """``reference/memn2n_table1_1k_error.csv`` beside the bAbI folder (as in ``../shared``), if it is there."""
    for parent in list(data.resolve().parents)[:3]:
        candidate = parent / "reference" / REFERENCE_NAME
        if candidate.is_file():
            return candidate
    return None


def format_table(results: list[TaskResult], paper: dict[int, float], train_seconds: float, wall: float) -> str:
    """A Markdown table: per-task test error beside the paper's, then mean error and failed tasks."""
    lines = [
        "| task | name | test error % | paper PE LS RN % | valid error % | seed | best epoch | train s |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        ref = f"{paper[r.task]:.1f}" if r.task in paper else "–"
        lines.append(
            f"| {r.task} | {r.name} | {100 * r.test_error:.1f} | {ref} | {100 * r.valid_error:.1f} | {r.seed} "
            f"| {r.best_epoch} | {r.seconds:.1f} |"
        )
    ours = [100 * r.test_error for r in results]
    theirs = [paper[r.task] for r in results if r.task in paper]
    failed = sum(e > 100 * FAILED for e in ours)
    summary = f"| mean | | {sum(ours) / len(ours):.1f} | "
    summary += f"{sum(theirs) / len(theirs):.1f} |" if len(theirs) == len(results) else "– |"
    lines.append(summary + " | | | |")
    paper_failed = sum(e > 100 * FAILED for e in theirs)
    lines.append(
        f"\nfailed tasks (error > 5 %): {failed} of {len(results)}"
        + (f" (paper: {paper_failed})" if len(theirs) == len(results) else "")
    )
    runs = results[0].runs if results else 1
    kept = f"{runs} seeds per task, the lowest validation error kept" if runs > 1 else "one run per task"
    lines.append(f"training time: {train_seconds:.0f} s summed over the runs ({kept}); wall time {wall:.0f} s")
    return "\n".join(lines)


def positive_int(text: str) -> int:
    """An argparse type: an int >= 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def positive_float(text: str) -> float:
    """An argparse type: a finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


def parse_tasks(text: str) -> list[int]:
    """``"1-20"``, ``"1,2,16"`` or ``"3"`` -> task numbers in 1..20."""
    tasks: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        try:
            tasks += range(int(lo), int(hi or lo) + 1)
        except ValueError:
            raise argparse.ArgumentTypeError(f"tasks must look like 1-20 or 1,2,16, got {text!r}") from None
    if not tasks or not all(1 <= t <= 20 for t in tasks):
        raise argparse.ArgumentTypeError(f"tasks must lie in 1..20, got {text!r}")
    return tasks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attn.memn2n", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name, help_text in (("train", "train and test one task"), ("table", "train and test every task")):
        sub = commands.add_parser(name, help=help_text)
        sub.add_argument("--data", type=Path, required=True, help="folder of qaN_*_train.txt / _test.txt files")
        sub.add_argument("--seed", type=int, default=0)
        sub.add_argument("--epochs", type=positive_int, default=100, help="epochs after the 20 linear-start epochs")
        sub.add_argument("--dim", type=positive_int, default=20, help="embedding size d (the paper: 20)")
        sub.add_argument("--lr", type=positive_float, default=0.01, help="learning rate after the linear start")
    commands.choices["train"].add_argument("--task", type=int, required=True, choices=range(1, 21), metavar="N")
    table = commands.choices["table"]
    table.add_argument("--tasks", type=parse_tasks, default=list(range(1, 21)), help="e.g. 1-20 (default) or 1,2,16")
    table.add_argument("--jobs", type=positive_int, default=os.cpu_count() or 1, help="runs trained in parallel")
    table.add_argument(
        "--runs", type=positive_int, default=1, help="seeds per task; the one with the lowest validation error is kept"
    )
    table.add_argument(
        "--reference", type=Path, help=f"CSV of the paper's errors (default: ../reference/{REFERENCE_NAME})"
    )
    args = parser.parse_args(argv)
    if not args.data.is_dir():
        parser.error(f"--data {args.data} is not a folder")

    if args.command == "train":
        r = run_task(args.data, args.task, args.seed, args.epochs, args.dim, args.lr, progress=True)
        print(
            f"task {r.task} ({r.name}): test error {100 * r.test_error:.1f} %, valid error "
            f"{100 * r.valid_error:.1f} % (epoch {r.best_epoch}), {r.seconds:.1f} s of training"
        )
        return 0

    reference = args.reference or find_reference(args.data)
    paper = read_reference(reference)
    start = time.perf_counter()
    seeds = range(args.seed, args.seed + args.runs)
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = {
            (t, s): pool.submit(run_task, args.data, t, s, args.epochs, args.dim, args.lr, False)
            for t in args.tasks
            for s in seeds
        }
        done = {key: f.result() for key, f in tqdm(futures.items(), desc="training runs", unit="run")}
    results = [pick([done[t, s] for s in seeds]) for t in args.tasks]
    wall = time.perf_counter() - start
    print(format_table(results, paper, sum(r.seconds for r in results), wall))
    if reference is None:
        print("(no reference CSV found: pass --reference to print the paper's column)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
