"""Sweeps on a Dask cluster (issue 37): the runs that ``over_seeds``/``over_runs`` give a local process pool go to
any ``concurrent.futures.Executor`` instead, here a local Dask cluster of two single-threaded worker processes, and
give the same numbers bit for bit; the memory network's command line takes ``--scheduler ADDRESS``."""

import logging
from functools import partial

import pytest
import torch

from attn.data.babi import examples, write_stories
from attn.data.babi_world import simulate
from attn.memn2n import train_memn2n
from attn.memn2n.__main__ import main
from attn.scale.recall import associative_recall
from attn.training import dask_executor, over_runs, over_seeds

distributed = pytest.importorskip("distributed", reason="the Dask tests need the distributed package")


@pytest.fixture(scope="module")
def cluster():
    quiet = logging.WARNING  # the cluster's own INFO lines would fill the test log
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=quiet
    ) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def client(cluster):
    with distributed.Client(cluster) as client:
        yield client


def test_training_runs_on_a_dask_cluster_equal_the_local_pools(client):
    stories = examples(simulate(1, 100, seed=1))
    train = partial(train_memn2n, stories, epochs=2, linear_start=1, d=8, progress=False)
    seeds = [0, 1, 2]
    remote = over_seeds(train, seeds, executor=client.get_executor())
    local = over_seeds(train, seeds, jobs=2)
    here = [train(seed=s) for s in seeds]  # this process, one thread (tests/conftest.py sets it)
    for r, l, h in zip(remote, local, here, strict=True):
        r, l, h = (run.model.state_dict() for run in (r, l, h))
        assert r.keys() == l.keys() == h.keys()
        for k in r:
            assert torch.equal(r[k], l[k]) and torch.equal(r[k], h[k]), k
    assert not torch.equal(remote[0].model.E[0].weight, remote[1].model.E[0].weight)  # the seeds differ


def test_over_runs_keeps_the_order_and_leaves_the_executor_open(client):
    executor = client.get_executor()
    runs = [partial(associative_recall, memory, 10, 16, seed=3) for memory in ("linear", "delta", "softmax")]
    assert over_runs(runs, executor=executor) == [run() for run in runs]
    assert over_runs(runs[:1], executor=executor) == [runs[0]()]  # still usable: the caller owns it


def test_a_failed_run_on_the_cluster_raises_here(client):
    with pytest.raises(ValueError, match="memory must be one of"):
        over_runs([partial(associative_recall, "no such memory", 4, 8, seed=0)], executor=client.get_executor())


def test_bad_executors_and_addresses_are_refused():
    with pytest.raises(ValueError, match="executor must be a concurrent.futures.Executor"):
        over_seeds(partial(associative_recall, "delta", 4, 8), [0], executor="tcp://localhost:8786")
    with pytest.raises(ValueError, match="address must be a Dask scheduler's address"):
        dask_executor("")


def test_memn2n_table_on_a_dask_cluster_equals_the_local_table(cluster, tmp_path, capsys):
    for split, seed in (("train", 1), ("test", 2)):
        write_stories(simulate(1, 60, seed=seed), tmp_path / f"qa1_single-supporting-fact_{split}.txt")
    command = ["table", "--data", str(tmp_path), "--tasks", "1", "--epochs", "2", "--runs", "2", "--dim", "8"]
    assert main([*command, "--jobs", "2"]) == 0
    local = capsys.readouterr().out
    assert main([*command, "--scheduler", cluster.scheduler_address]) == 0
    remote = capsys.readouterr().out

    def rows(out: str) -> list[list[str]]:  # the table without its wall-clock times (the last column, "train s")
        return [line.split("|")[1:-2] for line in out.splitlines() if line.startswith("|")]

    assert rows(remote) == rows(local) and len(rows(local)) >= 3
