"""Learning to align: time to 95 % held-out exact match for each scoring function and the no-attention baseline.

Prints two tables, measured in one run:

1. each attention module's forward+backward at a decoder step's shape against a PyTorch reference
   (``torch.nn.functional.scaled_dot_product_attention`` for dot and general, the same equation written with
   plain torch operations for additive): median times and their ratio;
2. training the chapter's encoder-decoder (seeded, the chapter's sizes): steps and seconds of training
   (evaluation not counted) until the held-out exact match first reaches 95 %, the exact match and
   attention mass at the end, the time per step and the peak memory the training added;

3. the time of one training step of each model, all four models built in this process and stepped in turn
   (round after round, the order rotating), so that the load of a shared machine falls on all of them alike:
   the median of each and its ratio to the dot model's;

then the time to execute chapter 2 from a fresh kernel.

With ``--capacity`` it prints instead the chapter's "speed or capacity?" table: the model without attention at
d_hidden 64 (the chapter's), 128 and 256, and the dot model (exactly the 64-wide baseline's parameter count), each
trained for ``--steps`` steps (default 3,000 here) and scored on the held-out sentences of 5-7 and of 11 or more
words at every 500 steps: does the one-vector model plateau below the attention model on long sentences, and
does a wider vector close the gap?

With ``--search`` it prints the learning-rate search of the chapter's comparisons instead: each model (without
attention, additive, dot and general) trained from the search seed (10, not one the chapter reports) at 0.001, 0.003,
0.01 and 0.03 on the training pairs less 1,000 held out for validation (those whose source sentence occurs nowhere
else in training), scored on them by exact match at 400 and 1,000 steps (dot and general, whose budget is 400 steps,
train to 400 only). Each arm's rate is the one with the best validation exact match at its own budget in the chapter
(400 steps with attention, 1,000 without). ``--arms`` and ``--rates`` run a part of the grid (the runs are seeded and
on one thread each, so parts run apart give the numbers of one whole run); the cells not run print as "-".

    .venv/bin/python benchmarks/alignment.py [--quick] [--threads N] [--steps N] [--capacity]
        [--search [--arms KIND ...] [--rates LR ...]]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from common import ROOT, median_seconds, peak_extra_mib, time_notebook
from tqdm import tqdm

from attn.data import make_corpus
from attn.data.translation import encode_batch, exact_match
from attn.seq2seq import (
    AdditiveAttention,
    DotAttention,
    GeneralAttention,
    Seq2Seq,
    Seq2SeqConfig,
    evaluate_translation,
    train_translator,
)
from attn.training import seeded

GOAL = 0.95
KINDS = ["additive", "dot", "general", "none"]


def reference(kind: str, module: torch.nn.Module, query: torch.Tensor, keys: torch.Tensor, mask: torch.Tensor):
    """The same attention written directly with torch operations: the context (B, d)."""
    if kind == "additive":
        e = torch.tanh((query @ module.W_a.T)[:, None, :] + keys @ module.U_a.T) @ module.v_a  # (B, S)
        return (torch.softmax(e.masked_fill(~mask, float("-inf")), dim=-1)[:, None, :] @ keys)[:, 0]
    scored = keys if kind == "dot" else keys @ module.W_a.T
    return F.scaled_dot_product_attention(query[:, None], scored, keys, attn_mask=mask[:, None], scale=1.0)[:, 0]


def module_table(repeats: int) -> list[tuple[str, float, float]]:
    B, S, D = 64, 17, 64  # a training batch, the longest source with <eos>, the decoder width
    g = torch.Generator().manual_seed(0)
    query = torch.randn(B, D, generator=g, requires_grad=True)
    keys = torch.randn(B, S, D, generator=g, requires_grad=True)
    mask = torch.arange(S)[None, :] < torch.randint(6, S + 1, (B, 1), generator=g)
    rows = []
    for kind, cls in (("additive", AdditiveAttention), ("dot", DotAttention), ("general", GeneralAttention)):
        with seeded(0):
            module = cls(D, D, D)

        def run_attn(module=module):
            module(query, keys, mask)[0].sum().backward()

        def run_ref(module=module, kind=kind):
            reference(kind, module, query, keys, mask).sum().backward()

        rows.append((kind, median_seconds(run_attn, repeats, 5), median_seconds(run_ref, repeats, 5)))
    return rows


def parameters(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def step_table(corpus, rounds: int) -> list[tuple[str, int, float]]:
    """One Adam step (forward, backward, update) of each model on the same batch, the models stepped in turn with
    the order rotating every round: (kind, parameters, median seconds)."""
    batch = encode_batch(corpus.train[:64], corpus.source_vocab, corpus.target_vocab)
    loss_of = torch.nn.CrossEntropyLoss(ignore_index=corpus.target_vocab.pad)
    steps = []
    for kind in KINDS:
        with seeded(0):
            model = Seq2Seq(Seq2SeqConfig(len(corpus.source_vocab), len(corpus.target_vocab), attention=kind))
        optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)

        def step(model=model, optimizer=optimizer):
            optimizer.zero_grad()
            logits = model(batch.source, batch.source_lengths, batch.target_in).logits  # (B, T, V)
            loss_of(logits.flatten(0, 1), batch.target_out.flatten()).backward()
            optimizer.step()

        steps.append((kind, parameters(model), step))
    for _, _, step in steps * 3:  # warm-up
        step()
    times: dict[str, list[float]] = {kind: [] for kind in KINDS}
    for r in range(rounds):
        for kind, _, step in steps[r % len(steps) :] + steps[: r % len(steps)]:
            start = time.perf_counter()
            step()
            times[kind].append(time.perf_counter() - start)
    return [(kind, n, statistics.median(times[kind])) for kind, n, _ in steps]


def capacity(corpus, steps: int, every: int) -> None:
    """The one-vector model at three widths and the dot model, scored on short and long held-out sentences."""
    groups = {
        "5-7": [i for i, p in enumerate(corpus.test) if len(p.source) <= 7],
        "11+": [i for i, p in enumerate(corpus.test) if len(p.source) >= 11],
    }
    arms = [("none", 64), ("none", 128), ("none", 256), ("dot", 64)]
    print(f"\nspeed or capacity: exact match on held-out sentences of 5-7 words ({len(groups['5-7'])}) and of 11+ "
          f"words ({len(groups['11+'])}), every {every} steps, batch 64, lr 3e-3, seed 0")  # fmt: skip
    print(f"{'model':>14} {'params':>8} {'step':>6} {'5-7':>7} {'11+':>7} {'all':>7} {'s':>7}")
    for kind, width in arms:
        model, history = train_translator(
            corpus, kind, steps, seed=0, every=every, valid=corpus.test, progress=False, d_hidden=width
        )
        for c in history.checkpoints:
            by = {
                name: exact_match([c["predictions"][i] for i in index], [corpus.test[i] for i in index])
                for name, index in groups.items()
            }
            print(f"{kind + ', d=' + str(width):>14} {parameters(model):>8,} {c['step']:>6} {by['5-7']:7.1%} "
                  f"{by['11+']:7.1%} {c['exact_match']:7.1%} {c['seconds']:7.1f}", flush=True)  # fmt: skip


SEARCH_GRID = (1e-3, 3e-3, 1e-2, 3e-2)
SEARCH_SEED = 10
BUDGET = {"additive": 400, "none": 1000, "dot": 400, "general": 400}  # the chapter's steps for each arm
SEARCH_STEPS = {"additive": 1000, "none": 1000, "dot": 400, "general": 400}  # how far each search run trains


def search_run(kind: str, lr: float, quick: bool) -> dict[int, float]:
    """One run of the search: validation exact match at each checkpoint (step -> exact match)."""
    torch.set_num_threads(1)
    corpus = make_corpus(2_000 if quick else 20_000, 300 if quick else 1_000, seed=0)
    held, rest = corpus.train[:1000], corpus.train[1000:]
    seen = {p.source for p in rest}
    valid = [p for p in held if p.source not in seen]  # sentences the training never shows
    search = dataclasses.replace(corpus, train=rest)
    steps, every = (40, 20) if quick else (SEARCH_STEPS[kind], 200)
    _, history = train_translator(search, kind, steps, seed=SEARCH_SEED, lr=lr, every=every, valid=valid,
                                  progress=False)  # fmt: skip
    return {c["step"]: c["exact_match"] for c in history.checkpoints}


def search_table(quick: bool, arms: list[str], rates: list[float]) -> None:
    """Print the search: validation exact match per arm, rate and budget; the chosen rate per arm (among the
    rates run)."""
    from concurrent.futures import ProcessPoolExecutor

    runs = [(kind, lr) for kind in arms for lr in rates]
    with ProcessPoolExecutor(2) as pool:
        got = dict(zip(runs, pool.map(search_run, *zip(*runs, strict=True), [quick] * len(runs)), strict=True))
    cell = lambda r, step: f"{r[step]:.1%}" if step in r else "-"  # noqa: E731
    print(f"\nlearning-rate search: validation exact match (seed {SEARCH_SEED}), at 400 and 1,000 steps")
    print("| arm | " + " | ".join(f"lr {lr:g}" for lr in SEARCH_GRID) + " | chosen (at its budget) |")
    print("|---" * (len(SEARCH_GRID) + 2) + "|")
    for kind in arms:
        budget = BUDGET[kind] if not quick else 40
        best = max(rates, key=lambda lr: got[kind, lr].get(budget, 0.0))
        cells = " | ".join(
            f"{cell(got[kind, lr], 400)} / {cell(got[kind, lr], 1000)}" if lr in rates else "-" for lr in SEARCH_GRID
        )
        print(f"| {kind} | {cells} | {best:g} ({budget} steps) |")


def first_reaching(checkpoints: list[dict], goal: float) -> dict | None:
    return next((c for c in checkpoints if c["exact_match"] >= goal), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short run on a small corpus (a smoke test)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the chapter uses 1)")
    parser.add_argument(
        "--steps", type=int, default=None, help="training budget per model (1,000; 3,000 with --capacity)"
    )
    parser.add_argument("--capacity", action="store_true", help="the one-vector model at d_hidden 64, 128, 256 and dot")
    parser.add_argument("--search", action="store_true", help="the learning-rate search of the four arms")
    parser.add_argument("--arms", nargs="+", choices=list(BUDGET), default=list(BUDGET), help="--search: the arms")
    parser.add_argument("--rates", nargs="+", type=float, default=list(SEARCH_GRID), help="--search: the rates")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.search:
        search_table(args.quick, args.arms, args.rates)
        return
    if args.capacity:
        corpus = make_corpus(2_000 if args.quick else 20_000, 300 if args.quick else 1_000, seed=0)
        capacity(corpus, 40 if args.quick else args.steps or 3000, 20 if args.quick else 500)
        return
    args.steps = args.steps or 1000
    steps, every = (40, 20) if args.quick else (args.steps, 25)
    corpus = make_corpus(2_000 if args.quick else 20_000, 300 if args.quick else 1_000, seed=0)
    valid = corpus.test[:300]

    modules = module_table(3 if args.quick else 50)
    threads = f"{args.threads} thread(s), torch {torch.__version__}"
    print(f"\nattention module, forward+backward, B=64, S=17, d=64, {threads}")
    print(f"{'scoring':>9} {'attn ms':>8} {'torch ms':>9} {'ratio':>6}")
    for kind, t_attn, t_ref in modules:
        print(f"{kind:>9} {1e3 * t_attn:8.3f} {1e3 * t_ref:9.3f} {t_attn / t_ref:6.2f}")

    rows = []
    for kind in tqdm(KINDS, desc="models", file=sys.stderr):
        result = {}

        def train(kind=kind, result=result):
            result["run"] = train_translator(corpus, kind, steps, seed=0, every=every, valid=valid, progress=False)

        train_translator(corpus, kind, 2, seed=0, progress=False)  # warm-up: first-call allocations not counted
        peak = peak_extra_mib(train)
        model, history = result["run"]
        final = evaluate_translation(model, corpus.test, corpus)
        rows.append((kind, first_reaching(history.checkpoints, GOAL), history, final, peak))

    print(f"\ntraining to {GOAL:.0%} held-out exact match ({len(valid)} sentences checked every {every} steps), "
          f"batch 64, at most {steps} steps, {args.threads} thread(s)")  # fmt: skip
    print(f"{'scoring':>9} {'steps to 95%':>13} {'s to 95%':>9} {'ms/step':>8} {'final EM':>9} "
          f"{'mass':>6} {'peak MiB':>9}")  # fmt: skip
    for kind, reached, history, final, peak in rows:
        to_steps = str(reached["step"]) if reached else "not reached"
        to_seconds = f"{reached['seconds']:.1f}" if reached else "-"
        mass = f"{final.alignment_mass:.3f}" if final.alignment_mass is not None else "-"
        per_step = 1e3 * history.seconds / len(history.loss)
        print(f"{kind:>9} {to_steps:>13} {to_seconds:>9} {per_step:8.1f} {final.exact_match:9.1%} {mass:>6} "
              f"{'n/a' if peak is None else f'{peak:.0f}':>9}")  # fmt: skip

    timed = step_table(corpus, 8 if args.quick else 60)
    dot_seconds = dict((kind, t) for kind, _, t in timed)["dot"]
    print(f"\none training step (batch 64, the chapter's sizes), the four models stepped in turn, {threads}")
    print(f"{'scoring':>9} {'params':>8} {'ms/step':>8} {'/ dot':>6}")
    for kind, n, t in timed:
        print(f"{kind:>9} {n:>8,} {1e3 * t:8.1f} {t / dot_seconds:6.2f}")

    if not args.quick:
        path = ROOT / "notebooks" / "02_alignment.ipynb"
        print("\nchapter execution (fresh kernel, kernel start-up included)")
        print(f"{path.name:>24}: {time_notebook(path):.1f} s")


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    main()
