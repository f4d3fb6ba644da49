"""How much memory a computation holds at its peak, counted tensor by tensor: the same number on every machine."""

from __future__ import annotations

import weakref
from collections.abc import Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

__all__ = ["elements_written", "peak_tensor_bytes"]


class _LiveBytes(TorchDispatchMode):
    """Counts the bytes of the storages that operators create while the mode is on and that are still alive.

    A storage an operator reads that was not created by an operator under the mode (an input, a parameter, a
    tensor made from NumPy) is remembered as known by its address and never counted, even if it is freed later and
    its address reused; NumPy's own arrays are not seen at all."""

    def __init__(self) -> None:
        super().__init__()
        self.known: set[int] = set()  # storages that existed before: inputs, parameters
        self.tensors: dict[int, int] = {}  # data pointer of a new storage -> live tensors that view it
        self.live = self.peak = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        for t in tree_leaves((args, kwargs)):
            if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() not in self.tensors:
                self.known.add(t.untyped_storage().data_ptr())
        out = func(*args, **(kwargs or {}))
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor):
                self._track(t)
        return out

    def _track(self, t: torch.Tensor) -> None:
        storage = t.untyped_storage()
        ptr = storage.data_ptr()
        if ptr in self.known or not storage.nbytes():
            return
        if ptr not in self.tensors:
            self.tensors[ptr] = 0
            self.live += storage.nbytes()
            self.peak = max(self.peak, self.live)
        self.tensors[ptr] += 1
        weakref.finalize(t, self._release, ptr, storage.nbytes())

    def _release(self, ptr: int, nbytes: int) -> None:
        self.tensors[ptr] -= 1
        if not self.tensors[ptr]:
            del self.tensors[ptr]
            self.live -= nbytes


def peak_tensor_bytes(fn: Callable[[], object]) -> tuple[object, int]:
    """Run ``fn()`` and return ``(its result, the peak bytes of the tensors its operators allocated)``: every output
    of every torch operator is counted from its creation until its last tensor is freed (views share a storage and
    are counted once). Buffers a fused kernel keeps inside itself are not seen; run ``fn`` under
    ``torch.no_grad()`` to measure a forward pass alone (autograd keeps what the backward pass needs)."""
    mode = _LiveBytes()
    with mode:
        result = fn()
    return result, mode.peak


class _Elements(TorchDispatchMode):
    """Adds up the number of elements every operator writes."""

    def __init__(self) -> None:
        super().__init__()
        self.total = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.total += sum(t.numel() for t in tree_leaves(out) if isinstance(t, torch.Tensor))
        return out


def elements_written(fn: Callable[[], object]) -> tuple[object, int]:
    """Run ``fn()`` and return ``(its result, the number of elements all its torch operators wrote)``: a measure of
    work that, unlike time, is the same on every machine (a loop of T steps that each write O(d²) numbers writes
    O(T d²); a T × T matrix, O(T²))."""
    mode = _Elements()
    with mode:
        result = fn()
    return result, mode.total
