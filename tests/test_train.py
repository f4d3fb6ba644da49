"""The training loop (its learning-rate warm-up too), and the chapter's claim: attention beats the fixed-vector
bottleneck on long sentences."""

import functools
import io
import pickle

import pytest
import torch
from torch import nn

from attn.data import make_corpus
from attn.data.sequences import tagging_task
from attn.seq2seq import evaluate_translation, train_translator
from attn.training import fit, seeded
from attn.transformer import train_tagger


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
    listed = fit(model, lambda m, step: m(x).sum(), 12, checkpoint=lambda m, step: {}, every=(3, 10), progress=False)
    assert [c["step"] for c in listed.checkpoints] == [3, 10, 12]  # the steps listed, and the last
    for bad in (0, (), (4, 0), 2.5):
        with pytest.raises(ValueError, match="every must be a positive int or a collection of positive steps"):
            fit(model, lambda m, step: m(x).sum(), 5, every=bad)


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


def _tagging_model(vocab_size, heads=2):
    from attn.transformer import LanguageModel, LanguageModelConfig

    config = LanguageModelConfig(vocab_size, d_model=16, num_heads=heads, num_layers=1, d_ff=32, dropout=0.0,
                                 max_len=6, positions="learned", causal=False)  # fmt: skip
    return functools.partial(LanguageModel, config)


def test_train_tagger_builds_its_model_from_the_seed_and_stops_at_the_goal():
    x, y = tagging_task("reverse", 2000, 6, 4, seed=0)
    valid = tagging_task("reverse", 200, 6, 4, seed=1)
    build = _tagging_model(5)
    run = functools.partial(train_tagger, build, x, y, steps=120, every=10, valid=valid, progress=False)
    model, history = pickle.loads(pickle.dumps(run))(seed=3)  # picklable: over_seeds can run it in another process
    with seeded(3):
        same = build()
    assert train_tagger(same, x, y, 120, every=10, valid=valid, progress=False, seed=3).history.loss == history.loss
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), same.state_dict().values(), strict=True))
    assert run(seed=4, steps=5)[1].loss != history.loss[:5], "another seed starts from other weights and batches"
    accuracy = [c["accuracy"] for c in history.checkpoints]
    assert accuracy[-1] > accuracy[0] + 0.2, accuracy
    goal = max(accuracy[:6])  # first reached at one of the first six checkpoints, after the ones below it
    first = next(i for i, a in enumerate(accuracy) if a >= goal)
    assert first >= 2, accuracy  # the goal is not reached at once
    _, early = run(seed=3, goal=goal)
    assert [c["accuracy"] for c in early.checkpoints] == accuracy[: first + 1]
    assert early.checkpoints[-1]["step"] == 10 * (first + 1) == len(early.loss) and not model.training
    assert early.loss == history.loss[: len(early.loss)], "stopping early does not change the steps before"
    _, never = run(seed=3, steps=30, goal=1.01)
    assert len(never.loss) == 30 and [c["step"] for c in never.checkpoints] == [10, 20, 30]


def test_train_tagger_refuses_a_goal_it_cannot_measure_and_a_model_it_cannot_build():
    x, y = tagging_task("reverse", 10, 6, 4, seed=0)
    with pytest.raises(ValueError, match="goal must be a number with valid="):
        train_tagger(_tagging_model(5)(), x, y, 5, goal=0.9, progress=False)
    with pytest.raises(ValueError, match="model must be a module or a function that builds one"):
        train_tagger("model", x, y, 5, progress=False)
    with pytest.raises(ValueError, match="must return a module, got int"):
        train_tagger(lambda: 3, x, y, 5, progress=False)


def test_progress_bars_show_unless_hidden_by_the_caller_or_attn_progress(monkeypatch):
    from attn.training import progress_bar

    monkeypatch.delenv("ATTN_PROGRESS", raising=False)
    assert not progress_bar(range(3), show=True, file=io.StringIO()).disable  # a reader's kernel: bars
    assert progress_bar(range(3), show=False).disable
    monkeypatch.setenv("ATTN_PROGRESS", "0")  # make test, make execute: none in the saved outputs
    assert progress_bar(range(3), show=True).disable
    monkeypatch.setenv("ATTN_PROGRESS", "1")
    assert not progress_bar(range(3), show=True, file=io.StringIO()).disable


def test_fit_warms_the_learning_rate_up_linearly():
    # Adam's first steps with a constant gradient move a parameter by almost exactly the learning rate.
    model = nn.Module()
    model.w = nn.Parameter(torch.zeros(()))
    seen = []

    def loss_fn(m, step):
        seen.append(float(m.w.detach()))
        return m.w * 1.0  # gradient 1 every step

    fit(model, loss_fn, 8, lr=0.1, warmup=4, progress=False)
    seen.append(float(model.w.detach()))
    moves = [before - after for before, after in zip(seen, seen[1:], strict=False)]
    assert moves == pytest.approx([0.025, 0.05, 0.075, 0.1, 0.1, 0.1, 0.1, 0.1], abs=1e-6)
    seen.clear()
    model.w.data.zero_()
    fit(model, loss_fn, 3, lr=0.1, warmup=0, progress=False)  # no warmup: full steps at once
    seen.append(float(model.w.detach()))
    assert [a - b for a, b in zip(seen, seen[1:], strict=False)] == pytest.approx([0.1] * 3, abs=1e-6)


@pytest.mark.parametrize("warmup", [-1, 1.5, True])
def test_fit_rejects_a_bad_warmup(warmup):
    model = nn.Linear(1, 1)
    with pytest.raises(ValueError, match=r"warmup must be an int >= 0"):
        fit(model, lambda m, step: m.weight.sum(), 3, warmup=warmup, progress=False)
