"""Writing with a key/value cache: attn.LanguageModel.generate with cache=False (re-read the whole prefix at every
step) against cache=True (read each new token once, attending to the cached keys and values).

Prints one table: for chapter 10's language model (d_model 64, 4 heads, 2 pre-LN layers, d_ff 128, its 62-word
vocabulary) and a bigger one (d_model 128, 8 heads, 4 layers, d_ff 512), greedy generation of N tokens from a
one-token prompt for a batch of sentences, the best of 3 timings of each path (after a warm-up), the speed-up, and
whether both wrote the same tokens. One thread by default: the cost per token, not how well it spreads over cores.

    .venv/bin/python benchmarks/generation.py [--quick] [--threads N]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

import torch
from tqdm import tqdm

from attn.training import seeded
from attn.transformer import LanguageModel, LanguageModelConfig

VOCAB, BATCH = 62, 4  # the chapter corpus's vocabulary; a few sentences, as the sampling panel writes
# name, d_model, num_heads, num_layers, d_ff
MODELS = [("chapter", 64, 4, 2, 128), ("bigger", 128, 8, 4, 512)]
LENGTHS = [32, 128, 256]
LENGTHS_QUICK = [8, 32]


def best_seconds(fn: Callable[[], torch.Tensor], repeats: int) -> tuple[float, torch.Tensor]:
    """The shortest of ``repeats`` wall times of ``fn()`` (the warm-up is the caller's), and what it returned."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def build(d_model: int, num_heads: int, num_layers: int, d_ff: int, max_len: int) -> LanguageModel:
    config = LanguageModelConfig(VOCAB, d_model, num_heads, num_layers, d_ff, dropout=0.1, max_len=max_len)
    with seeded(0):
        return LanguageModel(config).eval()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the chapter's model, short lengths, one repeat")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    models = MODELS[:1] if args.quick else MODELS
    lengths = LENGTHS_QUICK if args.quick else LENGTHS
    repeats = 1 if args.quick else 3

    prompt = torch.ones(BATCH, 1, dtype=torch.long)  # (B, 1): <bos>
    rows = []
    cases = [(model, n) for model in models for n in lengths]
    for (name, *sizes), n in tqdm(cases, desc="generation", file=sys.stderr):
        model = build(*sizes, max_len=max(lengths))
        for cache in (False, True):  # warm-up: first-call allocations are not timed
            model.generate(prompt, 8, cache=cache)
        without, written = best_seconds(lambda model=model, n=n: model.generate(prompt, n), repeats)
        with_cache, cached = best_seconds(lambda model=model, n=n: model.generate(prompt, n, cache=True), repeats)
        rows.append((name, sizes, n, without, with_cache, torch.equal(written, cached)))

    threads = f"{args.threads} thread(s), torch {torch.__version__}"
    print(f"\ngreedy generation, batch {BATCH}, one-token prompt, vocabulary {VOCAB}, float32, {threads}, "
          f"best of {repeats} after a warm-up")  # fmt: skip
    print(f"{'model':>8} {'d_model, h, layers, d_ff':>24} {'tokens':>7} {'no cache s':>11} {'cache s':>9} "
          f"{'speed-up':>9} {'same':>5}")  # fmt: skip
    for name, sizes, n, without, with_cache, same in rows:
        print(f"{name:>8} {str(tuple(sizes))[1:-1]:>24} {n:7d} {without:11.3f} {with_cache:9.3f} "
              f"{without / with_cache:9.1f} {'yes' if same else 'NO':>5}")  # fmt: skip


if __name__ == "__main__":
    main()
