"""attn.scaled_dot_product_attention against PyTorch's two attention paths, forward+backward.

The two references, measured in the same run with the same threads:

- **math**: ``torch.ops.aten._scaled_dot_product_attention_math``, PyTorch's eager attention that, like attn,
  returns the weights (what ``nn.MultiheadAttention`` runs with ``need_weights=True``);
- **fused**: ``torch.nn.functional.scaled_dot_product_attention``, the fused kernel, which never stores the
  weights and returns only the output.

Prints one table (median times, the ratios attn / math and attn / fused, the peak extra memory of one
forward+backward) and, for attn, what the causal mask costs (causal time / unmasked time); then the time to
execute chapter 1. Usage:

    .venv/bin/python benchmarks/attention_core.py [--quick] [--threads N]
"""

from __future__ import annotations

import argparse
import os
import sys

import torch
import torch.nn.functional as F
from common import ROOT, paired_medians, peak_extra_mib, time_notebook
from tqdm import tqdm

import attn

IMPLS = ("attn", "math", "fused")
GOALS = {"math": 1.3, "causal": 1.2}  # attn / math time at most; attn's causal / unmasked time at most
# (B, H, T, d_k)
SIZES = [(32, 4, 32, 16), (16, 8, 64, 32), (8, 8, 128, 64), (4, 8, 256, 64), (2, 8, 512, 64), (1, 8, 1024, 64)]


def step(impl: str, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None):
    def run():
        for t in (q, k, v):
            t.grad = None
        if impl == "attn":
            out, _ = attn.scaled_dot_product_attention(q, k, v, mask)
        elif impl == "math":
            out, _ = torch.ops.aten._scaled_dot_product_attention_math(q, k, v, attn_mask=mask)
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        out.sum().backward()

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="two sizes, two repeats, no chapter timing (a smoke test)")
    parser.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    sizes = SIZES[:2] if args.quick else SIZES
    repeats = 2 if args.quick else 7

    rows = []
    cases = [(size, causal) for size in sizes for causal in (False, True)]
    for (B, H, T, d_k), causal in tqdm(cases, desc="attention sizes", file=sys.stderr):
        g = torch.Generator().manual_seed(0)
        q, k, v = (torch.randn(B, H, T, d_k, generator=g, requires_grad=True) for _ in range(3))
        mask = attn.causal_mask(T) if causal else None
        runs = [step(impl, q, k, v, mask) for impl in IMPLS]
        times = paired_medians(runs, repeats)
        memory = [peak_extra_mib(run) for run in runs]
        rows.append(((B, H, T, d_k), causal, times, memory))

    def mib(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.1f}"

    print(f"\nforward+backward, float32, {args.threads} threads, torch {torch.__version__}, median of {repeats} "
          "(the three timed in alternation)")  # fmt: skip
    print("| B, H, T, d_k | mask | attn ms | math ms | attn / math | fused ms | attn / fused "
          "| attn MiB | math MiB | fused MiB |")  # fmt: skip
    print("| --- | --- |" + " ---: |" * 8)
    plain = {}
    for size, causal, (t_a, t_m, t_f), (m_a, m_m, m_f) in rows:
        plain.setdefault(size, t_a)
        print(f"| {str(size)[1:-1]} | {'causal' if causal else 'none'} | {1e3 * t_a:.2f} | {1e3 * t_m:.2f} "
              f"| {t_a / t_m:.2f} | {1e3 * t_f:.2f} | {t_a / t_f:.2f} "
              f"| {mib(m_a)} | {mib(m_m)} | {mib(m_f)} |")  # fmt: skip
    worst = max(t_a / t_m for _, _, (t_a, t_m, _), _ in rows)
    causal_cost = [t_a / plain[size] for size, causal, (t_a, _, _), _ in rows if causal]
    print(
        f"\nattn / math at most {worst:.2f} (goal {GOALS['math']}); attn's causal / unmasked time "
        f"{min(causal_cost):.2f} to {max(causal_cost):.2f} (goal at most {GOALS['causal']})"
    )

    if not args.quick:
        print("\nchapter execution (fresh kernel, kernel start-up included)")
        for path in sorted((ROOT / "notebooks").glob("01_*.ipynb")):
            print(f"{path.name:>24}: {time_notebook(path):.1f} s")


if __name__ == "__main__":
    main()
