"""The pretrained all-MiniLM-L6-v2 in attn's layers against transformers: loading, embedding, memory.

attn (``load_bert`` + ``load_tokenizer`` + ``embed_sentences``) against transformers (``AutoTokenizer`` +
``BertModel``, once with the attention implementation ``from_pretrained`` picks by default, once with
``attn_implementation="eager"``), both with the same batches of 32, truncation at 256 tokens, mean pooling over
real tokens and L2 normalisation, in float32 under ``torch.no_grad``.

Every measurement runs in a fresh subprocess (this script with ``--worker``), so that each load is a first
load in its process, as a user meets it; the four variants take turns within every repeat, so drift in the
load of a shared machine falls on all of them alike, after one untimed round that warms the page cache. Each
subprocess reports:

- import s: importing torch and the library (attn.pretrained; transformers' AutoTokenizer and BertModel);
- load s: the model and the tokenizer, ready to use; attn's includes the SHA-256 check of the 90 MB weights
  file, "attn-no-sha" loads with ``sha256=None``;
- embed s: the first ``embed`` of the sentences in the process (what load + embed adds up);
- load+embed s and its ratio to transformers with its default attention (the goal: at most 1.2);
- + import s: import + load + embed, and its ratio* likewise (what a fresh ``python script.py`` waits for);
- warm embed s: the median of a few more embeds of the same sentences in the same process;
- peak MiB: the peak resident memory that load + first embed add (``common.peak_extra_mib``: VmHWM reset after
  the imports), and max RSS MiB: the subprocess's whole peak (``getrusage``), Python and torch included.

Prints the table, whether the goal is met, the largest difference between the two libraries' embeddings and
(not with ``--quick``) the time to execute chapter 11 from a fresh kernel.
The sentences (100; 20 with ``--quick``) are real English sentences of different lengths and sentences of the
book's translation corpus joined in ones, twos and threes, all made deterministically.

    .venv/bin/python benchmarks/pretrained.py [--quick] [--threads N] [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, peak_extra_mib, time_notebook
from tqdm import tqdm

GOAL = 1.2  # (load + embed) attn / transformers at most
BATCH = 32
MAX_TOKENS = 256  # all-MiniLM-L6-v2's max_seq_length; attn.pretrained.load_tokenizer truncates there too
WARM_EMBEDS = 3

REAL = [
    "Hello.",
    "The weather is lovely today.",
    "It is a far, far better thing that I do, than I have ever done.",
    "Attention lets every word of a sentence look at every other word and decide how much each one matters.",
    "Where is the train station?",
    "She sold the old piano to a neighbour who had always wanted to learn to play.",
    "Neural machine translation by jointly learning to align and translate.",
    "Please remember to water the plants while I am away next week.",
    "The quick brown fox jumps over the lazy dog.",
    "A sentence embedding maps a whole sentence to one vector, so that sentences with similar meanings end "
    "up close together, whatever words they use.",
    "I think, therefore I am.",
    "Two roads diverged in a wood, and I took the one less travelled by, and that has made all the difference.",
    "The committee will publish its report after the summer recess.",
    "Can you recommend a good book about the history of mathematics?",
    "Rain.",
    "Mean pooling averages the encoder's outputs over the real tokens and ignores the padding.",
    "The museum is closed on Mondays, but the garden stays open until sunset every day of the week.",
    "He missed the bus, so he walked the four miles home in the rain and arrived soaked to the skin.",
    "Transformers replaced recurrence with self-attention, and training became far easier to parallelise.",
    "What time does the concert start?",
]


def make_sentences(n: int) -> list[str]:
    """``n`` varied English sentences: :data:`REAL`, then translation-corpus sentences joined 1, 2, 3 at a time."""
    from attn.data.translation import make_corpus

    corpus = make_corpus(n_train=3 * n, n_test=1, seed=0)
    sources = iter(" ".join(pair.source) for pair in corpus.train)
    sentences = list(REAL[:n])
    while len(sentences) < n:
        joined = [next(sources) for _ in range(len(sentences) % 3 + 1)]
        sentences.append(". ".join(s.capitalize() for s in joined) + ".")
    return sentences


# ---------------------------------------------------------------- one subprocess: one variant, measured once


def worker(variant: str, directory: Path, sentences_file: Path, threads: int, out: Path | None) -> dict:
    """Import, load and embed once (and a few warm embeds); returns the measurements (and saves the embeddings)."""
    start = time.perf_counter()
    import torch
    import torch.nn.functional as F

    if variant.startswith("attn"):
        from attn.pretrained import embed_sentences, load_bert, load_tokenizer
    else:
        import transformers
        from transformers import AutoTokenizer, BertModel

        transformers.utils.logging.set_verbosity_error()
        transformers.utils.logging.disable_progress_bar()
    import_s = time.perf_counter() - start
    torch.set_num_threads(threads)
    sentences = json.loads(sentences_file.read_text())
    state: dict = {}

    if variant.startswith("attn"):
        sha = {} if variant == "attn" else {"sha256": None}

        def load() -> None:
            state["model"], state["tokenizer"] = load_bert(directory, **sha), load_tokenizer(directory)

        def embed() -> torch.Tensor:
            return embed_sentences(state["model"], state["tokenizer"], sentences, batch_size=BATCH)

    else:
        attention = {} if variant == "transformers" else {"attn_implementation": "eager"}

        def load() -> None:
            state["tokenizer"] = AutoTokenizer.from_pretrained(str(directory))
            state["model"] = BertModel.from_pretrained(str(directory), **attention).eval()

        @torch.no_grad()
        def embed() -> torch.Tensor:
            out = []
            for i in range(0, len(sentences), BATCH):
                batch = state["tokenizer"](
                    sentences[i : i + BATCH], padding=True, truncation=True, max_length=MAX_TOKENS,
                    return_tensors="pt",
                )  # fmt: skip
                hidden = state["model"](**batch).last_hidden_state  # (B, T, d)
                keep = batch["attention_mask"][..., None].to(hidden.dtype)  # (B, T, 1)
                out.append(F.normalize((hidden * keep).sum(1) / keep.sum(1).clamp(min=1), dim=-1))
            return torch.cat(out)

    times: dict[str, float] = {}

    def load_and_embed() -> None:
        start = time.perf_counter()
        load()
        times["load_s"] = time.perf_counter() - start
        start = time.perf_counter()
        state["embeddings"] = embed()
        times["embed_s"] = time.perf_counter() - start

    peak = peak_extra_mib(load_and_embed)
    warm = []
    for _ in range(WARM_EMBEDS):
        start = time.perf_counter()
        embed()
        warm.append(time.perf_counter() - start)
    name = variant
    if variant.startswith("transformers"):
        name = f"transformers-{state['model'].config._attn_implementation}"
    if out is not None:
        torch.save(state["embeddings"], out)
    return {
        "name": name,
        "import_s": import_s,
        **times,
        "warm_embed_s": statistics.median(warm),
        "peak_mib": peak,
        "max_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,  # Linux: KiB
    }


def run_worker(variant: str, directory: Path, sentences_file: Path, threads: int, out: Path | None = None) -> dict:
    command = [sys.executable, __file__, "--worker", variant, "--model-dir", str(directory)]
    command += ["--sentences-file", str(sentences_file)]
    command += ["--threads", str(threads)] + (["--out", str(out)] if out else [])
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": str(threads)}
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    if result.returncode != 0:
        raise RuntimeError(f"the {variant} worker failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.splitlines()[-1])


# ---------------------------------------------------------------- the table


VARIANTS = ["attn", "attn-no-sha", "transformers", "transformers-eager"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="20 sentences, one round, no warm-up round")
    parser.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--repeats", type=int, default=5, help="rounds of fresh subprocesses (not with --quick)")
    parser.add_argument("--worker", choices=VARIANTS, help=argparse.SUPPRESS)
    parser.add_argument("--model-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--sentences-file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.model_dir, args.sentences_file, args.threads, args.out)))
        return

    import torch
    import transformers

    from attn.pretrained import ModelNotInstalledError, model_dir

    try:
        directory = model_dir()
    except ModelNotInstalledError as error:
        sys.exit(f"benchmarks/pretrained.py: {error}")
    n = 20 if args.quick else 100
    rounds, warmup = (1, 0) if args.quick else (args.repeats, 1)
    sentences = make_sentences(n)

    with tempfile.TemporaryDirectory() as tmp:
        sentences_file = Path(tmp) / "sentences.json"
        sentences_file.write_text(json.dumps(sentences))
        embeddings = {v: Path(tmp) / f"{v}.pt" for v in VARIANTS}
        runs: dict[str, list[dict]] = {v: [] for v in VARIANTS}
        with tqdm(total=(warmup + rounds) * len(VARIANTS), desc="fresh subprocesses", file=sys.stderr) as bar:
            for r in range(warmup + rounds):
                for variant in VARIANTS:
                    run = run_worker(
                        variant, directory, sentences_file, args.threads, embeddings[variant] if r == 0 else None
                    )
                    if r >= warmup:
                        runs[variant].append(run)
                    bar.update()
        vectors = {v: torch.load(path) for v, path in embeddings.items()}

    lengths = [len(s.split()) for s in sentences]
    rows = []
    for variant in VARIANTS:
        median = {
            key: statistics.median(run[key] for run in runs[variant]) for key in runs[variant][0] if key != "name"
        }
        median["total_s"] = statistics.median(run["load_s"] + run["embed_s"] for run in runs[variant])
        median["all_s"] = statistics.median(run["import_s"] + run["load_s"] + run["embed_s"] for run in runs[variant])
        rows.append((variant, runs[variant][0]["name"], median))
    reference = next(m for v, _, m in rows if v == "transformers")
    reference_name = next(name for v, name, _ in rows if v == "transformers")
    ratio = next(m for v, _, m in rows if v == "attn")["total_s"] / reference["total_s"]

    def mib(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.0f}"

    versions = f"torch {torch.__version__}, transformers {transformers.__version__}"
    print(f"\nall-MiniLM-L6-v2 sentence embeddings: {n} sentences ({min(lengths)}-{max(lengths)} words), "
          f"batch {BATCH}, float32, {args.threads} thread(s), {versions}")  # fmt: skip
    print(f"each row: median of {rounds} fresh subprocess(es), the variants in turn"
          + (f", after {warmup} untimed round (warm page cache)" if warmup else ""))  # fmt: skip
    print(f"goal: load+embed ratio attn/{reference_name} <= {GOAL}")
    print(f"{'model':>24} {'import s':>9} {'load s':>7} {'embed s':>8} {'load+embed s':>13} {'ratio':>6} "
          f"{'+ import s':>11} {'ratio*':>7} {'warm embed s':>13} {'peak MiB':>9} {'max RSS MiB':>12}")  # fmt: skip
    for _, name, m in rows:
        print(f"{name:>24} {m['import_s']:9.2f} {m['load_s']:7.3f} {m['embed_s']:8.3f} {m['total_s']:13.3f} "
              f"{m['total_s'] / reference['total_s']:6.2f} {m['all_s']:11.3f} {m['all_s'] / reference['all_s']:7.2f} "
              f"{m['warm_embed_s']:13.3f} {mib(m['peak_mib']):>9} {mib(m['max_rss_mib']):>12}")  # fmt: skip
    print("ratio*: of import + load + embed, what a fresh `python script.py` waits for")
    print(f"goal met: {'yes' if ratio <= GOAL else 'no'} (attn/{reference_name} = {ratio:.2f}, goal <= {GOAL})")
    for variant in VARIANTS[1:]:
        name = next(name for v, name, _ in rows if v == variant)
        diff = float((vectors["attn"] - vectors[variant]).abs().max())
        print(f"same embeddings: max |attn - {name}| = {diff:.2e}")
    if not args.quick:
        path = ROOT / "notebooks" / "11_pretrained.ipynb"
        print(f"\ntime to execute chapter 11 from a fresh kernel: {time_notebook(path):.1f} s (goal: at most 120 s)")


if __name__ == "__main__":
    main()
