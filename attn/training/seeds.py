"""Run one experiment from several seeds, on every core: seed spread without waiting for each run in turn.

The runs go to worker processes on this machine by default, or to any :class:`concurrent.futures.Executor` you
pass (``executor=``): a Dask cluster's (:func:`dask_executor`), a Ray pool's, your own. Each run is single-threaded
and seeded wherever it goes, so it gives the numbers it gives here on the same kind of machine.
"""

from __future__ import annotations

import argparse
import multiprocessing
import numbers
import os
import pickle
import re
import signal
import threading
import time
import weakref
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from concurrent.futures import CancelledError, Executor, Future, ProcessPoolExecutor
from functools import partial
from typing import Any, TypeVar, cast

import torch

from attn._checks import check, check_positive_int, check_positive_number, checked
from attn.training.progress import progress_bar

__all__ = ["Background", "dask_executor", "over_runs", "over_seeds"]

Result = TypeVar("Result")


def _one_thread() -> None:
    """Each worker process computes on one thread, as the chapters do: a run repeats exactly on one machine. It
    ignores Ctrl-C (Jupyter's interrupt reaches the whole process group): the parent stops it instead."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    torch.set_num_threads(1)


def _check_sendable(run: object) -> None:
    """A run must reach a fresh worker process: a function of a module, or a partial of one. A function defined in
    a notebook cell (module ``__main__``) cannot be found there, so it is refused here, with the reason."""
    func = run
    while isinstance(func, partial):
        func = func.func
    check(getattr(func, "__module__", None) != "__main__", lambda: f"{getattr(func, '__qualname__', func)!r} is "
          "defined in this notebook (or script), so a worker process cannot load it: put it in a module and import "
          "it, or pass a functools.partial of a library function")  # fmt: skip
    try:
        pickle.dumps(run)
    except Exception as error:
        raise ValueError(f"{run!r} cannot be sent to a worker process: {error}") from None


def single_threaded(run: Callable[[], Result]) -> Result:
    """``run()`` on one thread (torch's intra-op threads), as the chapters compute: for workers this module did not
    start (another executor's), whose thread count it cannot set when they start."""
    torch.set_num_threads(1)
    return run()


_ADDRESS = re.compile(r"(?:(?:tcp|tls|ucx|ws|wss)://)?[\w.-]+:\d{1,5}")


class AddressError(ValueError, argparse.ArgumentTypeError):
    """A ValueError that a command line's ``type=`` reports as a usage error, in its own words."""


def scheduler_address(address: object) -> str:
    """``address`` if it reads as a Dask scheduler's address (``tcp://host:8786``, or ``host:8786``), else a
    ValueError that shows the form (also usable as an argparse ``type``: status 2, this message)."""
    if not isinstance(address, str) or not _ADDRESS.fullmatch(address) or int(address.rsplit(":", 1)[1]) > 65535:
        raise AddressError(f"address must be a Dask scheduler's address such as tcp://host:8786, got {address!r}")
    return address


def _dask_executor_args(address: str, timeout: float = 5.0) -> None:
    scheduler_address(address)
    check_positive_number("timeout", timeout)


@checked(_dask_executor_args)
def dask_executor(address: str, timeout: float = 5.0) -> Executor:
    """A :class:`concurrent.futures.Executor` that runs on the Dask cluster whose scheduler is at ``address`` (e.g.
    ``tcp://10.0.0.5:8786``; start one with ``dask scheduler`` and ``dask worker ADDRESS --nthreads 1``). A
    ValueError, after ``timeout`` seconds, where no scheduler answers."""
    timeout = float(timeout)
    try:
        from distributed import Client
    except ModuleNotFoundError:
        raise ValueError("a Dask scheduler needs the distributed package: pip install distributed") from None
    try:
        client = Client(address, timeout=timeout)
    except (OSError, TimeoutError) as error:  # nothing listens there, or it is not a scheduler
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ValueError(f"no Dask scheduler answered at {address} within {timeout:g} s ({reason[:120]})") from None
    executor = client.get_executor()
    weakref.finalize(executor, client.close)  # the connection closes once the executor is dropped
    return executor


def _check_executor(executor: object) -> Executor:
    check(callable(getattr(executor, "submit", None)),
          f"executor must be a concurrent.futures.Executor (.submit), got {type(executor).__name__}")  # fmt: skip
    return cast(Executor, executor)  # one by its .submit: a Dask client's, a Ray pool's


def _stop(pool: ProcessPoolExecutor) -> None:
    """Stop a pool now: runs not started are cancelled, runs under way are ended with their worker process."""
    processes = list((pool._processes or {}).values())  # the executor keeps its workers here
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()  # SIGTERM: a run that handles it may clean up
    deadline = time.monotonic() + _GRACE
    for process in processes:
        process.join(timeout=max(0.0, deadline - time.monotonic()))
    for process in processes:
        if process.is_alive():  # it ignored SIGTERM: no run outlives the stop
            process.kill()
            process.join(timeout=5)


_GRACE = 0.5  # seconds all workers together get to end on SIGTERM before SIGKILL


def _jobs(jobs: object, runs: int) -> int:
    """``jobs``, or by default the cores this process may use, at most one per run; a ValueError if not an int >= 1."""
    if jobs is None:
        jobs = min(runs, _cores())
    return check_positive_int("jobs", jobs)


def _cores() -> int:
    """The cores this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _pool(jobs: int) -> ProcessPoolExecutor:
    """Worker processes on one thread each; "spawn" on every system: a fresh interpreter per worker works in
    notebooks and on macOS and Windows alike."""
    context = multiprocessing.get_context("spawn")
    return ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_one_thread)


_kept: dict[int, ProcessPoolExecutor] = {}  # by size: the workers of the calls that leave ``jobs`` to the cores
_lent: dict[int, list[Future]] = {}  # the runs of the one call that has the kept pool now
_lock = threading.Lock()  # lending and retiring the kept pool (retiring runs on a timer's thread)
IDLE_SECONDS = 60.0  # a kept pool with nothing to run for this long ends its workers (each holds a few hundred MB)


def _kept_pool(jobs: int) -> ProcessPoolExecutor | None:
    """One pool for the calls with the default ``jobs``, kept for the next: a chapter pays the workers' start-up
    (2-4 s) once, not once per experiment. It is lent to one call at a time (None while another call's runs are
    under way, so that stopping one experiment never stops another's), and retired after ``IDLE_SECONDS`` idle."""
    if not all(future.done() for future in _lent.get(jobs, [])):
        return None
    pool = _kept.get(jobs)
    if pool is None or pool._broken or pool._shutdown_thread:  # the executor's own flags: stopped or failed
        pool = _kept[jobs] = _pool(jobs)
    return pool


def _submit(
    jobs: int, runs: Sequence[Callable[[], Any]], *, share: bool
) -> tuple[ProcessPoolExecutor, list[Future], bool]:
    """The runs submitted to the kept pool if ``share`` (the caller left ``jobs`` to the cores), ``jobs`` is all the
    cores and the pool is free; else to a pool of their own. Also whether it was the kept one."""
    with _lock:
        pool = _kept_pool(jobs) if share and jobs == _cores() else None
        kept = pool is not None
        pool = pool if pool is not None else _pool(jobs)  # the kept pool, or one of their own
        futures = [pool.submit(run) for run in runs]
        if kept:
            _lent[jobs] = futures
    if kept:
        for future in futures:
            future.add_done_callback(lambda _: _retire_when_idle(jobs, pool, futures))
    return pool, futures, kept


def _retire_when_idle(jobs: int, pool: ProcessPoolExecutor, futures: list[Future]) -> None:
    """Once a loan's runs are all done, retire the pool ``IDLE_SECONDS`` later unless it was lent again."""
    if all(future.done() for future in futures):
        timer = threading.Timer(IDLE_SECONDS, _retire, (jobs, pool, futures))
        timer.daemon = True  # never keeps the process alive
        timer.start()


def _retire(jobs: int, pool: ProcessPoolExecutor, futures: list[Future]) -> None:
    with _lock:
        if _kept.get(jobs) is pool and _lent.get(jobs) is futures:  # not lent since
            del _kept[jobs]
            _lent.pop(jobs, None)
            pool.shutdown(wait=False)  # idle workers: they end at once


def _end(pool: ProcessPoolExecutor) -> None:
    """Stop ``pool`` now (see :func:`_stop`), and forget it if it was the kept one."""
    for jobs, kept in list(_kept.items()):
        if kept is pool:
            del _kept[jobs]
            _lent.pop(jobs, None)
    _stop(pool)


def _release(pool: ProcessPoolExecutor, futures: list[Future], kept: bool) -> None:
    """A Background done with: its runs not started are cancelled and its runs under way are ended (with the
    workers); a kept pool whose runs are all finished stays for the next experiment."""
    if not kept:
        _stop(pool)
        return
    for future in futures:
        future.cancel()
    if not all(future.done() for future in futures):
        _end(pool)


def over_seeds(
    run: Callable[..., Result],
    seeds: Iterable[int],
    *,
    jobs: int | None = None,
    progress: bool = False,
    executor: Executor | None = None,
) -> list[Result]:
    """``[run(seed=s) for s in seeds]``, computed ``jobs`` runs at a time in separate processes.

    Each process uses one thread, so a run gives the same numbers as ``run(seed=s)`` called here with
    ``torch.set_num_threads(1)``, whatever ``jobs`` is. ``run`` must be picklable: a function defined in a module
    (not in a notebook cell) or a :func:`functools.partial` of one. ``jobs`` defaults to the number of cores this
    process may use, at most one per seed; ``jobs=1`` runs here, one seed after another. With ``executor`` (any
    :class:`concurrent.futures.Executor`, e.g. :func:`dask_executor`) the runs go there instead, ``jobs`` unused.
    """
    seeds = list(seeds)
    check(seeds and all(isinstance(s, numbers.Integral) and not isinstance(s, bool) for s in seeds),
          lambda: f"seeds must be one or more ints, got {seeds!r}")  # fmt: skip
    runs = [partial(run, seed=seed) for seed in seeds]
    return over_runs(runs, jobs=jobs, progress=progress, desc="seeds", executor=executor)


def over_runs(
    runs: Sequence[Callable[[], Result]],
    *,
    jobs: int | None = None,
    progress: bool = False,
    desc: str = "runs",
    executor: Executor | None = None,
) -> list[Result]:
    """``[run() for run in runs]``, computed ``jobs`` at a time in separate processes (one thread each).

    Different experiments (several models, each from several seeds) share one pool of workers: pass them in one
    call and no core waits while another experiment's last run finishes. With the default ``jobs`` the workers
    stay for the next call (and :class:`Background`): one start-up (2-4 s) per process, not one per call; they end
    ``IDLE_SECONDS`` (60) after the last run if no call comes. A worker may have run other experiments before: a run
    seeds what it draws (as the library's trainers do).
    Every run must be picklable (e.g. a :func:`functools.partial` of a module's function); the results come back
    in the order of ``runs``, each as ``run()`` called here with ``torch.set_num_threads(1)`` gives it.

    ``executor``: send the runs to it instead of this machine's pool (a Dask cluster's, :func:`dask_executor`);
    each runs single-threaded there, the executor is left open (it is the caller's), and a failed run cancels the
    runs not started yet.
    """
    runs = list(runs)
    check(runs and all(map(callable, runs)), lambda: f"runs must be one or more callables, got {runs!r}")
    bar = progress_bar(total=len(runs), desc=desc, show=progress)
    if executor is not None:
        return _on(_check_executor(executor), runs, bar)
    default_jobs = jobs is None
    jobs = _jobs(jobs, len(runs))
    if jobs == 1:
        results = []
        for run in runs:
            results.append(run())
            bar.update()
        bar.close()
        return results
    for run in runs:
        _check_sendable(run)
    pool, futures, kept = _submit(jobs, runs, share=default_jobs)
    try:
        for future in futures:
            future.add_done_callback(lambda _: bar.update())
        results = [future.result() for future in futures]
    except BaseException:  # an interrupt (Ctrl-C, Jupyter's stop button) or a failed run: nothing keeps running
        _end(pool)
        raise
    if not kept:
        pool.shutdown()
    bar.close()
    return results


def _on(executor: Executor, runs: list[Callable[[], Result]], bar) -> list[Result]:
    """The runs on someone else's executor, single-threaded each, results in order; the executor stays open."""
    for run in runs:
        _check_sendable(run)
    futures = [executor.submit(single_threaded, run) for run in runs]
    try:
        for future in futures:
            future.add_done_callback(lambda _: bar.update())
        results = [future.result() for future in futures]
    except BaseException:
        for future in futures:
            future.cancel()
        raise
    bar.close()
    return results


class Background:
    """Runs started now in worker processes (one thread each) and collected later by name: a chapter trains the
    models its later sections compare while its first model trains here and the reader reads on.

    ``later = Background({"baseline": partial(train, ...), ...})``, then ``later["baseline"]`` waits for that run
    and returns its result, the same as ``run()`` called here with ``torch.set_num_threads(1)`` gives it.
    :meth:`close` (or dropping this object) cancels the runs not started and ends those under way. Runs must be
    picklable, as for :func:`over_runs`; ``jobs`` defaults to the cores this process may use, at most one per run,
    and then the workers are those of :func:`over_runs`, kept for the next experiment.
    """

    def __init__(self, runs: Mapping[Hashable, Callable[[], Any]], *, jobs: int | None = None):
        check(isinstance(runs, Mapping) and runs and all(map(callable, runs.values())),
              lambda: f"runs must be a non-empty dict of name -> callable, got {runs!r}")  # fmt: skip
        for run in runs.values():
            _check_sendable(run)
        size = _jobs(jobs, len(runs))
        self._pool, futures, kept = _submit(size, list(runs.values()), share=jobs is None)
        self._futures = dict(zip(runs, futures, strict=True))
        # its runs also stop when this object is dropped (a cell run again) or the kernel exits
        self._finalizer = weakref.finalize(self, _release, self._pool, list(self._futures.values()), kept)
        self._taken: set[Hashable] = set()

    def __getitem__(self, name: Hashable) -> Any:
        if name not in self._futures:
            raise KeyError(f"no run named {name!r}: the runs are {sorted(self._futures, key=repr)}")
        try:
            result = self._futures[name].result()
        except CancelledError:
            raise RuntimeError(f"the run {name!r} was cancelled by close() before it started") from None
        except BaseException:
            self.close()  # a run failed, or the reader interrupted: stop the others too, and raise here
            raise
        self._taken.add(name)
        if self._taken == set(self._futures):
            self.close()
        return result

    def close(self) -> None:
        """Stop its runs now: runs not started yet are cancelled, runs under way are ended (with their workers)."""
        self._finalizer()

    def __repr__(self) -> str:
        done = sum(f.done() for f in self._futures.values())
        return f"Background({len(self._futures)} runs, {done} done)"
