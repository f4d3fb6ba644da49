"""attn.transformer against torch.nn: multi-head attention forward+backward, and training throughput.

Prints, measured in one run:

1. ``attn.blocks.MultiHeadAttention`` vs ``torch.nn.MultiheadAttention(batch_first=True)`` with the same
   (copied) weights, causal self-attention on x ``(B, T, d_model)``, forward+backward: "weights" rows keep the
   per-head weights (ours ``need_weights=True``; torch ``need_weights=True, average_attn_weights=False``),
   "fused" rows do not (``need_weights=False`` in both); median times (the two timed in alternation), their
   ratio and the peak extra memory of one forward+backward;
2. training the chapter's encoder-decoder (d_model 64, 4 heads, 2+2 post-LN layers, d_ff 256, dropout 0.1)
   against ``torch.nn.Transformer`` (without the final LayerNorms a post-LN stack does not have) with the same
   sizes, embeddings, positions, output layer and masks (checked once to compute the same function), on the
   same batches of the translation corpus (batch 64, Adam lr 1e-3, gradient clipping 1.0 as in
   ``attn.training.fit``): steps and target tokens per second and the peak memory a few steps add; the attn model
   with ``need_weights=True`` shows what keeping the weights costs;
3. layer normalization, forward+backward: ``attn.blocks.layer_norm`` (the equation written out, three passes over
   the tensor) and ``attn.blocks.LayerNorm`` (the module the models use: torch's fused kernel) against
   ``torch.nn.LayerNorm``, at the sizes of chapters 8, 9 and 13 (checked once to compute the same function);
4. (not with ``--quick``) the time to execute chapters 5-8 from a fresh kernel.

    .venv/bin/python benchmarks/transformer.py [--quick] [--threads N] [--steps N]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial

import torch
from common import ROOT, paired_medians, peak_extra_mib, time_notebook
from torch import nn
from tqdm import tqdm

from attn.blocks import LayerNorm, MultiHeadAttention, layer_norm, sinusoidal_positions
from attn.data.translation import Batch, make_corpus
from attn.data.translation import encode_batch as encode
from attn.masks import causal_mask
from attn.training import seeded
from attn.transformer import Transformer, TransformerConfig

GOALS = {"weights": 1.1, "fused": 1.05, "training": 0.9}  # attn / torch time at most; attn / torch tokens/s at least
# (B, T, d_model, h)
SIZES = [(32, 32, 64, 4), (16, 64, 128, 8), (8, 128, 256, 8), (4, 256, 256, 8), (2, 512, 512, 8)]
SIZES_QUICK = [(8, 16, 32, 4), (4, 32, 64, 4)]
BATCH = 64


def copy_weights(ours: MultiHeadAttention, theirs: nn.MultiheadAttention) -> None:
    """torch packs W_Q, W_K, W_V into one ``in_proj_weight`` of shape (3 d_model, d_model)."""
    with torch.no_grad():
        theirs.in_proj_weight.copy_(torch.cat([ours.W_q.weight, ours.W_k.weight, ours.W_v.weight]))
        theirs.in_proj_bias.copy_(torch.cat([ours.W_q.bias, ours.W_k.bias, ours.W_v.bias]))
        theirs.out_proj.weight.copy_(ours.W_o.weight)
        theirs.out_proj.bias.copy_(ours.W_o.bias)


def step(module: nn.Module, x: torch.Tensor, mask: torch.Tensor, need_weights: bool) -> Callable[[], None]:
    """One forward+backward of self-attention on x; ``mask`` in the module's convention (ours: True = may
    attend; torch.nn.MultiheadAttention: True = masked out)."""

    def run() -> None:
        x.grad = None
        module.zero_grad(set_to_none=True)
        if isinstance(module, MultiHeadAttention):
            out = module(x, x, x, mask, need_weights=need_weights)[0]
        else:
            out = module(x, x, x, attn_mask=mask, need_weights=need_weights, average_attn_weights=False)[0]
        out.sum().backward()

    return run


def attention_table(sizes: list[tuple[int, int, int, int]], repeats: int) -> list[tuple]:
    rows = []
    for B, T, d_model, h in tqdm(sizes, desc="attention sizes", file=sys.stderr):
        with seeded(0):
            ours = MultiHeadAttention(d_model, h)
        theirs = nn.MultiheadAttention(d_model, h, batch_first=True)
        copy_weights(ours, theirs)
        x = torch.randn(B, T, d_model, generator=torch.Generator().manual_seed(0), requires_grad=True)
        mask = causal_mask(T)  # True = may attend
        out_ours = ours(x, x, x, mask)[0]
        out_theirs = theirs(x, x, x, attn_mask=~mask, need_weights=False)[0]
        if not torch.allclose(out_ours, out_theirs, atol=1e-4, rtol=1e-4):
            raise AssertionError(f"outputs differ at {(B, T, d_model, h)}: the two modules are not the same function")

        for path, need in (("weights", True), ("fused", False)):
            run_ours, run_theirs = step(ours, x, mask, need), step(theirs, x, ~mask, need)
            t_ours, t_theirs = paired_medians([run_ours, run_theirs], repeats)
            m_ours, m_theirs = peak_extra_mib(run_ours), peak_extra_mib(run_theirs)
            rows.append(((B, T, d_model, h), path, t_ours, t_theirs, m_ours, m_theirs))
    return rows


NORM_SIZES = [(64, 12, 64), (100, 37, 32), (32, 37, 32)]  # (B, T, d): a translation batch, the ViTs' 36 + 1 tokens


def _forward_backward(f: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> None:
    f(x).sum().backward()


def norm_table(sizes: list[tuple[int, int, int]], repeats: int) -> list[tuple]:
    """Forward+backward of the equation, the module and nn.LayerNorm on the same x, gain and bias."""
    rows = []
    for B, T, d in sizes:
        x = torch.randn(B, T, d, generator=torch.Generator().manual_seed(0), requires_grad=True)
        ours, theirs = LayerNorm(d), nn.LayerNorm(d)
        with torch.no_grad():
            for p in (ours.gamma, ours.beta):
                p.normal_(generator=torch.Generator().manual_seed(1))
            theirs.weight.copy_(ours.gamma)
            theirs.bias.copy_(ours.beta)
        equation = layer_norm(x, ours.gamma, ours.beta)
        if not (torch.allclose(ours(x), theirs(x), atol=1e-5) and torch.allclose(equation, theirs(x), atol=1e-5)):
            raise AssertionError(f"layer norms differ at {(B, T, d)}: not the same function")

        norms = (partial(layer_norm, gamma=ours.gamma, beta=ours.beta), ours, theirs)
        runs = [partial(_forward_backward, norm, x) for norm in norms]
        rows.append(((B, T, d), *paired_medians(runs, repeats)))
    return rows


class TorchTransformer(nn.Module):
    """``torch.nn.Transformer`` between the same embeddings, positions and output layer as
    :class:`attn.transformer.Transformer`. nn.Transformer always ends its encoder and decoder with a
    LayerNorm, which a post-LN stack does not have (the paper's, and ours): they are removed, so that both
    models compute the same function."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        c = self.config = config
        self.source_tokens = nn.Embedding(c.source_vocab, c.d_model, padding_idx=c.pad)
        self.target_tokens = nn.Embedding(c.target_vocab, c.d_model, padding_idx=c.pad)
        for table in (self.source_tokens, self.target_tokens):
            nn.init.normal_(table.weight, std=c.d_model**-0.5)
            with torch.no_grad():
                table.weight[c.pad].zero_()
        self.register_buffer("positions", sinusoidal_positions(c.max_len, c.d_model), persistent=False)
        self.dropout = nn.Dropout(c.dropout)
        self.transformer = nn.Transformer(
            d_model=c.d_model, nhead=c.num_heads, num_encoder_layers=c.num_layers, num_decoder_layers=c.num_layers,
            dim_feedforward=c.d_ff, dropout=c.dropout, activation=c.activation, batch_first=True,
            norm_first=c.norm_first,
        )  # fmt: skip
        self.transformer.encoder.norm = self.transformer.decoder.norm = None
        self.out = nn.Linear(c.d_model, c.target_vocab)

    def embed(self, table: nn.Embedding, tokens: torch.Tensor) -> torch.Tensor:
        return self.dropout(table(tokens) * math.sqrt(self.config.d_model) + self.positions[: tokens.shape[1]])

    def forward(self, source: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        source_pad, target_pad = source == self.config.pad, target == self.config.pad  # True = masked out
        future = ~causal_mask(target.shape[1])  # True = masked out
        x = self.transformer(
            self.embed(self.source_tokens, source), self.embed(self.target_tokens, target), tgt_mask=future,
            src_key_padding_mask=source_pad, tgt_key_padding_mask=target_pad, memory_key_padding_mask=source_pad,
        )  # fmt: skip
        return self.out(x)

    @torch.no_grad()
    def load(self, ours: Transformer) -> TorchTransformer:
        """Copy the weights of ``ours`` (for checking that both compute the same function)."""
        self.source_tokens.weight.copy_(ours.source_embedding.tokens.weight)
        self.target_tokens.weight.copy_(ours.target_embedding.tokens.weight)
        self.out.load_state_dict(ours.out.state_dict())
        pairs = [*zip(ours.encoder.layers, self.transformer.encoder.layers, strict=True),
                 *zip(ours.decoder.layers, self.transformer.decoder.layers, strict=True)]  # fmt: skip
        for a, b in pairs:
            copy_weights(a.self_attention, b.self_attn)
            if hasattr(a, "cross_attention"):
                copy_weights(a.cross_attention, b.multihead_attn)
            b.linear1.load_state_dict(a.feed_forward.W_1.state_dict())
            b.linear2.load_state_dict(a.feed_forward.W_2.state_dict())
            for i in (1, 2, 3):
                if hasattr(a, f"norm{i}"):
                    norm = getattr(b, f"norm{i}")
                    norm.weight.copy_(getattr(a, f"norm{i}").gamma)
                    norm.bias.copy_(getattr(a, f"norm{i}").beta)
        return self


def check_same_function(config: TransformerConfig, batch: Batch) -> None:
    """With the same weights and no dropout, both models give the same logits at every real target position."""
    with seeded(0):
        ours = Transformer(config).eval()
    theirs = TorchTransformer(config).load(ours).eval()
    keep = batch.target_in != config.pad
    ours_logits = ours(batch.source, batch.target_in, need_weights=False).logits[keep]
    if not torch.allclose(ours_logits, theirs(batch.source, batch.target_in)[keep], atol=1e-4, rtol=1e-4):
        raise AssertionError("attn.transformer.Transformer and the torch.nn.Transformer wrapper differ")


def training_table(steps: int, rounds: int, warmup: int) -> tuple[list[tuple], int]:
    """Each model trains ``rounds`` blocks of ``steps`` steps on the same batches, the models in turn within
    every round; steps and target tokens per second are the medians over the blocks."""
    corpus = make_corpus(seed=0)
    config = TransformerConfig(len(corpus.source_vocab), len(corpus.target_vocab), pad=corpus.target_vocab.pad)
    g = torch.Generator().manual_seed(0)
    n_batches = warmup + rounds * steps
    batches: list[Batch] = []
    for _ in range(n_batches):
        chosen = torch.randint(len(corpus.train), (BATCH,), generator=g).tolist()
        batches.append(encode([corpus.train[i] for i in chosen], corpus.source_vocab, corpus.target_vocab))
    tokens = [int((b.target_out != config.pad).sum()) for b in batches]
    loss_of = nn.CrossEntropyLoss(ignore_index=config.pad)
    check_same_function(config, batches[0])

    def ours(need_weights: bool) -> Callable[[nn.Module, Batch], torch.Tensor]:
        return lambda model, b: model(b.source, b.target_in, need_weights=need_weights).logits

    def theirs(model: nn.Module, b: Batch) -> torch.Tensor:
        return model(b.source, b.target_in)

    cases = [
        ("attn", Transformer, ours(False)),
        ("torch", TorchTransformer, theirs),
        ("attn+weights", Transformer, ours(True)),
    ]
    runs = []
    for name, cls, logits_of in cases:
        with seeded(0):
            model = cls(config)
        model.train()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

        def train(chunk: list[Batch], model=model, optimizer=optimizer, logits_of=logits_of) -> None:
            for b in chunk:
                optimizer.zero_grad(set_to_none=True)
                logits = logits_of(model, b)
                loss = loss_of(logits.flatten(0, 1), b.target_out.flatten())
                loss.backward()
                nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()

        with seeded(0):
            train(batches[:warmup])  # first-call allocations and Adam's state are not timed
        runs.append((name, train))

    seconds: dict[str, list[float]] = {name: [] for name, _ in runs}
    block_tokens = []
    with seeded(0), tqdm(total=rounds * len(runs), desc="training rounds", file=sys.stderr) as bar:
        for r in range(rounds):
            chunk = slice(warmup + r * steps, warmup + (r + 1) * steps)
            block_tokens.append(sum(tokens[chunk]))
            for name, train in runs:
                start = time.perf_counter()
                train(batches[chunk])
                seconds[name].append(time.perf_counter() - start)
                bar.update()

    rows = []
    for name, train in runs:
        steps_per_s = statistics.median(steps / t for t in seconds[name])
        tokens_per_s = statistics.median(n / t for n, t in zip(block_tokens, seconds[name], strict=True))
        with seeded(0):
            peak = peak_extra_mib(lambda train=train: train(batches[warmup : warmup + min(steps, 5)]))
        rows.append((name, steps_per_s, tokens_per_s, peak))
    return rows, sum(tokens) // len(tokens)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="two small sizes, two repeats, a few steps (a smoke test)")
    parser.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--steps", type=int, default=60, help="timed training steps per model (in 10 blocks)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    sizes = SIZES_QUICK if args.quick else SIZES
    repeats = 2 if args.quick else 21
    rounds = 1 if args.quick else 10
    steps, warmup = (3, 2) if args.quick else (max(1, args.steps // rounds), 10)

    attention = attention_table(sizes, repeats)
    training, tokens_per_batch = training_table(steps, rounds, warmup)
    norms = norm_table(NORM_SIZES, repeats)

    def mib(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.1f}"

    threads = f"{args.threads} thread(s), torch {torch.__version__}"
    print(f"\nmulti-head self-attention, causal mask, forward+backward, float32, {threads}, median of {repeats}")
    print(f"goals: ratio attn/torch <= {GOALS['weights']} (weights), <= {GOALS['fused']} (fused)")
    print(f"{'B, T, d_model, h':>18} {'path':>8} {'attn ms':>9} {'torch ms':>9} {'ratio':>6} "
          f"{'attn MiB':>9} {'torch MiB':>9}")  # fmt: skip
    for size, path, t_a, t_t, m_a, m_t in attention:
        print(f"{str(size)[1:-1]:>18} {path:>8} {1e3 * t_a:9.2f} {1e3 * t_t:9.2f} {t_a / t_t:6.2f} "
              f"{mib(m_a):>9} {mib(m_t):>9}")  # fmt: skip

    torch_tokens = next(row[2] for row in training if row[0] == "torch")
    print(f"\ntraining, d_model 64, 4 heads, 2+2 post-LN layers, d_ff 256, dropout 0.1, batch {BATCH} "
          f"(~{tokens_per_batch} target tokens), Adam, {threads}, median of {rounds} block(s) of {steps} steps "
          f"after {warmup} warm-up steps")  # fmt: skip
    print(f"goal: tokens/s ratio attn/torch >= {GOALS['training']}")
    print(f"{'model':>18} {'steps/s':>8} {'tokens/s':>9} {'ratio':>6} {'peak MiB':>9}")
    for name, steps_per_s, tokens_per_s, peak in training:
        print(f"{name:>18} {steps_per_s:8.2f} {tokens_per_s:9.0f} {tokens_per_s / torch_tokens:6.2f} {mib(peak):>9}")

    print(f"\nlayer normalization, forward+backward, float32, {threads}, median of {repeats}")
    print(f"{'B, T, d':>14} {'equation ms':>12} {'module ms':>10} {'torch ms':>9} {'equation/torch':>15} "
          f"{'module/torch':>13}")  # fmt: skip
    for size, t_eq, t_mod, t_torch in norms:
        print(f"{str(size)[1:-1]:>14} {1e3 * t_eq:12.3f} {1e3 * t_mod:10.3f} {1e3 * t_torch:9.3f} "
              f"{t_eq / t_torch:15.2f} {t_mod / t_torch:13.2f}")  # fmt: skip

    if not args.quick:
        print("\nchapters 5-8, executed from a fresh kernel (kernel start-up included)")
        for path in sorted((ROOT / "notebooks").glob("0[5-8]_*.ipynb")):
            print(f"{path.name:>24}: {time_notebook(path):.1f} s")


if __name__ == "__main__":
    main()
