"""Memory networks: the bAbI 1k table (one MemN2N per task, the paper's recipe) next to the paper's errors.

Prints, measured in one run:

1. one memory hop (``attn.memn2n.memory_read``) forward+backward at the training shape against
   ``torch.nn.functional.scaled_dot_product_attention`` computing the same read, and one full training step
   of the model: median times, their ratio, and the peak memory of training one task;
2. the table of ``python -m attn.memn2n table`` on the real bAbI files (default ``../shared/babi/en``) by the
   paper's protocol (10 runs per task; the run with the lowest training error kept, and beside it the run with
   the lowest validation error and the median run): per-task test error beside the paper's PE LS RN column,
   mean error, failed tasks, the summed training time and the wall time;
3. the table of ``python -m attn.memn2n joint`` (one model for all 20 tasks, the authors' joint recipe) beside
   the paper's PE LS RN joint column;

then the time to execute chapter 3 from a fresh kernel.

    .venv/bin/python benchmarks/babi_table.py [--quick] [--data DIR] [--runs N] [--joint-runs N] [--jobs N]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from common import ROOT, median_seconds, peak_extra_mib, time_notebook

from attn.data.babi import build_vocab, read_task, vectorize
from attn.memn2n import MemN2N, MemN2NConfig, memory_read, train_memn2n
from attn.memn2n.__main__ import main as memn2n_main
from attn.training import seeded

DATA = ROOT.parent / "shared" / "babi" / "en"


def hop_table(repeats: int) -> list[tuple[str, float, float]]:
    B, M, d = 32, 50, 20  # a training batch, the memory size, the embedding size
    g = torch.Generator().manual_seed(0)
    u = torch.randn(B, d, generator=g, requires_grad=True)
    m = torch.randn(B, M, d, generator=g, requires_grad=True)
    c = torch.randn(B, M, d, generator=g, requires_grad=True)
    mask = torch.arange(M)[None, :] < torch.randint(5, M + 1, (B, 1), generator=g)

    def ours():
        memory_read(u, m, c, mask)[0].sum().backward()

    def theirs():
        F.scaled_dot_product_attention(u[:, None], m, c, attn_mask=mask[:, None], scale=1.0).sum().backward()

    return [("memory_read (B=32, M=50, d=20)", median_seconds(ours, repeats), median_seconds(theirs, repeats))]


def step_time(data_dir: Path, task: int, repeats: int) -> tuple[float, float | None]:
    """Seconds per SGD step of the 3-hop model on a batch of 32, and the peak MiB one task's training adds."""
    train = read_task(data_dir, task, "train")
    vocab = build_vocab(train)
    data = vectorize(train, vocab)
    with seeded(0):
        model = MemN2N(MemN2NConfig(len(vocab)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    batch = data[torch.arange(32)]

    def step():
        loss = F.cross_entropy(model(batch.story, batch.query, batch.lengths).logits, batch.answer, reduction="sum")
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    seconds = median_seconds(step, repeats)
    peak = peak_extra_mib(lambda: train_memn2n(train, epochs=5, linear_start=2, progress=False))
    return seconds, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="two tasks, a few epochs (a smoke test)")
    parser.add_argument("--data", type=Path, default=DATA, help="folder of the bAbI 1k files")
    parser.add_argument("--runs", type=int, default=10, help="seeds per task (the paper: 10)")
    parser.add_argument("--joint-runs", type=int, default=2, help="seeds of the joint model (0: no joint table)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="tasks trained in parallel")
    args = parser.parse_args()
    if not args.data.is_dir():
        sys.exit(f"no bAbI files at {args.data}: pass --data (tasks_1-20_v1-2/en)")
    torch.set_num_threads(1)  # as the chapter and the table's workers run

    repeats = 5 if args.quick else 50
    print(f"one memory hop and one training step, forward+backward, 1 thread, median of {repeats}\n")
    print(f"{'operation':>32} {'attn ms':>9} {'torch ms':>9} {'ratio':>6}")
    for name, ours, theirs in hop_table(repeats):
        print(f"{name:>32} {1e3 * ours:9.3f} {1e3 * theirs:9.3f} {ours / theirs:6.2f}")
    seconds, peak = step_time(args.data, 3, repeats)
    peak_text = f"{peak:.0f} MiB" if peak is not None else "not measured"
    print(f"\nMemN2N training step (task 3: M=50, batch 32, 3 hops): {1e3 * seconds:.2f} ms; "
          f"peak memory of training one task: {peak_text}\n")  # fmt: skip

    if args.quick:
        args.runs, args.joint_runs = min(args.runs, 2), min(args.joint_runs, 1)
    common = ["--data", str(args.data), "--jobs", str(args.jobs)]
    quick = ["--tasks", "1,16", "--epochs", "3", "--linear-start", "2"] if args.quick else []
    print(f"one model per task, {args.runs} runs per task")
    memn2n_main(["table", *common, "--runs", str(args.runs), *quick])
    if args.joint_runs:
        print(f"\none model for all tasks (joint training), {args.joint_runs} runs")
        memn2n_main(["joint", *common, "--runs", str(args.joint_runs), *quick])

    if not args.quick:
        path = ROOT / "notebooks" / "03_memory_networks.ipynb"
        print(f"\n{path.name}: executed in {time_notebook(path):.1f} s")


if __name__ == "__main__":
    main()
