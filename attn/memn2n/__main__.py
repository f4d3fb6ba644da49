"""Train End-To-End Memory Networks on bAbI files.

python -m attn.memn2n train --data DIR --task N     one task: per-epoch progress, test error
python -m attn.memn2n table --data DIR              one model per task, all 20 tasks, next to the paper's PE LS RN
python -m attn.memn2n joint --data DIR              one model for all 20 tasks, next to the paper's PE LS RN joint

``--runs 10`` is the paper's protocol (Sukhbaatar et al. 2015, §4.2): each training repeated with 10 random
initialisations and the run with the lowest training error kept. The table also shows the run that the lowest
validation error would keep, and the median run.

``--scheduler tcp://host:8786`` sends the runs to a Dask cluster instead of this machine's processes (``dask
scheduler`` on one machine, ``dask worker tcp://host:8786 --nthreads 1`` on each of the others, every one with this
package and the data folder at the same path). Each run trains on one thread and is seeded, so the table is the one a
local run of the same seeds gives on the same kind of CPU.
"""

from __future__ import annotations

import argparse
import csv
import importlib
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TypeVar

import torch

from attn._checks import check, check_choice, check_nonnegative_int, check_positive_int
from attn.data.babi import check_vectorizable, read_task, task_file
from attn.memn2n.measures import evaluate
from attn.memn2n.train import MemN2NRun, split_valid, train_memn2n
from attn.training import dask_executor, over_runs, scheduler_address

FAILED = 0.05  # the paper counts a task as failed above 5 % test error
PAPER_COLUMN = "PE_LS_RN"
JOINT_COLUMN = "PE_LS_RN_joint"
REFERENCE_NAME = "memn2n_table1_1k_error.csv"
_Number = TypeVar("_Number", int, float)
# as the authors' config_babi_joint.m, except the learning rate after the linear start: the paper's 0.01 (theirs 0.005)
JOINT_RECIPE = dict(epochs=60, dim=50, decay_every=15, linear_start=30)


@dataclass
class TaskResult:
    """One run's test error on one task, with what the run can be chosen by: its error and loss on the
    training questions it learned from and on the held-out validation questions (for a joint run, over all
    20 tasks together)."""

    task: int
    name: str
    test_error: float
    valid_error: float
    valid_loss: float
    best_epoch: int
    seconds: float
    seed: int
    runs: int = 1
    train_error: float = 0.0
    train_loss: float = 0.0


CHOICES: dict[str, Callable[[TaskResult], tuple[float, float]]] = {
    "train": lambda r: (r.train_error, r.train_loss),  # the paper's choice, §4.2
    "valid": lambda r: (r.valid_error, r.valid_loss),
}


def pick(runs: list[TaskResult], by: str = "valid") -> TaskResult:
    """The run with the lowest ``by`` error (``"train"``: the paper's choice; ``"valid"``), ties broken by that
    loss, then the lower seed; its seconds become the sum over all runs."""
    check_choice("by", by, sorted(CHOICES))
    best = min(runs, key=lambda r: (*CHOICES[by](r), r.seed))
    return replace(best, seconds=sum(r.seconds for r in runs), runs=len(runs))


def task_name(data: Path, task: int) -> str:
    return task_file(data, task, "train").stem.split("_", 1)[1].removesuffix("_train")


def scored(data: Path, task: int, run: MemN2NRun, train: list, seed: int) -> TaskResult:
    """``run``'s test error on ``task``, with its best epoch's validation scores and its error and mean loss on
    the questions it was trained on (no noise)."""
    best = run.best
    on_train = evaluate(run.model, run.tensors(train))
    return TaskResult(
        task, task_name(data, task), run.error(read_task(data, task, "test")), best["valid_error"],
        best["valid_loss"], best["epoch"], run.history.seconds, seed, 1, on_train["error"], on_train["loss"],
    )  # fmt: skip


def run_task(
    data: Path, task: int, seed: int, epochs: int, d: int, lr: float, progress: bool, **recipe: int | bool
) -> TaskResult:
    """Train on one task's training file (10 % held out) and score the test file."""
    torch.set_num_threads(1)
    train, valid = split_valid(read_task(data, task, "train"), seed=0)
    run = train_memn2n(train, valid, epochs=epochs, seed=seed, d=d, lr=lr, progress=progress, **recipe)
    return scored(data, task, run, train, seed)


