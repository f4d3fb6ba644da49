"""Generation cost per token: softmax attention with its key/value cache against linear attention's fast-weight
state (Katharopoulos et al. 2020), and the cache of full, grouped-query and multi-query heads.

Table 1 writes T tokens one at a time, the way a language model generates, and times the whole run:

- **softmax + cache**: :meth:`attn.MultiHeadAttention.extend`, each new token attending to every cached key
  (the cache grows with T, each step costs O(T));
- **linear (recurrent)**: :func:`attn.scale.linear.linear_attention_step`, each token writing one outer product
  into a ``d_k × d_v`` state and reading it (constant size, O(1) per step).

It fits the exponent of total time in T by least squares on log-log (linear attention: goal at most 1.2, i.e.
time per token flat in T) and prints the bytes of state each keeps after T tokens.

Table 3 (``--recall``): associative recall without training (:func:`attn.scale.recall.associative_recall`), every
memory given a search of its natural knob and the setting chosen by one rule, the best mean recall on selection
seeds 100-109, then reported on seeds 0-9: softmax attention its sharpness × recency bias (20 settings), linear
attention a decayed sum ``S ← γ S + k vᵀ`` (γ, 10 settings, 1 = the plain sum), the delta rule its β (10 settings),
elu + 1 features the scale c of their inputs (10 settings). Keys written once and twice (the second write with a
new value), d_k = 16.

Table 2: the bytes of key/value cache per generated token of chapter 10's language model (d_model 64, 4 heads,
2 layers) with 4, 2 and 1 key/value heads, measured from :attr:`KeyValueCache.nbytes` after a real prefix.

    .venv/bin/python benchmarks/fast_weights.py [--quick] [--threads N] [--recall] [--recall-only]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import torch
from tqdm import tqdm

from attn import LanguageModel, LanguageModelConfig, MultiHeadAttention
from attn.scale.linear import linear_attention_step
from attn.scale.recall import GRIDS, associative_recall, best_setting

RECALL_GRIDS = GRIDS  # each memory's search, the chapter's too
SELECT_SEEDS, REPORT_SEEDS = range(100, 110), range(10)

GOAL_EXPONENT = 1.2  # linear attention: total time ∝ T^p with p at most this


def fitted_exponent(xs: list[int], ys: list[float]) -> float:
    """The slope of log y against log x (least squares)."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True)) / sum((a - mx) ** 2 for a in lx)


@torch.no_grad()
def softmax_with_cache(T: int, d_model: int, heads: int) -> tuple[float, int]:
    """Seconds to write T tokens one at a time with a key/value cache, and the cache's bytes at the end."""
    layer = MultiHeadAttention(d_model, heads).eval()
    x = torch.randn(1, T, d_model, generator=torch.Generator().manual_seed(0))
    past = None
    start = time.perf_counter()
    for t in range(T):
        _, _, past = layer.extend(x[:, t : t + 1], past, need_weights=False)
    return time.perf_counter() - start, past.nbytes


@torch.no_grad()
def linear_recurrent(T: int, d_model: int, heads: int) -> tuple[float, int]:
    """Seconds to write T tokens one at a time into linear attention's fast weights, and the state's bytes."""
    d_k = d_model // heads
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, heads, T, d_k, generator=g) for _ in range(3))  # (B, H, T, d_k)
    state = None
    start = time.perf_counter()
    for t in range(T):
        _, state = linear_attention_step(q[:, :, t], k[:, :, t], v[:, :, t], state)
    return time.perf_counter() - start, state.S.nbytes + state.z.nbytes


def cache_bytes_per_token(num_kv_heads: int, T: int = 20) -> float:
    """Bytes of key/value cache per token of chapter 10's model with ``num_kv_heads`` key/value heads."""
    config = LanguageModelConfig(40, d_model=64, num_heads=4, num_layers=2, d_ff=128, dropout=0.0, max_len=24,
                                 num_kv_heads=num_kv_heads)  # fmt: skip
    model = LanguageModel(config).eval()
    with torch.no_grad():
        _, cache = model.extend(torch.randint(1, 40, (1, T), generator=torch.Generator().manual_seed(0)))
    return cache.nbytes / len(cache)


