"""The training loop, and the chapter's claim: attention beats the fixed-vector bottleneck on long sentences."""

import pytest
import torch
from torch import nn

from attn.data import make_corpus
from attn.train import evaluate_translation, fit, seeded, train_translator


def test_seeded_builds_the_same_model_and_leaves_global_random_state_alone():
    state = torch.random.get_rng_state()
    with seeded(7):
        a = nn.Linear(3, 3)
    with seeded(7):
        b = nn.Linear(3, 3)
    assert torch.equal(a.weight, b.weight)
    assert torch.equal(torch.random.get_rng_state(), state)


def test_fit_lowers_the_loss_and_records_checkpoints():
    with seeded(0):
        model = nn.Linear(2, 1)
    x = torch.randn(64, 2, generator=torch.Generator().manual_seed(0))
    y = x @ torch.tensor([[2.0], [-1.0]])
    history = fit(model, lambda m, step: ((m(x) - y) ** 2).mean(), 200, lr=0.05,
                  checkpoint=lambda m, step: {"w": m.weight.detach().clone()}, every=50, progress=False)  # fmt: skip
    assert len(history.loss) == 200 and history.loss[-1] < 0.01 * history.loss[0]
    assert [c["step"] for c in history.checkpoints] == [50, 100, 150, 200]
    assert torch.allclose(history.checkpoints[-1]["w"], torch.tensor([[2.0, -1.0]]), atol=0.05)
    with pytest.raises(ValueError, match="steps must be a positive int, got 0"):
        fit(model, lambda m, step: m(x).sum(), 0)


def test_a_small_trained_translator_beats_the_no_attention_baseline_on_long_sentences():
    corpus = make_corpus(5000, 300, seed=0)
    long = [p for p in corpus.test if len(p.source) >= 10]
    scores = {}
    for attention in ("additive", "none"):
        model, history = train_translator(corpus, attention, 200, seed=0, progress=False,
                                          every=200, watch=corpus.test[:2], valid=long[:50])  # fmt: skip
        scores[attention] = evaluate_translation(model, long, corpus)
    assert len(long) > 50
    assert scores["additive"].exact_match >= 0.8, scores["additive"].exact_match
    assert scores["additive"].exact_match > scores["none"].exact_match + 0.3
    assert scores["additive"].alignment_mass > 0.4 and scores["none"].alignment_mass is None
    assert history.checkpoints[-1]["step"] == 200 and "alignments" not in history.checkpoints[-1]


def test_fit_stops_at_the_first_checkpoint_that_reaches_the_goal():
    model = torch.nn.Linear(2, 1)
    history = fit(model, lambda m, step: m(torch.ones(1, 2)).pow(2).sum(), 100, checkpoint=lambda m, step: {"at": step},
                  every=10, stop_when=lambda record: record["at"] >= 20, progress=False)  # fmt: skip
    assert len(history.loss) == 20 and [c["step"] for c in history.checkpoints] == [10, 20]
    assert not model.training