def run_joint(
    data: Path, tasks: list[int], seed: int, epochs: int, d: int, lr: float, progress: bool, **recipe: int | bool
) -> list[TaskResult]:
    """One model trained on every task's training questions at once (10 % of each held out), tested per task;
    the training and validation scores are the whole joint model's."""
    torch.set_num_threads(1)
    splits = {t: split_valid(read_task(data, t, "train"), seed=0) for t in tasks}
    train = [ex for t in tasks for ex in splits[t][0]]
    valid = [ex for t in tasks for ex in splits[t][1]]
    run = train_memn2n(train, valid, epochs=epochs, seed=seed, d=d, lr=lr, progress=progress, **recipe)
    first = scored(data, tasks[0], run, train, seed)
    return [first] + [
        replace(first, task=t, name=task_name(data, t), test_error=run.error(read_task(data, t, "test")))
        for t in tasks[1:]
    ]


def read_reference(path: Path | None, column: str = PAPER_COLUMN) -> dict[int, float]:
    """The paper's per-task test error (%) from a CSV with ``task`` and ``column`` columns, if given; a malformed
    file raises ``ValueError('file:line: ...')``."""
    if path is None:
        return {}
    errors: dict[int, float] = {}
    try:
        with path.open(encoding="utf-8-sig", newline="") as f:
            reader = csv.DictReader(f)
            check(reader.fieldnames is not None and {"task", column} <= set(reader.fieldnames),
                  lambda: f"{path}:1: expected columns 'task' and '{column}', got {reader.fieldnames}")  # fmt: skip
            for row in reader:
                task, error = _parsed(int, row["task"]), _parsed(float, row[column])
                check(task is not None and error is not None, f"{path}:{reader.line_num}: expected a task number and "
                      f"an error %, got {row['task']!r} and {row[column]!r}")  # fmt: skip
                assert task is not None and error is not None  # the check above, for the type checker
                check(task not in errors and 1 <= task <= 20,
                      f"{path}:{reader.line_num}: task {task} is repeated or not in 1..20")  # fmt: skip
                errors[task] = error
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text ({e.reason})") from None
    check(errors, f"{path}: no rows")
    return errors


def _parsed(kind: Callable[[str], _Number], text: str | None) -> _Number | None:
    """``kind(text)``, or None where ``text`` is no such number (a CSV cell)."""
    try:
        return None if text is None else kind(text)
    except (TypeError, ValueError):
        return None


def find_reference(data: Path) -> Path | None:
    """``reference/memn2n_table1_1k_error.csv`` beside the bAbI folder (as in ``../shared``), if it is there."""
    for parent in list(data.resolve().parents)[:3]:
        candidate = parent / "reference" / REFERENCE_NAME
        if candidate.is_file():
            return candidate
    return None


def summary(errors: list[float]) -> str:
    """``mean % (failed)`` of per-task test errors in %."""
    return f"{sum(errors) / len(errors):.1f} ({sum(e > 100 * FAILED for e in errors)} failed)"


