"""Differentiable Neural Computer (Graves et al. 2016, Methods): the LSTM controller and its interface parameters."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from attn._checks import check_positive_ints, check_sequences, checked
from attn.functional import content_addressing
from attn.memory.access import read, write
from attn.memory.dynamic_allocation import allocation, retention, usage, write_weighting
from attn.memory.ntm import MEMORY_INIT, oneplus
from attn.memory.temporal_linkage import directional_weightings, link_matrix, precedence, read_weighting

__all__ = ["DNCConfig", "DNCOutput", "DNC"]


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
