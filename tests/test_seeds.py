"""attn.training.over_seeds: the same results in worker processes as here, one thread each."""

import gc
import multiprocessing
import os
import signal
import threading
import time
from functools import partial

import pytest
import torch

from attn.training import Background, fit, over_runs, over_seeds, seeded


def _train(steps: int, seed: int) -> tuple[list[float], torch.Tensor]:
    """A small regression trained from ``seed``: its loss curve and its weights."""
    with seeded(seed):
        model = torch.nn.Linear(8, 1)
        x = torch.randn(64, 8)
    y = x @ torch.arange(8.0)[:, None]
    history = fit(model, lambda m, step: torch.nn.functional.mse_loss(m(x), y), steps, progress=False)
    return history.loss, model.weight.detach()


def test_worker_processes_give_the_numbers_of_a_run_here():
    torch.set_num_threads(1)
    here = over_seeds(partial(_train, 30), [0, 1, 2], jobs=1)
    there = over_seeds(partial(_train, 30), [0, 1, 2], jobs=2)
    assert len(there) == 3
    for (loss_here, w_here), (loss_there, w_there) in zip(here, there, strict=True):
        assert loss_here == loss_there and torch.equal(w_here, w_there)
    assert here[0][0] != here[1][0]  # the seed matters


@pytest.mark.parametrize(
    ("seeds", "jobs", "message"),
    [
        ([], None, "seeds must be one or more ints, got []"),
        ([0, 1.5], None, "seeds must be one or more ints"),
        ([0], 0, "jobs must be a positive int, got 0"),
        ([0], True, "jobs must be a positive int, got True"),
    ],
)
def test_bad_seeds_or_jobs_are_named(seeds, jobs, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        over_seeds(partial(_train, 1), seeds, jobs=jobs)


def test_one_pool_for_different_experiments_keeps_their_order_and_numbers():
    torch.set_num_threads(1)
    runs = [partial(_train, 20, seed=0), partial(_train, 30, seed=1), partial(_train, 10, seed=0)]
    there = over_runs(runs, jobs=2)
    assert [len(loss) for loss, _ in there] == [20, 30, 10]
    for (loss_there, w_there), run in zip(there, runs, strict=True):
        loss_here, w_here = run()
        assert loss_here == loss_there and torch.equal(w_here, w_there)
    for bad in ([], [1, 2]):
        with pytest.raises(ValueError, match="runs must be one or more callables"):
            over_runs(bad)


def test_background_runs_are_collected_by_name_with_the_numbers_of_a_run_here():
    torch.set_num_threads(1)
    later = Background({"short": partial(_train, 10, seed=0), "long": partial(_train, 30, seed=1)}, jobs=2)
    loss, weight = later["long"]
    here_loss, here_weight = _train(30, seed=1)
    assert loss == here_loss and torch.equal(weight, here_weight)
    assert len(later["short"][0]) == 10 and "2 runs, 2 done" in repr(later)
    with pytest.raises(KeyError, match=r"no run named 'other': the runs are \['long', 'short'\]"):
        later["other"]
    for bad in ({}, {"a": 1}, [partial(_train, 1, seed=0)]):
        with pytest.raises(ValueError, match="runs must be a non-empty dict of name -> callable"):
            Background(bad)


def _fails(seed: int) -> None:
    raise ArithmeticError(f"run {seed} failed")


def test_background_stops_its_workers_when_a_run_fails_or_when_closed():
    runs = {"bad": partial(_fails, 1), **{name: partial(time.sleep, 5) for name in "abcd"}}
    # one worker: "a" runs and the pool queues the next two ahead; "d" waits 15 s, however busy the machine
    later = Background(runs, jobs=1)
    with pytest.raises(ArithmeticError, match="run 1 failed"):
        later["bad"]
    with pytest.raises(RuntimeError, match=r"the run 'd' was cancelled by close\(\) before it started"):
        later["d"]


def _interrupt_after(seconds: float) -> threading.Timer:
    """Ctrl-C (a real SIGINT) to this process after ``seconds``, as Jupyter's stop button sends it."""
    timer = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    return timer


@pytest.mark.parametrize("pool", ["over_runs", "Background"])
def test_an_interrupt_stops_a_pool_within_seconds_and_leaves_no_worker(pool):
    runs = [partial(time.sleep, 60) for _ in range(4)]
    others = set(multiprocessing.active_children())  # idle kept workers of other tests' calls
    start = time.monotonic()
    # Ctrl-C raises KeyboardInterrupt here, as in a kernel, whatever an earlier test in this process installed
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    _interrupt_after(3.0)  # the workers have started by then
    try:
        with pytest.raises(KeyboardInterrupt):
            if pool == "over_runs":
                over_runs(runs, jobs=2)
            else:
                later = Background(dict(enumerate(runs)), jobs=2)
                later[3]
    finally:
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - start < 15, "control came back only after the runs"
    deadline = time.monotonic() + 10
    while set(multiprocessing.active_children()) - others and time.monotonic() < deadline:
        time.sleep(0.1)
    assert set(multiprocessing.active_children()) <= others, "a worker is left running"


def _deaf_sleep(seconds: float) -> None:
    """A run that ignores SIGTERM (a library that installs its own handler, say)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(seconds)


def test_a_run_that_ignores_sigterm_is_killed_and_control_comes_back_at_once():
    others = set(multiprocessing.active_children())
    later = Background({"deaf": partial(_deaf_sleep, 60), "other": partial(_deaf_sleep, 60)}, jobs=2)
    time.sleep(3)  # both under way, SIGTERM ignored
    start = time.monotonic()
    later.close()
    assert time.monotonic() - start < 3, "close() waited on workers that ignore SIGTERM"
    deadline = time.monotonic() + 5
    while set(multiprocessing.active_children()) - others and time.monotonic() < deadline:
        time.sleep(0.1)
    assert set(multiprocessing.active_children()) <= others, "a worker that ignored SIGTERM is left running"


def test_a_dropped_background_ends_its_runs():
    others = set(multiprocessing.active_children())
    later = Background({"long": partial(time.sleep, 60)}, jobs=1)
    time.sleep(2)  # under way
    del later
    gc.collect()
    deadline = time.monotonic() + 10
    while set(multiprocessing.active_children()) - others and time.monotonic() < deadline:
        time.sleep(0.1)
    assert set(multiprocessing.active_children()) <= others


def _defined_here() -> int:
    return 1


def test_a_run_defined_in_a_notebook_is_refused_with_the_reason(monkeypatch):
    monkeypatch.setattr(_defined_here, "__module__", "__main__")  # as a function from a notebook cell is
    with pytest.raises(ValueError, match="defined in this notebook .* cannot load it"):
        over_runs([_defined_here, _defined_here], jobs=2)
    with pytest.raises(ValueError, match="defined in this notebook"):
        Background({"a": partial(_defined_here)})
    with pytest.raises(ValueError, match="cannot be sent to a worker process"):
        over_runs([lambda: 1, lambda: 2], jobs=2)


def _pid(_: int = 0) -> int:
    return os.getpid()


def test_calls_with_the_default_jobs_share_workers_kept_between_them():
    first = set(over_runs([partial(_pid, k) for k in range(4)]))
    later = Background({k: partial(_pid, k) for k in range(4)})
    again = {later[k] for k in range(4)}
    assert again <= first | set(over_runs([partial(_pid, k) for k in range(4)]))
    assert first & again, "a second call started its own workers"
    assert torch.equal(
        over_seeds(partial(_train, 10), [0], jobs=1)[0][1],
        over_runs([partial(_train, 10, seed=0), partial(_train, 10, seed=0)])[1][1],
    ), "a kept worker's run differs"


def test_a_dropped_background_on_the_kept_workers_ends_its_runs_and_the_next_call_starts_afresh():
    workers = {p.pid for p in multiprocessing.active_children()} | set(over_runs([partial(_pid, k) for k in range(4)]))
    later = Background({k: partial(time.sleep, 60) for k in range(4)})
    time.sleep(3)  # under way, on the kept workers
    start = time.monotonic()
    del later
    gc.collect()
    assert time.monotonic() - start < 5, "dropping it waited on its runs"
    fresh = set(over_runs([partial(_pid, k) for k in range(4)]))
    assert fresh and not fresh & workers, "the workers that ran the dropped runs answered again"


def test_a_background_made_again_while_its_runs_are_under_way_keeps_the_new_runs():
    # a cell run again: the new Background is made before the old one is dropped
    later = Background({k: partial(time.sleep, 60) for k in range(2)})
    time.sleep(2)  # under way on the kept workers
    later = Background({k: partial(_train, 5, seed=k) for k in range(2)})
    gc.collect()  # the old one is gone: its runs end, the new ones go on
    assert len(later[1][0]) == 5 and torch.equal(later[0][1], _train(5, seed=0)[1])
    assert len(over_runs([partial(_train, 3, seed=0), partial(_train, 3, seed=1)])) == 2


def test_kept_workers_end_once_idle_and_the_next_call_starts_afresh(monkeypatch):
    from attn.training import seeds

    monkeypatch.setattr(seeds, "IDLE_SECONDS", 0.5)
    workers = set(over_runs([partial(_pid, k) for k in range(4)]))
    deadline = time.monotonic() + 15
    while workers & {p.pid for p in multiprocessing.active_children()} and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not workers & {p.pid for p in multiprocessing.active_children()}, "idle kept workers did not end"
    assert not set(over_runs([partial(_pid, k) for k in range(4)])) & workers
