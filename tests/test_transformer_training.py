"""attn.transformer's trainers: the Transformer's training recipe (Vaswani et al. 2017, §5.3-5.4) in
train_transformer, label smoothing and the warm-up-then-decay learning rate (eq. 3); and train_tagger, which builds its
model from the seed and stops at a goal."""

import functools
import math
import pickle

import pytest
import torch
from torch import nn

from attn.data import make_corpus
from attn.data.sequences import tagging_task
from attn.data.translation import random_batches
from attn.training import noam_schedule, seeded
from attn.transformer import Transformer, TransformerConfig, train_tagger, train_transformer

# ---------------------------------------------------------------- label smoothing


def smoothed_cross_entropy(logits: torch.Tensor, targets: torch.Tensor, eps: float, ignore: int) -> torch.Tensor:
    """By hand: the target distribution puts 1 - ε on the true class and spreads ε evenly over all V classes
    (the true one and the padding class included, as torch does), ``q = (1 - ε) one_hot + ε / V``; the loss is
    ``-Σ_c q_c log p_c`` averaged over the positions whose target is not ``ignore``."""
    V = logits.shape[-1]
    log_p = torch.log_softmax(logits.double(), dim=-1)  # (N, V)
    keep = targets != ignore
    q = (1 - eps) * nn.functional.one_hot(targets[keep], V).double() + eps / V  # (N', V)
    return -(q * log_p[keep]).sum(-1).mean()


@pytest.mark.parametrize("eps", [0.0, 0.1, 0.5])
def test_torchs_label_smoothing_is_the_smoothed_target_cross_entropy(eps):
    g = torch.Generator().manual_seed(0)
    logits = 3 * torch.randn(40, 9, generator=g)
    targets = torch.randint(0, 9, (40,), generator=g)
    targets[::4] = 0  # padding
    ours = nn.functional.cross_entropy(logits, targets, ignore_index=0, label_smoothing=eps)
    torch.testing.assert_close(ours.double(), smoothed_cross_entropy(logits, targets, eps, 0), atol=1e-6, rtol=0)


@pytest.fixture(scope="module")
def corpus():
    return make_corpus(300, 20, seed=0)


SIZES = {"d_model": 16, "num_heads": 2, "num_layers": 1, "d_ff": 32, "dropout": 0.0}


@pytest.mark.parametrize("eps", [0.1, 0.3])
def test_train_transformer_smooths_the_labels_and_ignores_padding(corpus, eps):
    _, history = train_transformer(corpus, 1, batch_size=16, label_smoothing=eps, progress=False, **SIZES)
    # the first step's loss, by hand: the same initial model and the same first batch
    config = TransformerConfig(len(corpus.source_vocab), len(corpus.target_vocab), pad=corpus.target_vocab.pad, **SIZES)
    with seeded(0):
        model = Transformer(config)
    batch = random_batches(corpus, 16, seed=0)()
    assert (batch.target_out == corpus.target_vocab.pad).any()  # padding to ignore
    with torch.no_grad():
        logits = model(batch.source, batch.target_in).logits  # (B, T, V)
    expected = smoothed_cross_entropy(logits.flatten(0, 1), batch.target_out.flatten(), eps, corpus.target_vocab.pad)
    assert history.loss[0] == pytest.approx(float(expected), abs=1e-5)
    _, plain = train_transformer(corpus, 1, batch_size=16, progress=False, **SIZES)
    assert abs(history.loss[0] - plain.loss[0]) > 1e-3  # the smoothing is not lost on the way


def test_train_transformer_without_smoothing_is_unchanged(corpus):
    kwargs = {"batch_size": 16, "progress": False, **SIZES, "dropout": 0.1}
    _, default = train_transformer(corpus, 4, **kwargs)
    _, explicit = train_transformer(corpus, 4, label_smoothing=0.0, **kwargs)
    assert explicit.loss == default.loss  # bit for bit


def test_train_transformer_with_the_noam_schedule(corpus):
    schedule = lambda s: noam_schedule(s, 16, 4)  # noqa: E731
    model, history = train_transformer(corpus, 6, batch_size=16, lr=1.0, warmup=0, schedule=schedule,
                                       label_smoothing=0.1, progress=False, **SIZES)  # fmt: skip
    assert len(history.loss) == 6 and all(math.isfinite(x) for x in history.loss)
    with pytest.raises(ValueError, match="got warmup=100 as well"):
        train_transformer(corpus, 1, schedule=schedule, progress=False, **SIZES)


@pytest.mark.parametrize("eps", [1.0, -0.1, True, "0.1", float("nan")])
def test_train_transformer_rejects_a_bad_label_smoothing(corpus, eps):
    with pytest.raises(ValueError, match=r"label_smoothing must be a number in \[0, 1\), got"):
        train_transformer(corpus, 1, label_smoothing=eps, progress=False, **SIZES)


# ---------------------------------------------------------------- train_tagger


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