def format_table(
    runs: dict[int, list[TaskResult]], paper: dict[int, float], wall: float, column: str = PAPER_COLUMN
) -> str:
    """A Markdown table of per-task test errors beside the paper's ``column``, then the means and failed tasks.

    With one run per task: that run's errors. With several: the run the paper's rule keeps (lowest training
    error), the run the lowest validation error keeps, and the median run, each task on its own.
    """
    tasks = sorted(runs)
    n = len(runs[tasks[0]])
    has_paper = all(t in paper for t in tasks)
    ref = column.replace("_", " ")
    if n == 1:
        header = f"| task | name | test error % | paper {ref} % | valid error % | seed | best epoch | train s |"
    else:
        header = (f"| task | name | lowest train error (the paper's rule) % | lowest valid error % | median % "
                  f"| paper {ref} % | seeds kept (train, valid) | train s |")  # fmt: skip
    lines = [header, "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    columns: dict[str, list[float]] = {"train": [], "valid": [], "median": [], "paper": []}
    for t in tasks:
        by_train, by_valid = pick(runs[t], "train"), pick(runs[t], "valid")
        median = statistics.median(100 * r.test_error for r in runs[t])
        theirs = f"{paper[t]:.1f}" if t in paper else "–"
        columns["train"].append(100 * by_train.test_error)
        columns["valid"].append(100 * by_valid.test_error)
        columns["median"].append(median)
        columns["paper"] += [paper[t]] if t in paper else []
        if n == 1:
            lines.append(
                f"| {t} | {by_valid.name} | {100 * by_valid.test_error:.1f} | {theirs} "
                f"| {100 * by_valid.valid_error:.1f} | {by_valid.seed} | {by_valid.best_epoch} "
                f"| {by_valid.seconds:.1f} |"
            )
        else:
            lines.append(
                f"| {t} | {by_train.name} | {100 * by_train.test_error:.1f} | {100 * by_valid.test_error:.1f} "
                f"| {median:.1f} | {theirs} | {by_train.seed}, {by_valid.seed} | {by_train.seconds:.1f} |"
            )
    paper_mean = f"{sum(columns['paper']) / len(tasks):.1f}" if has_paper else "–"
    if n == 1:
        lines.append(f"| mean | | {sum(columns['valid']) / len(tasks):.1f} | {paper_mean} | | | | |")
    else:
        means = " | ".join(f"{sum(columns[c]) / len(tasks):.1f}" for c in ("train", "valid", "median"))
        lines.append(f"| mean | | {means} | {paper_mean} | | |")
    return "\n".join([*lines, "", *_footer(runs, columns, has_paper, wall, column)])


def _footer(runs: dict[int, list[TaskResult]], columns: dict[str, list[float]], has_paper: bool, wall: float,
            column: str) -> list[str]:  # fmt: skip
    """The table's last lines: the failed tasks, then the training time."""
    tasks, n = sorted(runs), len(next(iter(runs.values())))
    paper_failed = f" (paper: {sum(e > 100 * FAILED for e in columns['paper'])})" if has_paper else ""
    if n == 1:
        failed = sum(e > 100 * FAILED for e in columns["valid"])
        first = f"failed tasks (error > 5 %): {failed} of {len(tasks)}{paper_failed}"
    else:
        first = (
            f"mean error (failed tasks, error > 5 %) of {len(tasks)}: lowest train error {summary(columns['train'])}, "
            f"lowest valid error {summary(columns['valid'])}, median run {summary(columns['median'])}{paper_failed}"
        )
    seconds = sum(r.seconds for t in tasks for r in runs[t])
    if column == JOINT_COLUMN:
        seconds = sum(r.seconds for r in runs[tasks[0]])  # one model per run serves every task
    kept = f"{n} seeds per task" if n > 1 else "one run per task"
    return [first, f"training time: {seconds:.0f} s summed over the runs ({kept}); wall time {wall:.0f} s"]


def _integer(rule: Callable[[str, object], int], text: str) -> int:
    """An argparse type made of a check of :mod:`attn._checks`: the same rule as everywhere in the library."""
    try:
        return rule("value", int(text))
    except ValueError:
        least = 1 if rule is check_positive_int else 0
        raise argparse.ArgumentTypeError(f"expected an integer >= {least}, got {text!r}") from None


positive_int = partial(_integer, check_positive_int)
nonnegative_int = partial(_integer, check_nonnegative_int)


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
    repeated = sorted({t for t in tasks if tasks.count(t) > 1})
    if repeated:
        raise argparse.ArgumentTypeError(f"tasks lists task {', '.join(map(str, repeated))} more than once: {text!r}")
    return tasks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attn.memn2n", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    helps = {"train": "train and test one task", "table": "one model per task, every task",
             "joint": "one model for every task at once (the authors' joint recipe)"}  # fmt: skip
    for name, help_text in helps.items():
        recipe = JOINT_RECIPE if name == "joint" else dict(epochs=100, dim=20, decay_every=25, linear_start=20)
        sub = commands.add_parser(name, help=help_text)
        sub.add_argument("--data", type=Path, required=True, help="folder of qaN_*_train.txt / _test.txt files")
        sub.add_argument("--seed", type=nonnegative_int, default=0, help="the first seed (runs use seed, seed+1, ...)")
        sub.add_argument("--epochs", type=positive_int, default=recipe["epochs"], help="epochs after the linear start")
        sub.add_argument("--dim", type=positive_int, default=recipe["dim"], help="embedding size d")
        sub.add_argument("--lr", type=positive_float, default=0.01, help="learning rate after the linear start")
        sub.add_argument("--decay-every", type=positive_int, default=recipe["decay_every"],
                         help="halve the learning rate every N epochs")  # fmt: skip
        sub.add_argument("--linear-start", type=nonnegative_int, default=recipe["linear_start"],
                         help="epochs without the softmax first")  # fmt: skip
        sub.add_argument("--mask-empty", action="store_true",
                         help="mask the empty memory slots out (default: attend to them as zero vectors, as the "
                         "authors' code does)")  # fmt: skip
        if name != "train":
            sub.add_argument("--tasks", type=parse_tasks, default=list(range(1, 21)), help="e.g. 1-20 or 1,2,16")
            sub.add_argument("--jobs", type=positive_int, default=os.cpu_count() or 1, help="runs trained in parallel")
            sub.add_argument("--scheduler", metavar="ADDRESS", type=scheduler_address,
                             help="train on the Dask cluster whose scheduler is at ADDRESS (tcp://host:8786) "
                             "instead of --jobs local processes; the same numbers")  # fmt: skip
            sub.add_argument("--runs", type=positive_int, default=1,
                             help="seeds per task (the paper: 10, the lowest training error kept)")  # fmt: skip
            sub.add_argument("--reference", type=Path,
                             help=f"CSV of the paper's errors (default: ../reference/{REFERENCE_NAME})")  # fmt: skip
    commands.choices["train"].add_argument("--task", type=int, required=True, choices=range(1, 21), metavar="N")
    args = parser.parse_args(argv)
    if not args.data.is_dir():
        parser.error(f"--data {args.data} is not a folder")
    try:
        reference, paper = check_data(args)
        cluster = dask_executor(args.scheduler) if getattr(args, "scheduler", None) else None
    except (ValueError, OSError) as e:  # a data error or no scheduler there: one line, exit status 1
        message = f"{e.filename}: {e.strerror.lower()}" if isinstance(e, OSError) and e.filename and e.strerror else e
        print(f"{parser.prog}: error: {message}", file=sys.stderr)
        return 1
    return run(args, reference, paper, cluster)


