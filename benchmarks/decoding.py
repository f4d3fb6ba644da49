"""Greedy decoding and beam search of chapter 8's translator: the library decodes only the sentences still being
written (an ended sentence only gets padding), against a reference loop that runs the whole batch through the
decoder at every step until every sentence has ended, as the library did before 2026-11-28.

Both re-read the whole prefix at every step (no key/value cache), so a step costs more the longer the prefix: a
few sentences that run long keep the whole batch in the loop. The model is the chapter's recipe stopped at step
200, which still writes some long translations, on its 1,000 held-out sentences. Prints, per decoder, the time of
the library and of the reference (best of ``--repeat``, one thread), their ratio, and whether the tokens agree.

    .venv/bin/python benchmarks/decoding.py [--quick] [--steps 200] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

import torch

from attn.data.translation import encode_batch, make_corpus
from attn.transformer import Transformer, train_transformer
from attn.transformer.translate import beam_search


@torch.no_grad()
def whole_batch_greedy(model: Transformer, source: torch.Tensor, bos: int, eos: int) -> torch.Tensor:
    """The reference: every sentence through the decoder at every step, ended ones included."""
    memory, _ = model.encode(source, need_weights=False)
    tokens = torch.full((source.shape[0], 1), bos, dtype=torch.long)  # (B, 1)
    done = torch.zeros(source.shape[0], dtype=torch.bool)
    for _ in range(model.config.max_len):
        logits = model.decode(tokens, memory, source, need_weights=False).logits[:, -1]  # (B, V)
        step = logits.argmax(-1).masked_fill(done, model.config.pad)
        tokens = torch.cat([tokens, step[:, None]], dim=1)
        done |= step == eos
        if bool(done.all()):
            break
    return tokens[:, 1:]


def best_time(run, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = run()
        times.append(time.perf_counter() - start)
    return min(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="training steps of the decoded model")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="30 training steps, 100 sentences (a smoke test)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    corpus = make_corpus(seed=0)
    pairs, steps = (corpus.test[:100], 30) if args.quick else (corpus.test, args.steps)
    model, _ = train_transformer(corpus, steps, every=steps, progress=False, seed=0)
    model.eval()
    source = encode_batch(pairs, corpus.source_vocab, corpus.target_vocab).source
    bos, eos = corpus.target_vocab.bos, corpus.target_vocab.eos
    with torch.no_grad():
        library, tokens = best_time(lambda: model.greedy_decode(source, bos, eos), args.repeat)
        reference, want = best_time(lambda: whole_batch_greedy(model, source, bos, eos), args.repeat)
        beams = {k: best_time(lambda k=k: beam_search(model, source, bos, eos, beam=k), args.repeat)[0] for k in (1, 4)}
    longest = int((tokens != model.config.pad).sum(1).max())
    print(f"chapter 8's translator at step {steps}, {len(pairs)} sentences, longest translation {longest} words,")
    print(f"1 thread, best of {args.repeat}\n")
    print("| decoder | library s | whole batch every step s | ratio | same tokens |")
    print("| --- | ---: | ---: | ---: | --- |")
    print(f"| greedy | {library:.3f} | {reference:.3f} | {library / reference:.2f} | {torch.equal(tokens, want)} |")
    for k, seconds in beams.items():
        print(f"| beam search, {k} beam{'s' if k > 1 else ''} | {seconds:.3f} | – | – | – |")


if __name__ == "__main__":
    main()
