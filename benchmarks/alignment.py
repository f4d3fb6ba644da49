"""Learning to align: time to 95 % held-out exact match for each scoring function and the no-attention baseline.

Prints two tables, measured in one run:

1. each attention module's forward+backward at a decoder step's shape against a PyTorch reference
   (``torch.nn.functional.scaled_dot_product_attention`` for dot and general, the same equation written with
   plain torch operations for additive): median times and their ratio;
2. training the chapter's encoder-decoder (seeded, the chapter's sizes): steps and seconds of training
   (evaluation not counted) until the held-out exact match first reaches 95 %, the exact match and
   attention mass at the end, the time per step and the peak memory the training added;

then the time to execute chapter 2 from a fresh kernel.

    .venv/bin/python benchmarks/alignment.py [--quick] [--threads N] [--steps N]
"""

from __future__ import annotations

import argparse
import os
import sys

import torch
import torch.nn.functional as F
from common import ROOT, median_seconds, peak_extra_mib, time_notebook
from tqdm import tqdm

from attn.data import make_corpus
from attn.seq2seq import AdditiveAttention, DotAttention, GeneralAttention, evaluate_translation, train_translator
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


def first_reaching(checkpoints: list[dict], goal: float) -> dict | None:
    return next((c for c in checkpoints if c["exact_match"] >= goal), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short run on a small corpus (a smoke test)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the chapter uses 1)")
    parser.add_argument("--steps", type=int, default=1000, help="training budget per model")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
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

    if not args.quick:
        path = ROOT / "notebooks" / "02_alignment.ipynb"
        print("\nchapter execution (fresh kernel, kernel start-up included)")
        print(f"{path.name:>24}: {time_notebook(path):.1f} s")


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    main()
