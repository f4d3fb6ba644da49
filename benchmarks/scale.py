"""Tiled attention (attn.scale.tiled, the online softmax) against the attention that stores its weights and
PyTorch's fused kernel: peak memory and forward time.

- **attn**: :func:`attn.scaled_dot_product_attention`, which returns (so stores) the ``(T, T)`` weights;
- **tiled**: :func:`attn.scale.tiled.tiled_attention`, plain PyTorch, one ``(block_q, block_k)`` tile at a time;
- **fused**: :func:`torch.nn.functional.scaled_dot_product_attention`, PyTorch's fused kernel.

Prints two tables: the peak extra memory of one forward (with the ratio tiled / attn, the goal at T = 8192 being
at most 1/10, and the exponent of attn's memory in T fitted by least squares on a log-log scale), and the median
forward time of tiled (with its fastest block sizes) against fused (goal: at most 3x at T >= 1024). Usage:

    .venv/bin/python benchmarks/scale.py [--quick] [--threads N]
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import torch
import torch.nn.functional as F
from common import paired_medians, peak_extra_mib
from tqdm import tqdm

import attn
from attn.scale.tiled import tiled_attention

GOALS = {"memory": 0.1, "memory_T": 8192, "time": 3.0}  # tiled / attn peak memory at T = 8192; tiled / fused time
MEMORY_SIZES = (1024, 2048, 4096, 8192)  # T, with B = 1, H = 1, d_k = 64
MEMORY_BLOCKS = (256, 256)  # block_q, block_k of the memory table
TIME_SIZES = (1024, 2048, 4096)  # T, with B = 1, H = 4, d_k = 64
BLOCKS = ((128, 128), (256, 256), (256, 512), (512, 512))  # (block_q, block_k) tried for time; the fastest reported


def forward(impl: str, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, blocks: tuple[int, int] = MEMORY_BLOCKS):
    def run():
        if impl == "attn":
            return attn.scaled_dot_product_attention(q, k, v)
        if impl == "tiled":
            return tiled_attention(q, k, v, block_q=blocks[0], block_k=blocks[1])
        return F.scaled_dot_product_attention(q, k, v)

    return run


def inputs(H: int, T: int, d_k: int = 64) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return tuple(torch.randn(1, H, T, d_k, generator=g) for _ in range(3))


def fitted_exponent(xs: list[float], ys: list[float]) -> float:
    """Slope of the least-squares line through ``(log x, log y)``: y ∝ x^slope."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True)) / sum((a - mx) ** 2 for a in lx)


def memory_table(sizes: tuple[int, ...]) -> None:
    rows = []
    for T in tqdm(sizes, desc="peak memory", file=sys.stderr):
        q, k, v = inputs(1, T)
        with torch.no_grad():
            runs = [forward(impl, q, k, v) for impl in ("attn", "tiled", "fused")]
            for run in runs:  # first calls load kernels and grow thread pools: not the algorithm's memory
                run()
            rows.append((T, [peak_extra_mib(run) for run in runs]))
        del q, k, v
    print(f"\npeak extra memory of one forward (MiB), B = 1, H = 1, d_k = 64, float32, tiled blocks {MEMORY_BLOCKS}")
    print("| T | attn MiB | tiled MiB | fused MiB | tiled / attn |")
    print("| ---: |" + " ---: |" * 4)
    for T, (m_a, m_t, m_f) in rows:
        ratio = "n/a" if not m_a or m_t is None else f"{m_t / m_a:.4f}"
        print(f"| {T} | {mib(m_a)} | {mib(m_t)} | {mib(m_f)} | {ratio} |")
    T, (m_a, m_t, _) = rows[-1]
    if m_a and m_t is not None:
        verdict = "PASS" if m_t / m_a <= GOALS["memory"] else "FAIL"
        where = "" if T == GOALS["memory_T"] else f" (the goal is set at T = {GOALS['memory_T']}; --quick stops at {T})"
        print(
            f"\ntiled / attn peak memory at T = {T}: {m_t / m_a:.4f} (goal at most {GOALS['memory']}): {verdict}{where}"
        )
    measured = [(T, m_a) for T, (m_a, _, _) in rows if m_a]
    if len(measured) >= 2:
        slope = fitted_exponent(*zip(*measured, strict=True))
        print(f"attn's peak memory grows as T^{slope:.2f} (least squares on log-log; the weights are T x T)")


def time_table(sizes: tuple[int, ...], blocks: tuple[tuple[int, int], ...], repeats: int) -> None:
    rows = []
    for T in tqdm(sizes, desc="forward time", file=sys.stderr):
        q, k, v = inputs(4, T)
        with torch.no_grad():
            runs = [forward("fused", q, k, v)] + [forward("tiled", q, k, v, b) for b in blocks]
            fused, *tiled = paired_medians(runs, repeats)
        best = min(range(len(blocks)), key=tiled.__getitem__)
        rows.append((T, fused, tiled[best], blocks[best], tiled))
    print(f"\nforward time, B = 1, H = 4, d_k = 64, float32, median of {repeats} (timed in alternation); tiled with the"
          f" fastest of the blocks {', '.join(str(b) for b in blocks)}")  # fmt: skip
    print("| T | fused ms | tiled ms | tiled / fused | blocks (q, k) | every block's ms |")
    print("| ---: |" + " ---: |" * 3 + " --- | --- |")
    for T, fused, tiled, block, every in rows:
        each = ", ".join(f"{1e3 * t:.1f}" for t in every)
        print(f"| {T} | {1e3 * fused:.1f} | {1e3 * tiled:.1f} | {tiled / fused:.2f} | {block} | {each} |")
    worst = max(tiled / fused for _, fused, tiled, _, _ in rows)
    verdict = "PASS" if worst <= GOALS["time"] else "FAIL"
    print(f"\ntiled / fused forward time at most {worst:.2f} for T >= 1024 (goal at most {GOALS['time']}): {verdict}")


def mib(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="T up to 2048, two block sizes, two repeats (smoke test)")
    parser.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"{args.threads} threads, torch {torch.__version__}")
    memory_table(MEMORY_SIZES[:2] if args.quick else MEMORY_SIZES)
    if args.quick:
        time_table(TIME_SIZES[:1], BLOCKS[1:3], repeats=2)
    else:
        time_table(TIME_SIZES, BLOCKS, repeats=7)


if __name__ == "__main__":
    main()
