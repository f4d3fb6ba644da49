"""Chapter 10's learning rate, searched per arm: every arm of the chapter's comparisons gets the same grid of rates,
and each keeps the rate with the lowest held-out loss.

The arms: the batch-size table's four runs (every position of 64 or 7 sentences, one position of 64 or 610
sentences per step; held-out next-token loss averaged over steps 60 to 100, the chapter's statistic), the GPT
and the masked model of the filling-in comparison (held-out next-token loss after 300 steps, masked-LM loss
after 600). The choice is made on another draw of the corpus (seed 1: its own training and held-out sentences)
and another training seed (1), not on what the chapter reports (seed 0). The chapter trains every arm at one rate,
3e-3, at which its bounds were measured; the table says how far that is from each arm's own best (0.004 to 0.012
nats for the batch-size runs, which all chose 5e-3; the filling-in models chose 3e-3). Prints one table: the
loss of each arm at each rate, the rate chosen, and the chapter's rate's distance from the best.

    .venv/bin/python benchmarks/pretraining.py [--quick] [--jobs N]
"""

from __future__ import annotations

import argparse
from functools import partial

from attn.data.language import make_text_corpus
from attn.training import over_runs
from attn.transformer import LanguageModel, LanguageModelConfig, train_language_model

RATES = (1e-3, 2e-3, 3e-3, 5e-3, 1e-2, 2e-2)
RATES_QUICK = (3e-3, 1e-2)
CHAPTER_RATE = 3e-3
SEED = 1  # the search's corpus and training seed; the chapter reports seed 0


def arms(corpus) -> dict[str, tuple[dict, str, int]]:
    """name -> (train_language_model keywords, history key, steps): the chapter's runs."""
    many = round(64 * float(((corpus.train >= 4) | (corpus.train == corpus.vocab.eos)).sum()) / len(corpus.train))
    few = round(64 / (many / 64))
    return {
        "every position, 64 sentences": ({"objective": "next", "batch_size": 64}, "next_loss", 100),
        f"every position, {few} sentences": ({"objective": "next", "batch_size": few}, "next_loss", 100),
        "one position, 64 sentences": ({"objective": "one", "batch_size": 64}, "next_loss", 100),
        f"one position, {many} sentences": ({"objective": "one", "batch_size": many}, "next_loss", 100),
        "GPT, 300 steps (filling in)": ({"objective": "next"}, "next_loss", 300),
        "masked, 600 steps (filling in)": ({"objective": "masked", "mask": corpus.mask}, "masked_loss", 600),
    }


def statistic(history, key: str, steps: int) -> float:
    """The chapter's statistic: the mean over steps 60-100 for the 100-step runs, else the last checkpoint."""
    if steps == 100:
        values = [c[key] for c in history.checkpoints if 60 <= c["step"] <= 100]
        return sum(values) / len(values)
    return history.checkpoints[-1][key]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="two rates, 20 steps (a smoke test)")
    parser.add_argument("--jobs", type=int, default=None, help="worker processes (default: the cores)")
    args = parser.parse_args()
    rates = RATES_QUICK if args.quick else RATES
    corpus = make_text_corpus(seed=SEED)
    config = LanguageModelConfig(len(corpus.vocab), d_model=64, num_heads=4, num_layers=2, d_ff=128, dropout=0.0,
                                 max_len=24)  # fmt: skip
    bert_config = LanguageModelConfig(**{**vars(config), "causal": False})
    table = arms(corpus)
    runs, keys = [], []
    for name, (kwargs, key, steps) in table.items():
        steps = 20 if args.quick else steps
        every = 10 if steps <= 100 else steps
        build = partial(LanguageModel, bert_config if kwargs["objective"] == "masked" else config)
        for lr in rates:
            runs.append(partial(train_language_model, build, corpus.train, steps=steps, lr=lr, seed=SEED,
                                every=every, valid=corpus.test, progress=False, **kwargs))  # fmt: skip
            keys.append((name, lr, key, steps))
    results = over_runs(runs, jobs=args.jobs, progress=True, desc="learning rates")
    loss: dict[tuple[str, float], float] = {}
    for (name, lr, key, steps), (_, history) in zip(keys, results, strict=True):
        loss[name, lr] = statistic(history, key, 100 if steps <= 100 and not args.quick else steps)
    print(f"held-out loss (corpus seed {SEED}, training seed {SEED}); rates searched: {', '.join(map(str, rates))}")
    print(f"{'arm':>32}" + "".join(f"{lr:>8.0e}" for lr in rates) + f"{'chosen':>9}{'3e-3 - best':>13}")
    for name in table:
        row = [loss[name, lr] for lr in rates]
        best = min(range(len(rates)), key=row.__getitem__)
        gap = loss[name, CHAPTER_RATE] - row[best] if CHAPTER_RATE in rates else float("nan")
        print(f"{name:>32}" + "".join(f"{v:8.3f}" for v in row) + f"{rates[best]:>9.0e}{gap:>13.3f}")


if __name__ == "__main__":
    main()
