"""The Transformer's training recipe (Vaswani et al. 2017, §5.3-5.4): the warm-up-then-decay learning rate
(eq. 3), usable as a function, through LambdaLR and in fit; and label smoothing in train_transformer."""

import math

import numpy as np
import pytest
import torch
from torch import nn

from attn.data import make_corpus
from attn.data.translation import random_batches
from attn.training import fit, noam_schedule, seeded
from attn.transformer import Transformer, TransformerConfig, train_transformer

# ---------------------------------------------------------------- the schedule


@pytest.mark.parametrize(("d_model", "warmup"), [(512, 4000), (64, 100), (16, 1)])
def test_noam_schedule_peaks_at_the_end_of_warmup(d_model, warmup):
    steps = range(1, 3 * warmup + 2)
    rates = [noam_schedule(s, d_model, warmup) for s in steps]
    assert max(range(len(rates)), key=rates.__getitem__) + 1 == warmup
    assert max(rates) == pytest.approx(d_model**-0.5 * warmup**-0.5, rel=1e-12)
    first = noam_schedule(1, d_model, warmup)
    for s in range(1, warmup + 1):  # a straight line through 0 while warming up
        assert noam_schedule(s, d_model, warmup) == pytest.approx(s * first, rel=1e-12)
    for s in (warmup, warmup + 1, 2 * warmup, 10 * warmup, 10**6):  # then step^-0.5
        assert noam_schedule(s, d_model, warmup) * math.sqrt(s) == pytest.approx(d_model**-0.5, rel=1e-12)


def test_noam_schedule_through_lambda_lr():
    d_model, warmup = 32, 5
    p = nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.Adam([p], lr=1.0)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda i: noam_schedule(i + 1, d_model, warmup))
    rates = []
    for _ in range(12):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    assert rates == pytest.approx([noam_schedule(s, d_model, warmup) for s in range(1, 13)], rel=1e-12)


@pytest.mark.parametrize(("step", "d_model", "warmup", "name"), [
    (0, 64, 10, "step"), (1.5, 64, 10, "step"), (True, 64, 10, "step"), (1, -64, 10, "d_model"), (1, 64, 0, "warmup"),
])  # fmt: skip
def test_noam_schedule_rejects_bad_arguments(step, d_model, warmup, name):
    with pytest.raises(ValueError, match=f"{name} must be a positive int, got"):
        noam_schedule(step, d_model, warmup)


class Scalar(nn.Module):
    """One parameter whose loss is itself: gradient 1 at every step, so each Adam step moves it by the rate."""

    def __init__(self):
        super().__init__()
        self.p = nn.Parameter(torch.zeros((), dtype=torch.float64))


def moves(steps, **kwargs):
    model, seen = Scalar(), []

    def loss_fn(model, step):
        seen.append(float(model.p.detach()))
        return model.p * 1.0

    fit(model, loss_fn, steps, progress=False, **kwargs)
    seen.append(float(model.p.detach()))
    return -np.diff(seen)  # what each step took off: Adam's first steps move by the rate, m̂ / √v̂ = 1


def test_fit_follows_a_schedule_and_keeps_its_warmup_without_one():
    rates = moves(12, lr=1.0, schedule=lambda s: noam_schedule(s, 32, 5))
    assert rates == pytest.approx([noam_schedule(s, 32, 5) for s in range(1, 13)], rel=1e-6)
    assert moves(6, lr=0.1, warmup=3) == pytest.approx([0.1 * min(1.0, s / 3) for s in range(1, 7)], rel=1e-6)
    assert moves(3, lr=0.1) == pytest.approx([0.1] * 3, rel=1e-6)
    with pytest.raises(ValueError, match="schedule must be a function of the step .* got warmup=3 as well"):
        moves(2, warmup=3, schedule=lambda s: 1.0)
    with pytest.raises(ValueError, match="schedule must be a function of the step .* got 0.5"):
        moves(2, schedule=0.5)


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
