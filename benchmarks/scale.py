"""Tiled attention (attn.scale.tiled, the online softmax) against the attention that stores its weights and
PyTorch's fused kernel: peak memory and forward time; the work of causal and sliding-window tiled attention
(tiles computed against T and w); and the FLOPs per byte moved of the standard and the tiled kernel.

- **attn**: :func:`attn.scaled_dot_product_attention`, which returns (so stores) the ``(T, T)`` weights;
- **tiled**: :func:`attn.scale.tiled.tiled_attention`, plain PyTorch, one ``(block_q, block_k)`` tile at a time;
- **fused**: :func:`torch.nn.functional.scaled_dot_product_attention`, PyTorch's fused kernel.

Prints four tables: the peak extra memory of one forward (with the ratio tiled / attn, the goal at T = 8192 being
at most 1/10, and the exponent of attn's memory in T fitted by least squares on a log-log scale); the median
forward time of tiled (with its fastest block sizes) against fused (goal: at most 3x at T >= 1024); the tiles
``tiled_attention(causal=True, window=w)`` computes against T and w (:func:`attn.scale.tiled.tile_work`, checked
against the kernel's own count at the smallest T, with exponents fitted in T and the forward time at one T); and
the arithmetic intensity, FLOPs (FlopCounterMode on the kernels) per byte moved (:func:`attn.scale.tiled.hbm_traffic`)
of the standard kernel and both loop orders of FlashAttention, next to machine balances (this CPU's, measured;
two GPUs' from their datasheets). Usage:

    .venv/bin/python benchmarks/scale.py [--quick] [--threads N]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from functools import partial

import torch
import torch.nn.functional as F
from common import paired_medians, peak_extra_mib
from torch.utils.flop_counter import FlopCounterMode
from tqdm import tqdm

import attn
import attn.scale.tiled as tiled_module
from attn.scale.tiled import hbm_traffic, tile_work, tiled_attention

GOALS = {"memory": 0.1, "memory_T": 8192, "time": 3.0}  # tiled / attn peak memory at T = 8192; tiled / fused time
MEMORY_SIZES = (1024, 2048, 4096, 8192)  # T, with B = 1, H = 1, d_k = 64
MEMORY_BLOCKS = (256, 256)  # block_q, block_k of the memory table
TIME_SIZES = (1024, 2048, 4096)  # T, with B = 1, H = 4, d_k = 64
BLOCKS = ((128, 128), (256, 256), (256, 512), (512, 512))  # (block_q, block_k) tried for time; the fastest reported
WORK_SIZES = (1024, 2048, 4096, 8192, 16384)  # T of the work table
WORK_BLOCK = 64  # block_q = block_k of the work table
WINDOWS = (None, 1024, 256, 64)  # w of the work table (None: causal, no window); a column without a mask too
INTENSITY_SIZES = (1024, 2048, 4096)  # T of the FLOPs-per-byte table, one head, d = 64
FAST_MEMORY = 100 * 1024  # bytes of on-chip memory a tile may use (chapter 12's M; an A100 SM has 192 KB)
# Machine balance, peak FLOP/s over memory bandwidth, from the vendors' datasheets (dense, no sparsity):
# NVIDIA A100 Tensor Core GPU datasheet (40 GB SXM): FP32 19.5 TFLOP/s, FP16/BF16 tensor core 312 TFLOP/s,
# HBM2 1,555 GB/s; NVIDIA H100 Tensor Core GPU datasheet (SXM5): FP32 67 TFLOP/s, FP16/BF16 tensor core
# 989 TFLOP/s (1,979 with sparsity), HBM3 3.35 TB/s.
GPU_BALANCE = {
    "A100 FP32": (19.5e12, 1.555e12),
    "A100 FP16 tensor cores": (312e12, 1.555e12),
    "H100 SXM FP32": (67e12, 3.35e12),
    "H100 SXM FP16 tensor cores": (989e12, 3.35e12),
}


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


def fitted_or_na(xs: list[float], ys: list[float]) -> str:
    return f"{fitted_exponent(xs, ys):.2f}" if len(xs) >= 2 else "n/a"


def count_tiles(run) -> int:
    """The tiles a tiled_attention call computes, counted in the kernel (one _online_softmax_update per tile)."""
    calls = [0]
    real = tiled_module._online_softmax_update

    def counting(*args):
        calls[0] += 1
        return real(*args)

    tiled_module._online_softmax_update = counting
    try:
        run()
    finally:
        tiled_module._online_softmax_update = real
    return calls[0]


def work_table(sizes: tuple[int, ...], windows: tuple[int | None, ...], repeats: int) -> None:
    b = WORK_BLOCK
    work = {(T, w): tile_work(T, T, b, b, causal=True, window=w) for T in sizes for w in windows}
    full = {T: tile_work(T, T, b, b) for T in sizes}
    T0 = sizes[0]
    q = inputs(1, T0)[0]
    for w in windows:  # the formula against the kernel's own count at the smallest T
        run = lambda w=w: tiled_attention(q, q, q, block_q=b, block_k=b, causal=True, window=w)  # noqa: E731
        counted = count_tiles(run)
        assert counted == work[T0, w]["tiles"], (T0, w, counted, work[T0, w])
    print(f"\ntiles computed by tiled_attention(causal=True, window=w), block_q = block_k = {b} (tile_work; the"
          f" kernel's own count agrees at T = {T0})")  # fmt: skip
    names = ["no mask"] + [("causal" if w is None else f"w = {w}") for w in windows]
    print("| T | " + " | ".join(names) + " | " + " | ".join(f"{n}: scores / visible" for n in names[1:]) + " |")
    print("| ---: |" + " ---: |" * (2 * len(names) - 1))
    for T in sizes:
        tiles = [full[T]["tiles"]] + [work[T, w]["tiles"] for w in windows]
        waste = [work[T, w]["scores"] / work[T, w]["visible"] for w in windows]
        print(f"| {T} | " + " | ".join(f"{t:,}" for t in tiles) + " | " + " | ".join(f"{x:.2f}" for x in waste) + " |")
    slopes = [fitted_or_na(list(sizes), [full[T]["tiles"] for T in sizes])]
    slopes += [fitted_or_na(list(sizes), [work[T, w]["tiles"] for T in sizes]) for w in windows]
    print("| exponent in T | " + " | ".join(slopes) + " |" + " |" * len(windows))
    T = sizes[min(2, len(sizes) - 1)]
    q, k, v = inputs(1, T)
    dense = attn.causal_mask(T)
    runs = [lambda: tiled_attention(q, k, v, dense, block_q=b, block_k=b)]
    runs += [lambda w=w: tiled_attention(q, k, v, block_q=b, block_k=b, causal=True, window=w) for w in windows]
    with torch.no_grad():
        times = paired_medians(runs, repeats)
    print(f"\nforward time at T = {T}, one head, d_k = 64, median of {repeats}: causal mask given as a (T, T) tensor"
          f" (every tile computed) {1e3 * times[0]:.0f} ms; "
          + "; ".join(f"{n} {1e3 * t:.0f} ms" for n, t in zip(names[1:], times[1:], strict=True)))  # fmt: skip


def machine_balance(threads: int) -> tuple[float, float]:
    """This CPU's float32 matrix-product FLOP/s (a 1024³ product) and copy bandwidth (bytes read + written by
    copying 256 MiB), both the best of 5."""
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    src, dst = torch.randn(64 * 2**20), torch.empty(64 * 2**20)
    flops = 2 * 1024**3 / min(timed(lambda: a @ b) for _ in range(5))
    bandwidth = 2 * src.numel() * 4 / min(timed(lambda: dst.copy_(src)) for _ in range(5))
    return flops, bandwidth


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def counted_flops(fn) -> int:
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


def intensity_table(sizes: tuple[int, ...], threads: int) -> None:
    d = 64
    block = max(b for b in range(1, 512) if hbm_traffic(1024, d, b, b)["fast_memory"] <= FAST_MEMORY)
    rows = []
    for T in tqdm(sizes, desc="FLOPs per byte", file=sys.stderr):
        q, k, v = inputs(1, T, d)
        with torch.no_grad():
            standard = counted_flops(partial(attn.scaled_dot_product_attention, q, k, v))
            tiled = counted_flops(partial(tiled_attention, q, k, v, block_q=block, block_k=block))
            causal = counted_flops(partial(tiled_attention, q, k, v, block_q=block, block_k=block, causal=True))
        assert tiled == tile_work(T, T, block, block, d_k=d)["flops"]
        rows.append((T, standard, tiled, causal, hbm_traffic(T, d, block, block)))
    print(
        f"\nFLOPs per byte of one forward, one head, d = {d}, float32 (4 bytes a float; float16 doubles every ratio),"
        f" tiles {block} x {block} (the largest square tile whose working set fits {FAST_MEMORY // 1024} KiB);"
        " FLOPs counted by FlopCounterMode on the kernels (matrix products only), bytes by hbm_traffic"
    )
    print(
        "| T | standard GFLOP | tiled GFLOP | tiled causal GFLOP | standard MB | FlashAttention MB | "
        "FlashAttention-2 MB | standard FLOP/B | FlashAttention FLOP/B | FlashAttention-2 FLOP/B |"
    )
    print("| ---: |" + " ---: |" * 9)
    for T, standard, tiled, causal, moved in rows:
        gflop = " | ".join(f"{x / 1e9:.2f}" for x in (standard, tiled, causal))
        mb = " | ".join(f"{moved[n] / 1e6:.1f}" for n in ("standard", "flash1", "flash2"))
        per_byte = f"{standard / moved['standard']:.1f} | {tiled / moved['flash1']:.1f} | {tiled / moved['flash2']:.1f}"
        print(f"| {T} | {gflop} | {mb} | {per_byte} |")
    flops, bandwidth = machine_balance(threads)
    print(f"\nmachine balance (peak FLOP/s / memory bytes/s; a kernel below it is limited by traffic):\n"
          f"- this CPU, measured, {threads} thread(s): {flops / 1e9:.1f} GFLOP/s (float32 1024^3 product) / "
          f"{bandwidth / 1e9:.1f} GB/s (copy) = {flops / bandwidth:.1f} FLOP/B")  # fmt: skip
    for name, (peak, hbm) in GPU_BALANCE.items():
        print(f"- {name} (datasheet): {peak / 1e12:g} TFLOP/s / {hbm / 1e12:g} TB/s = {peak / hbm:.1f} FLOP/B")


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
        work_table(WORK_SIZES[:3], WINDOWS, repeats=1)
        intensity_table(INTENSITY_SIZES[:1], args.threads)
    else:
        time_table(TIME_SIZES, BLOCKS, repeats=7)
        work_table(WORK_SIZES, WINDOWS, repeats=5)
        intensity_table(INTENSITY_SIZES, args.threads)


if __name__ == "__main__":
    main()
