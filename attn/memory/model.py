"""The memory models: the Neural Turing Machine (Graves et al. 2014, §3: an LSTM controller whose heads address
(eqs. 5-9), read and write (2-4)), the Differentiable Neural Computer (Graves et al. 2016, Methods: the LSTM controller
and its interface parameters) and the LSTM without external memory both papers compare them against."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from attn._checks import check, check_positive_int, check_positive_ints, check_sequences, checked
from attn.functional import content_addressing
from attn.memory.access import read, write
from attn.memory.addressing import address
from attn.memory.dynamic_allocation import allocation, retention, usage, write_weighting
from attn.memory.temporal_linkage import directional_weightings, link_matrix, precedence, read_weighting

__all__ = [
    "NTMConfig",
    "NTMOutput",
    "NTM",
    "oneplus",
    "DNCConfig",
    "DNCOutput",
    "DNC",
    "LSTMBaseline",
    "logits_of",
]

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


@dataclass(frozen=True)
class DNCConfig:
    """Sizes of :class:`DNC`: N memory rows of width W, R read heads, one write head."""

    input_size: int
    output_size: int
    hidden: int = 64  # LSTM controller units
    memory_rows: int = 16  # N
    memory_width: int = 16  # W
    read_heads: int = 2  # R

    def __post_init__(self) -> None:
        check_positive_ints(self, "input_size", "output_size", "hidden", "memory_rows", "memory_width", "read_heads")


@dataclass
class DNCOutput:
    """Every step's state of the memory's bookkeeping (T steps, N rows, R read heads):

    ``logits (B, T, output_size)``, ``read_weights (B, T, R, N)``, ``write_weights (B, T, N)``, ``usage (B, T, N)``
    (before the step's write), ``read_modes (B, T, R, 3)`` (backward, content, forward), ``free_gates (B, T, R)``,
    ``allocation_gate`` and ``write_gate (B, T)``; when asked for (else None), ``links (B, T, N, N)`` and the
    ``memory (B, T, N, W)`` after each step's write.
    """

    logits: torch.Tensor
    read_weights: torch.Tensor
    write_weights: torch.Tensor
    usage: torch.Tensor
    read_modes: torch.Tensor
    free_gates: torch.Tensor
    allocation_gate: torch.Tensor
    write_gate: torch.Tensor
    links: torch.Tensor | None = None
    memory: torch.Tensor | None = None


class DNC(nn.Module):
    """Differentiable Neural Computer (Graves et al. 2016): an LSTM controller emits an interface vector each step.

    From it: read keys and strengths, a write key and strength, erase and write vectors, free gates, the
    allocation and write gates, and each read head's three read modes (Methods, "Interface parameters"). The
    memory then frees, allocates, writes, links and reads with the functions of
    :mod:`attn.memory.dynamic_allocation` and :mod:`attn.memory.temporal_linkage`. The controller sees
    ``[x_t; r_{t-1}]``; the output is a linear map of ``[h_t; r_t]``.
    """

    def __init__(self, config: DNCConfig) -> None:
        super().__init__()
        self.config = config
        R, W = config.read_heads, config.memory_width
        # read keys, read strengths, write key, write strength, erase, write vector, free gates, g^a, g^w, modes
        self.interface_sizes = (R * W, R, W, 1, W, W, R, 1, 1, 3 * R)
        self.controller = nn.LSTMCell(config.input_size + R * W, config.hidden)
        self.interface = nn.Linear(config.hidden, sum(self.interface_sizes))
        self.output = nn.Linear(config.hidden + R * W, config.output_size)

    def _forward_args(self, x: torch.Tensor, need_memory: bool = False, free_gates: bool = True) -> None:
        check_sequences(x, self.config.input_size, self)

    @checked(_forward_args)
    def forward(self, x: torch.Tensor, need_memory: bool = False, free_gates: bool = True) -> DNCOutput:
        """x ``(B, T, input_size)`` -> :class:`DNCOutput` (``need_memory``: keep every step's memory and link
        matrix; ``free_gates=False``: an ablation that holds every free gate shut, f = 0, so no row is ever freed)."""
        B, T, _ = x.shape
        N, W, R, H = self.config.memory_rows, self.config.memory_width, self.config.read_heads, self.config.hidden
        memory = x.new_full((B, N, W), MEMORY_INIT)
        links, p, u, w_write = x.new_zeros(B, N, N), x.new_zeros(B, N), x.new_zeros(B, N), x.new_zeros(B, N)
        w_read, r = x.new_zeros(B, R, N), x.new_zeros(B, R * W)
        state = (x.new_zeros(B, H), x.new_zeros(B, H))
        steps: dict[str, list[torch.Tensor]] = {k: [] for k in DNCOutput.__dataclass_fields__}
        for t in range(T):
            h, c = state = self.controller(torch.cat([x[:, t], r], dim=-1), state)
            k_r, beta_r, k_w, beta_w, erase, vector, free, g_a, g_w, modes = self.interface(h).split(
                self.interface_sizes, dim=-1
            )
            free, g_a, g_w = torch.sigmoid(free), torch.sigmoid(g_a).squeeze(-1), torch.sigmoid(g_w).squeeze(-1)
            if not free_gates:
                free = torch.zeros_like(free)  # (B, R): the ablation, ψ_t = 1
            u = usage(u, w_write, retention(free, w_read))  # (B, N)
            _, c_w = content_addressing(k_w, memory, oneplus(beta_w).squeeze(-1))  # (B, N)
            w_write = write_weighting(allocation(u), c_w, g_a, g_w)
            memory = write(memory, w_write, torch.sigmoid(erase), vector)
            links, p = link_matrix(links, w_write, p), precedence(p, w_write)  # L_t uses p_{t-1}
            _, c_r = content_addressing(k_r.view(B, R, W), memory.unsqueeze(1), oneplus(beta_r))  # (B, R, N)
            forward, backward = directional_weightings(links, w_read)
            modes = torch.softmax(modes.view(B, R, 3), dim=-1)
            w_read = read_weighting(backward, c_r, forward, modes)  # (B, R, N)
            reads, _ = read(memory, w_read)  # (B, R, W)
            r = reads.flatten(1)  # (B, R * W)
            record = dict(logits=self.output(torch.cat([h, r], dim=-1)), read_weights=w_read, write_weights=w_write,
                          usage=u, read_modes=modes, free_gates=free, allocation_gate=g_a, write_gate=g_w)  # fmt: skip
            if need_memory:
                record["links"], record["memory"] = links, memory
            for name, value in record.items():
                steps[name].append(value)
        return DNCOutput(**{name: torch.stack(values, 1) for name, values in steps.items() if values})


class LSTMBaseline(nn.Module):
    """An LSTM with a linear output, the baseline without external memory: ``(B, T, I) -> (B, T, O)``."""

    def __init__(self, input_size: int, output_size: int, hidden: int = 256, layers: int = 1) -> None:
        super().__init__()
        for name, value in (("input_size", input_size), ("output_size", output_size), ("hidden", hidden),
                            ("layers", layers)):  # fmt: skip
            check_positive_int(name, value)
        self.input_size = input_size
        self.lstm = nn.LSTM(input_size, hidden, num_layers=layers, batch_first=True)
        self.output = nn.Linear(hidden, output_size)

    def _forward_args(self, x: torch.Tensor) -> None:
        check_sequences(x, self.input_size, self)

    @checked(_forward_args)
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x ``(B, T, input_size)`` -> logits ``(B, T, output_size)``."""
        return self.output(self.lstm(x)[0])


def logits_of(output: torch.Tensor | NTMOutput | DNCOutput) -> torch.Tensor:
    """The ``(B, T, O)`` logits of any of the memory models' outputs (an LSTM returns them as they are)."""
    return output if isinstance(output, torch.Tensor) else output.logits
