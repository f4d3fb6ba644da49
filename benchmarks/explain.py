"""Which input does an answer rest on: attention against attributions, scored against the truth, over seeds.

Three models are trained per seed (as in chapter 13): the memory network on simulated bAbI task 2 (two supporting
facts; 1,000 training and 1,000 test questions; 20 epochs of linear start, then 40 with the softmax, the rate halved
every 10), the additive-attention translator (400 steps of 64 on the chapter's corpus) and the hybrid ViT (conv stem,
no position embeddings, the chapter's sizes; 1,000 steps of 64 on 3,000 "what shape is the <colour> object?"
scenes). Each is explained on up to ``--examples`` held-out examples: those it answers right (the memory network,
the ViT) or, for the translator, one aligned target word per sentence (teacher forcing). Every map gives each input
element (a sentence in memory, a source word, a patch) a score:

- the model's own attention (the memory network: the last hop, and the hops summed; the translator: the step's
  weights; the ViT: the class token's row in the last layer, and attention rollout);
- attention x gradient, ``(A ⊙ ∂p/∂A)⁺`` (Chefer et al. 2021's relevance for one layer; the ViT's heads averaged);
- gradient x input, ``∂p/∂s_i`` at ``s = 1`` (s_i scales element i's input vector);
- occlusion, ``p(all) - p(all but i)``; and random scores, the baseline every map must beat.

Table 1 per model, mean ± sd over seeds: the share of the map's positive mass on the truth (the supporting sentences;
the source word aligned to the target word; the tokens whose receptive field holds a pixel of the asked object), the
rank of the best true element
(1 = first; ties count against the map), how often it is first, the area under the deletion curve (the answer's
probability as elements are removed best first, as a fraction of the full probability: smaller = more faithful), the
share of the probability left once as many elements are removed as the truth has (the row "the truth itself" removes
exactly the truth: the fair comparison with it), the milliseconds to compute the map for the whole batch (the
faster of two runs, on the last seed's model), then the average precision of the map's order against the truth and
the chance-corrected mass (``attn.analysis.average_precision``, ``excess_mass``).
Table 2, the memory network's last hop put to Jain & Wallace's (2019) tests: the Jensen-Shannon divergence of the
farthest attention found (``attn.analysis.adversarial_attention``, ``--adversary-steps`` Adam steps) that keeps the
answer distribution within 0.01 total variation (mean, median, share above 0.3), that attention's mass on the
supporting sentences against the model's own, the total variation of the answer when the weights are shuffled among
the sentences (median over 10 shuffles of each example), and the seconds each test took.
Nothing is written to disk.

    .venv/bin/python benchmarks/explain.py [--seeds N] [--examples N] [--models memn2n translator vit]
                                           [--adversary-steps N] [--threads N] [--quick]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial

import torch
from tqdm import tqdm

import attn.analysis as an
from attn.data import make_corpus
from attn.data.babi import examples
from attn.data.babi_world import simulate
from attn.data.scenes import scene_splits
from attn.data.translation import encode_batch
from attn.memn2n import explain as memn2n_explain
from attn.memn2n import train_memn2n
from attn.seq2seq import explain as seq2seq_explain
from attn.seq2seq import train_translator
from attn.vision import ViT, ViTConfig, accuracy, attention_rollout, train_on_scenes
from attn.vision import explain as vision_explain

MODELS = ("memn2n", "translator", "vit")
TITLES = {
    "memn2n": "memory network, bAbI task 2 (the truth: the supporting sentences)",
    "translator": "additive translator (the truth: the source word aligned to the target word)",
    "vit": "hybrid ViT, what shape (the truth: the tokens that see the asked object)",
}
MEMN2N_RECIPE = {"linear_start": 20, "epochs": 40, "decay_every": 10}
SMALL_VIT = {"d_model": 32, "num_heads": 2, "d_ff": 64, "stem": "conv", "positions": False}
COLUMNS = ("mass", "rank", "top1", "deletion", "left")


class Sizes:
    """The budgets of a full run, or of a smoke run (``--quick``)."""

    def __init__(self, quick: bool, examples: int, adversary_steps: int):
        self.quick = quick
        self.examples = min(examples, 40) if quick else examples
        self.babi = (200, 200) if quick else (1000, 1000)  # training, test questions
        self.memn2n = {"linear_start": 1, "epochs": 2, "decay_every": 1} if quick else MEMN2N_RECIPE
        self.corpus = (2_000, 300) if quick else (20_000, 1_000)
        self.translator_steps = 20 if quick else 400
        self.scenes = (300, 200) if quick else (3_000, 1_000)
        self.vit_steps = 20 if quick else 1_000
        self.adversary_steps = 20 if quick else adversary_steps
        self.permutations = 2 if quick else 10


def timed(fn: Callable[[], object]) -> tuple[object, float]:
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def right_first(right: torch.Tensor, n: int) -> tuple[torch.Tensor, bool]:
    """The first ``n`` examples answered right, or (a model that answers none right, as in a smoke run) the first
    ``n`` of all; and whether they are the right ones."""
    chosen = right.nonzero().squeeze(1)
    return (chosen[:n], True) if len(chosen) else (torch.arange(min(n, len(right))), False)


def gradient_maps(answer: an.Answer, valid: torch.Tensor) -> dict[str, Callable[[], torch.Tensor]]:
    """The maps that need only the answer function: gradient x input and occlusion."""
    return {
        "grad x input": lambda: an.gradient_x_input(answer, valid),
        "occlusion": lambda: an.occlusion(answer, valid),
    }


def memn2n_run(seed: int, sizes: Sizes) -> dict:
    n_train, n_test = sizes.babi
    train, test = examples(simulate(2, n_train, seed=1)), examples(simulate(2, n_test, seed=2))
    run, seconds = timed(lambda: train_memn2n(train, seed=seed, progress=False, **sizes.memn2n))
    model = run.model.eval()
    data = run.tensors(test)
    with torch.no_grad():
        right = model(data.story, data.query, data.lengths).logits.argmax(-1) == data.answer
    index, all_right = right_first(right, sizes.examples)
    data = data[index]
    valid = torch.arange(data.story.shape[1])[None, :] < data.lengths[:, None]
    truth = memn2n_explain.supporting_mask(data) & valid
    keep = truth.any(-1)  # a question whose supporting sentences fell out of memory has no truth to rank
    data, valid, truth = data[keep.nonzero().squeeze(1)], valid[keep], truth[keep]
    answer = partial(memn2n_explain.answer_probability, model, data)

    def hops() -> torch.Tensor:
        with torch.no_grad():
            return model(data.story, data.query, data.lengths).hop_attention  # (B, K, M)

    def attention_x_gradient() -> torch.Tensor:
        own = hops().requires_grad_(True)
        return an.attention_x_gradient(own, memn2n_explain.answer_probability(model, data, attention=own))

    maps = {
        "last hop": lambda: hops()[:, -1],
        "hops summed": lambda: hops().sum(1),
        "A x grad last": lambda: attention_x_gradient()[:, -1],
        "A x grad hops": lambda: attention_x_gradient().sum(1),
        **gradient_maps(answer, valid),
    }
    own = hops()
    last = own[:, -1]
    readout = partial(memn2n_explain.answer_distribution, model, data, own)
    (adversary, jsd), adversary_s = timed(
        lambda: an.adversarial_attention(readout, last, valid, steps=sizes.adversary_steps, seed=seed)
    )
    g = torch.Generator().manual_seed(seed + 200)
    moved, permutation_s = timed(lambda: an.permuted_attention(readout, last, valid, sizes.permutations, g))
    jain_wallace = {
        "JSD mean": float(jsd.mean()),
        "JSD median": float(jsd.median()),
        "JSD > 0.3": float((jsd > 0.3).float().mean()),
        "own mass on support": float(an.mass_on_truth(last, truth, valid).mean()),
        "adversary mass on support": float(an.mass_on_truth(adversary, truth, valid).mean()),
        "permuted TVD median": float(moved.median()),
        "adversary s": adversary_s,
        "permutation s": permutation_s,
    }
    note = f"test error {run.error(test):.1%}, trained in {seconds:.0f} s"
    return {"answer": answer, "valid": valid, "truth": truth, "maps": maps, "right": all_right, "note": note,
            "jain_wallace": jain_wallace}  # fmt: skip


def translator_run(seed: int, sizes: Sizes) -> dict:
    corpus = make_corpus(*sizes.corpus, seed=0)
    steps = sizes.translator_steps
    (model, _), seconds = timed(
        lambda: train_translator(corpus, "additive", steps, seed=seed, every=steps, progress=False)
    )
    model.eval()
    pairs = corpus.test[: sizes.examples]
    batch = encode_batch(pairs, corpus.source_vocab, corpus.target_vocab)
    rng = torch.Generator().manual_seed(1)  # the same target word of each sentence for every seed
    chosen = []
    for pair in pairs:
        aligned = [t for t, s in enumerate(pair.alignment) if s is not None]
        chosen.append(aligned[int(torch.randint(len(aligned), (1,), generator=rng))])
    step = torch.tensor(chosen)
    valid = torch.arange(batch.source.shape[1])[None, :] < batch.source_lengths[:, None]
    truth = torch.zeros_like(valid)
    for b, (pair, t) in enumerate(zip(pairs, chosen, strict=True)):
        truth[b, pair.alignment[t]] = True
    answer = partial(seq2seq_explain.word_probability, model, batch, step)
    rows = torch.arange(len(step))

    def attention() -> torch.Tensor:
        with torch.no_grad():
            return model(batch.source, batch.source_lengths, batch.target_in).alignments[rows, step]  # (B, S)

    def attention_x_gradient() -> torch.Tensor:
        weights, p = seq2seq_explain.word_attention(model, batch, step)
        return torch.stack(an.attention_x_gradient(weights, p), dim=1)[rows, step]

    maps = {"attention": attention, "A x grad": attention_x_gradient, **gradient_maps(answer, valid)}
    with torch.no_grad():
        p = answer(None)
    note = f"p(reference word) {float(p.mean()):.3f} (> 0.5 for {float((p > 0.5).float().mean()):.0%}), "
    note += f"trained in {seconds:.0f} s"
    return {"answer": answer, "valid": valid, "truth": truth, "maps": maps, "right": None, "note": note}


def vit_run(seed: int, sizes: Sizes) -> dict:
    train, held_out = scene_splits(*sizes.scenes, seed=seed)
    build = partial(ViT, ViTConfig(**SMALL_VIT))
    (model, _), seconds = timed(lambda: train_on_scenes(build, train, sizes.vit_steps, seed=seed, progress=False))
    model.eval()
    scenes = held_out[: 2 * sizes.examples]
    with torch.no_grad():
        right = model(scenes.images, scenes.question).logits.argmax(-1) == scenes.answer
    index, all_right = right_first(right, sizes.examples)
    scenes = scenes[index]
    valid = torch.ones(len(scenes), model.grid**2, dtype=torch.bool)
    truth = vision_explain.object_tokens(model, scenes)  # the tokens whose receptive field holds the asked object
    answer = partial(vision_explain.answer_probability, model, scenes)

    def attention() -> tuple[torch.Tensor, ...]:
        with torch.no_grad():
            return model(scenes.images, scenes.question).attention

    def attention_x_gradient() -> torch.Tensor:
        out, p = vision_explain.answer_output(model, scenes)
        return an.attention_x_gradient(out.attention, p)[-1].mean(1)[:, 0, 1:]  # the class token's row

    maps = {
        "last layer": lambda: attention()[-1].mean(1)[:, 0, 1:],
        "rollout": lambda: attention_rollout(attention())[:, 0, 1:],
        "A x grad last": attention_x_gradient,
        **gradient_maps(answer, valid),
    }
    note = f"held-out accuracy {accuracy(model, held_out):.1%}, trained in {seconds:.0f} s"
    return {"answer": answer, "valid": valid, "truth": truth, "maps": maps, "right": all_right, "note": note}


RUNS = {"memn2n": memn2n_run, "translator": translator_run, "vit": vit_run}


def score(run: dict, seed: int) -> dict[str, dict[str, float]]:
    """Every map of one trained model scored: mass, rank, top-1, deletion area and the seconds it took."""
    maps = {
        **run["maps"],
        "the truth itself": lambda: run["truth"].float(),  # its deletion: the truth first, then by index
        "random": lambda: an.random_map(run["valid"], torch.Generator().manual_seed(seed + 100)),
    }
    scores = {}
    for name, make in maps.items():
        (scores_map, first), (_, second) = timed(make), timed(make)  # the faster of two: no first-call costs
        seconds = min(first, second)
        s = an.score_map(run["answer"], scores_map, run["truth"], run["valid"])
        scores[name] = {
            "mass": s.mass,
            "rank": s.rank,
            "top1": s.top1,
            "deletion": s.deletion,
            "left": s.left,
            "s": seconds,
            "ap": s.ap,
            "excess": s.excess,
        }
    return scores


def mean_sd(values: list[float], digits: int) -> str:
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):.{digits}f} ± {sd:.{digits}f}"


def print_table(name: str, seeds: list[int], runs: list[dict], scores: list[dict]) -> None:
    B = len(runs[-1]["valid"])
    n = runs[-1]["valid"].sum(-1).float().mean()
    which = {True: "answered right", False: "not all answered right (none was)", None: "one aligned word each"}
    print(f"\n{TITLES[name]}: {B} held-out examples ({which[runs[-1]['right']]}), {n:.1f} elements each on average")
    for seed, run in zip(seeds, runs, strict=True):
        print(f"  seed {seed}: {run['note']}")
    print(f"mean ± sd over {len(seeds)} seed(s); ms: computing the map for the {B} examples (last seed, best of 2)")
    print(
        "| map | mass on truth | rank of truth | top-1 | deletion area | left after |truth| removed | ms | AP"
        " | excess |"
    )
    print("| --- |" + " ---: |" * 8)
    for map_name in scores[0]:
        cells = [mean_sd([s[map_name][c] for s in scores], 2 if c == "rank" else 3) for c in COLUMNS]
        extra = [mean_sd([s[map_name][c] for s in scores], 3) for c in ("ap", "excess")]
        print(f"| {map_name} | {' | '.join(cells)} | {1e3 * scores[-1][map_name]['s']:.1f} | {' | '.join(extra)} |")


def print_jain_wallace(seeds: list[int], runs: list[dict], sizes: Sizes) -> None:
    rows = [run["jain_wallace"] for run in runs]
    print(
        f"\nmemory network, its last hop put to Jain & Wallace's tests (adversary: {sizes.adversary_steps} Adam steps, "
        f"output within 0.01 TVD; {sizes.permutations} shuffles per example); mean ± sd over {len(seeds)} seed(s)"
    )
    print("| measure | value |")
    print("| --- | ---: |")
    for key in rows[0]:
        if key.endswith(" s"):
            print(f"| {key[:-2]} seconds | {mean_sd([r[key] for r in rows], 2)} |")
        else:
            print(f"| {key} | {mean_sd([r[key] for r in rows], 3)} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=None, help="seeds 0..N-1 (default 3; 1 with --quick)")
    parser.add_argument("--examples", type=int, default=300, help="held-out examples explained per model")
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--adversary-steps", type=int, default=200, help="Adam steps of the adversary (J&W: 500)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the chapters use 1)")
    parser.add_argument("--quick", action="store_true", help="tiny data and budgets, 40 examples (a smoke test)")
    args = parser.parse_args()
    if min(args.seeds or 1, args.examples, args.adversary_steps) < 1:
        parser.error("--seeds, --examples and --adversary-steps must be at least 1")
    torch.set_num_threads(args.threads)
    sizes = Sizes(args.quick, args.examples, args.adversary_steps)
    seeds = list(range(args.seeds if args.seeds is not None else 1 if args.quick else 3))
    print(f"seeds {seeds}, {args.threads} thread(s), torch {torch.__version__}" + (" (quick)" if args.quick else ""))
    for name in args.models:
        runs, scores = [], []
        for seed in tqdm(seeds, desc=name, file=sys.stderr):
            runs.append(RUNS[name](seed, sizes))
            scores.append(score(runs[-1], seed))
        print_table(name, seeds, runs, scores)
        if name == "memn2n":
            print_jain_wallace(seeds, runs, sizes)


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    main()
