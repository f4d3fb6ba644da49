"""Neural Turing Machine (Graves et al. 2014, §3): LSTM controller; heads address (eqs. 5-9), read and write (2-4)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from attn._checks import check, check_positive_ints, check_sequences, checked
from attn.memory.access import read, write
from attn.memory.addressing import address

__all__ = ["NTMConfig", "NTMOutput", "NTM", "oneplus"]

MEMORY_INIT = 1e-6  # a constant initial memory (Collier & Beel 2018 found it trains fastest)


def oneplus(x: torch.Tensor) -> torch.Tensor:
    """``1 + softplus(x)``: a strength or sharpening exponent >= 1 (DNC Methods)."""
    return 1 + F.softplus(x)


@dataclass(frozen=True)
class NTMConfig:
    """Sizes of :class:`NTM`: one read and one write head, shifts of -shift_range..shift_range rows."""

    input_size: int
    output_size: int
    hidden: int = 100  # LSTM controller units
    memory_rows: int = 64  # N
    memory_width: int = 16  # W
    shift_range: int = 1

    def __post_init__(self) -> None:
        check_positive_ints(self, "input_size", "output_size", "hidden", "memory_rows", "memory_width", "shift_range")
        check(2 * self.shift_range + 1 <= self.memory_rows,
              f"shift_range {self.shift_range} needs at least {2 * self.shift_range + 1} memory_rows")  # fmt: skip


@dataclass
class NTMOutput:
    """``logits (B, T, output_size)``; ``read_weights`` and ``write_weights (B, T, N)``: each step's weighting."""

    logits: torch.Tensor
    read_weights: torch.Tensor
    write_weights: torch.Tensor


class NTM(nn.Module):
    """Neural Turing Machine (Graves et al. 2014): an LSTM controller, one write head, then one read head.

    At step t the controller reads ``[x_t; r_{t-1}]``; each head turns its state into a key, strength β,
    gate g, shift distribution s and exponent γ (:func:`attn.memory.addressing.address`); the write head
    erases and adds, the read head reads the new memory, and the output is a linear map of ``[h_t; r_t]``.
    Memory starts at a small constant and both heads at row 0.
    """

    def __init__(self, config: NTMConfig) -> None:
        super().__init__()
        self.config = config
        W, S = config.memory_width, 2 * config.shift_range + 1
        self.head_sizes = (W, 1, 1, S, 1)  # key, β, g, s, γ
        self.controller = nn.LSTMCell(config.input_size + W, config.hidden)
        self.read_head = nn.Linear(config.hidden, sum(self.head_sizes))
        self.write_head = nn.Linear(config.hidden, sum(self.head_sizes) + 2 * W)  # ... + erase, add
        self.output = nn.Linear(config.hidden + W, config.output_size)

    def _weighting(self, params: torch.Tensor, memory: torch.Tensor, previous: torch.Tensor) -> torch.Tensor:
        key, beta, gate, shifts, gamma = params.split(self.head_sizes, dim=-1)
        return address(memory, previous, torch.tanh(key), F.softplus(beta).squeeze(-1), torch.sigmoid(gate).squeeze(-1),
                       torch.softmax(shifts, dim=-1), oneplus(gamma).squeeze(-1))  # fmt: skip

    def _forward_args(self, x: torch.Tensor) -> None:
        check_sequences(x, self.config.input_size, self)

    @checked(_forward_args)
    def forward(self, x: torch.Tensor) -> NTMOutput:
        """x ``(B, T, input_size)`` -> :class:`NTMOutput`."""
        B, T, _ = x.shape
        N, W, H = self.config.memory_rows, self.config.memory_width, self.config.hidden
        memory = x.new_full((B, N, W), MEMORY_INIT)
        w_read = w_write = F.one_hot(x.new_zeros(B, dtype=torch.long), N).to(x.dtype)  # (B, N): row 0
        r, state = x.new_zeros(B, W), (x.new_zeros(B, H), x.new_zeros(B, H))
        logits, reads, writes = [], [], []
        for t in range(T):
            h, c = state = self.controller(torch.cat([x[:, t], r], dim=-1), state)
            params = self.write_head(h)
            w_write = self._weighting(params[:, : -2 * W], memory, w_write)
            erase, add = params[:, -2 * W :].split(W, dim=-1)
            memory = write(memory, w_write, torch.sigmoid(erase), torch.tanh(add))
            w_read = self._weighting(self.read_head(h), memory, w_read)
            r = read(memory, w_read.unsqueeze(1))[0].squeeze(1)  # (B, W)
            logits.append(self.output(torch.cat([h, r], dim=-1)))
            reads.append(w_read)
            writes.append(w_write)
        return NTMOutput(torch.stack(logits, 1), torch.stack(reads, 1), torch.stack(writes, 1))