def check_data(args: argparse.Namespace) -> tuple[Path | None, dict[int, float]]:
    """Every task file found, readable and with questions, and the reference CSV read, before any training starts
    (a ValueError or OSError names the file); returns the reference's path and the paper's errors."""
    tasks = [args.task] if args.command == "train" else args.tasks
    for task in tasks:
        for split in ("train", "test"):
            path, questions = task_file(args.data, task, split), read_task(args.data, task, split)
            check(questions, f"{path}: no questions (a question line is 'ID question<TAB>answer<TAB>supporting ids')")
            try:  # what training will allocate, refused before any run starts
                check_vectorizable(questions)
            except ValueError as error:
                raise ValueError(f"{path}: {error}") from None
    if args.command == "train":
        return None, {}
    reference = args.reference or find_reference(args.data)
    return reference, read_reference(reference, JOINT_COLUMN if args.command == "joint" else PAPER_COLUMN)


def run(args: argparse.Namespace, reference: Path | None, paper: dict[int, float], cluster=None) -> int:
    """The command ``args`` asks for, on data :func:`check_data` has read (on ``cluster``, a Dask executor, if
    given)."""
    recipe = dict(decay_every=args.decay_every, linear_start=args.linear_start, attend_empty=not args.mask_empty)

    if args.command == "train":
        r = run_task(args.data, args.task, args.seed, args.epochs, args.dim, args.lr, progress=True, **recipe)
        print(
            f"task {r.task} ({r.name}): test error {100 * r.test_error:.1f} %, valid error "
            f"{100 * r.valid_error:.1f} % (epoch {r.best_epoch}), train error {100 * r.train_error:.1f} %, "
            f"{r.seconds:.1f} s of training"
        )
        return 0

    column = JOINT_COLUMN if args.command == "joint" else PAPER_COLUMN
    start = time.perf_counter()
    seeds = range(args.seed, args.seed + args.runs)
    common = (args.epochs, args.dim, args.lr, False)
    # A worker finds a function by its module's name, and under `python -m` this module is "__main__", which it does
    # not import: hand it the functions of this module imported under its own name.
    named = importlib.import_module(__spec__.name if __spec__ else __name__)
    train = partial(over_runs, jobs=args.jobs, progress=True, executor=cluster)  # local processes, or the cluster
    if args.command == "joint":
        joint = train([partial(named.run_joint, args.data, args.tasks, s, *common, **recipe) for s in seeds],
                      desc="joint runs")  # fmt: skip
        runs = {t: [joint[k][i] for k in range(len(seeds))] for i, t in enumerate(args.tasks)}
    else:
        keys = [(t, s) for t in args.tasks for s in seeds]
        done = dict(zip(keys, train([partial(named.run_task, args.data, t, s, *common, **recipe) for t, s in keys],
                                    desc="training runs"), strict=True))  # fmt: skip
        runs = {t: [done[t, s] for s in seeds] for t in args.tasks}
    print(format_table(runs, paper, time.perf_counter() - start, column))
    if reference is None:
        print("(no reference CSV found: pass --reference to print the paper's column)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
