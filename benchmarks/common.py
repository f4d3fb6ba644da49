"""Timing and peak-memory helpers shared by the benchmark scripts."""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def median_seconds(fn: Callable[[], object], repeats: int = 7, warmup: int = 2) -> float:
    """Median wall time of ``fn()`` over ``repeats`` runs, after ``warmup`` runs."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def paired_medians(fns: list[Callable[[], object]], repeats: int, warmup: int = 2) -> list[float]:
    """Median wall time of each ``fn()``; the functions run in turn within every repeat, so drift in the load
    of a shared machine falls on all of them alike."""
    for _ in range(warmup):
        for fn in fns:
            fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for fn, out in zip(fns, times, strict=True):
            start = time.perf_counter()
            fn()
            out.append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def _status_kib(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _release_free_heap() -> None:
    """Give freed heap pages back to the OS (glibc), so that one measurement does not feed the next."""
    name = ctypes.util.find_library("c")
    if name:
        libc = ctypes.CDLL(name)
        if hasattr(libc, "malloc_trim"):
            libc.malloc_trim(0)


def peak_extra_mib(fn: Callable[[], object]) -> float | None:
    """Peak resident memory that ``fn()`` adds, in MiB (Linux: VmHWM after resetting it), else None."""
    gc.collect()
    _release_free_heap()
    try:
        Path("/proc/self/clear_refs").write_text("5")  # resets the peak RSS (VmHWM) to the current RSS
    except OSError:
        return None
    before = _status_kib("VmRSS")
    fn()
    peak = _status_kib("VmHWM")
    if before is None or peak is None:
        return None
    return max(0, peak - before) / 1024


def time_notebook(path: Path, timeout: int = 600) -> float:
    """Seconds to execute a notebook from a fresh kernel (kernel start-up included)."""
    import nbformat
    from nbclient import NotebookClient

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    return time.perf_counter() - start
