"""attn.scaled_dot_product_attention vs torch.nn.functional.scaled_dot_product_attention, forward+backward.

Prints one table: median time of each (same run, same threads), the ratio attn / torch, and the peak extra
memory of one forward+backward; then the time to execute chapter 1. Usage:

    .venv/bin/python benchmarks/attention_core.py [--quick] [--threads N]
"""

from __future__ import annotations

import argparse
import os
import sys

import torch
import torch.nn.functional as F
from common import ROOT, median_seconds, peak_extra_mib, time_notebook
from tqdm import tqdm

import attn

# (B, H, T, d_k)
SIZES = [(32, 4, 32, 16), (16, 8, 64, 32), (8, 8, 128, 64), (4, 8, 256, 64), (2, 8, 512, 64), (1, 8, 1024, 64)]


def step(impl: str, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None):
    def run():
        for t in (q, k, v):
            t.grad = None
        if impl == "attn":
            out, _ = attn.scaled_dot_product_attention(q, k, v, mask)
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
        t_attn = median_seconds(step("attn", q, k, v, mask), repeats)
        t_torch = median_seconds(step("torch", q, k, v, mask), repeats)
        m_attn = peak_extra_mib(step("attn", q, k, v, mask))
        m_torch = peak_extra_mib(step("torch", q, k, v, mask))
        rows.append(((B, H, T, d_k), causal, t_attn, t_torch, m_attn, m_torch))

    def mib(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.1f}"

    print(f"\nforward+backward, float32, {args.threads} threads, torch {torch.__version__}, median of {repeats}")
    print(f"{'B, H, T, d_k':>18} {'mask':>7} {'attn ms':>9} {'torch ms':>9} {'ratio':>6} "
          f"{'attn MiB':>9} {'torch MiB':>9}")  # fmt: skip
    for size, causal, t_a, t_t, m_a, m_t in rows:
        print(f"{str(size)[1:-1]:>18} {'causal' if causal else 'none':>7} {1e3 * t_a:9.2f} {1e3 * t_t:9.2f} "
              f"{t_a / t_t:6.2f} {mib(m_a):>9} {mib(m_t):>9}")  # fmt: skip

    if not args.quick:
        print("\nchapter execution (fresh kernel, kernel start-up included)")
        for path in sorted((ROOT / "notebooks").glob("01_*.ipynb")):
            print(f"{path.name:>24}: {time_notebook(path):.1f} s")


if __name__ == "__main__":
    main()
