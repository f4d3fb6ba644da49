"""The LSTM without external memory that Graves et al. 2014 (§4) and 2016 compare the NTM and the DNC against."""

from __future__ import annotations

import torch
from torch import nn

from attn._checks import check_positive_int, check_sequences, checked

__all__ = ["LSTMBaseline"]


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