def recall_table(sizes: list[int], d_k: int = 16) -> None:
    """Table 3: each memory at the setting chosen on the selection seeds, recall on the reported seeds."""
    print(f"\nassociative recall, d_k = {d_k}: setting chosen on seeds {SELECT_SEEDS.start}-{SELECT_SEEDS.stop - 1} "
          f"(best mean recall), recall = mean over seeds {REPORT_SEEDS.start}-{REPORT_SEEDS.stop - 1}")  # fmt: skip
    print("| writes | N | " + " | ".join(f"{m} (setting) | {m}" for m in RECALL_GRIDS) + " | delta - decayed sum |")
    print("| ---: | ---: | " + " | ".join("---: | ---:" for _ in RECALL_GRIDS) + " | ---: |")
    for writes in (1, 2):
        for N in tqdm(sizes, desc=f"recall, writes {writes}", file=sys.stderr):
            cells, got = [], {}
            for memory, grid in RECALL_GRIDS.items():
                setting, _ = best_setting(memory, N, d_k, grid, seeds=SELECT_SEEDS, writes=writes)
                got[memory] = sum(
                    associative_recall(memory, N, d_k, seed=s, writes=writes, **setting) for s in REPORT_SEEDS
                ) / len(REPORT_SEEDS)
                shown = ", ".join(f"{k} {v:g}" for k, v in setting.items()) or "-"
                cells.append(f"{shown} | {got[memory]:.2f}")
            print(f"| {writes} | {N} | " + " | ".join(cells) + f" | {got['delta'] - got['linear']:+.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short sequences only (a smoke test)")
    parser.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--recall", action="store_true", help="also the tuned associative-recall table")
    parser.add_argument("--recall-only", action="store_true", help="only the tuned associative-recall table")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.recall or args.recall_only:
        recall_table([2, 4, 8] if args.quick else [2, 4, 8, 16, 32, 64])
    if args.recall_only:
        return
    lengths = [128, 256, 512] if args.quick else [256, 512, 1024, 2048, 4096]
    d_model, heads = 64, 4
    rows = []
    for T in tqdm(lengths, desc="sequence lengths", file=sys.stderr):
        rows.append((T, softmax_with_cache(T, d_model, heads), linear_recurrent(T, d_model, heads)))
    print(f"\nwriting T tokens one at a time, d_model {d_model}, {heads} heads, float32, {args.threads} threads, "
          f"torch {torch.__version__}")  # fmt: skip
    print("| T | softmax + cache s | µs per token | cache KiB | linear s | µs per token | state KiB |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for T, (t_s, b_s), (t_l, b_l) in rows:
        print(f"| {T} | {t_s:.3f} | {1e6 * t_s / T:.0f} | {b_s / 1024:.0f} | {t_l:.3f} | {1e6 * t_l / T:.0f} "
              f"| {b_l / 1024:.1f} |")  # fmt: skip
    p_soft = fitted_exponent(lengths, [r[1][0] for r in rows])
    p_lin = fitted_exponent(lengths, [r[2][0] for r in rows])
    verdict = "PASS" if p_lin <= GOAL_EXPONENT else "FAIL"
    print(f"\ntotal time ∝ T^p: softmax with cache p = {p_soft:.2f} (O(T²) asymptotically); linear attention "
          f"p = {p_lin:.2f} (goal at most {GOAL_EXPONENT}: {verdict})")  # fmt: skip

    print("\nkey/value cache per generated token, chapter 10's model (2 layers, 4 query heads, d_k 16, float32)")
    print("| key/value heads | bytes per token | vs full heads |")
    print("| ---: | ---: | ---: |")
    full = cache_bytes_per_token(4)
    for h_kv in (4, 2, 1):
        b = cache_bytes_per_token(h_kv)
        print(f"| {h_kv} | {b:.0f} | {b / full:.2f} |")


if __name__ == "__main__":
    main()
