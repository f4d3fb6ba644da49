"""attn.training: the training loop (its learning-rate warm-up too, and a schedule: the Transformer's
warm-up-then-decay learning rate of Vaswani et al. 2017, eq. 3, usable as a function, through LambdaLR and in fit),
seeded model building and the progress bars."""

import io
import math

import numpy as np
import pytest
import torch
from torch import nn

from attn.training import fit, noam_schedule, seeded


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


def test_fit_stops_at_the_first_checkpoint_that_reaches_the_goal():
    model = torch.nn.Linear(2, 1)
    history = fit(model, lambda m, step: m(torch.ones(1, 2)).pow(2).sum(), 100, checkpoint=lambda m, step: {"at": step},
                  every=10, stop_when=lambda record: record["at"] >= 20, progress=False)  # fmt: skip
    assert len(history.loss) == 20 and [c["step"] for c in history.checkpoints] == [10, 20]
    assert not model.training


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
