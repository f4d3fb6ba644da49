"""Memory that is written: Neural Turing Machine addressing, the DNC's bookkeeping, and the two models."""

from attn.memory.access import read, write
from attn.memory.addressing import address, content_weighting, interpolate, sharpen, shift
from attn.memory.dnc import (
    allocation,
    directional_weightings,
    link_matrix,
    precedence,
    read_weighting,
    retention,
    usage,
    write_weighting,
)
from attn.memory.measures import head_moves, head_rows, linear_probe, rows_reused
from attn.memory.models import DNC, NTM, DNCConfig, DNCOutput, LSTMBaseline, NTMConfig, NTMOutput
from attn.memory.train import bit_loss, errors_per_sequence, logits_of, train_bits, train_until

__all__ = [
    "DNC",
    "DNCConfig",
    "DNCOutput",
    "LSTMBaseline",
    "NTM",
    "NTMConfig",
    "NTMOutput",
    "address",
    "bit_loss",
    "errors_per_sequence",
    "head_moves",
    "head_rows",
    "linear_probe",
    "rows_reused",
    "logits_of",
    "train_bits",
    "train_until",
    "allocation",
    "content_weighting",
    "directional_weightings",
    "interpolate",
    "link_matrix",
    "precedence",
    "read",
    "read_weighting",
    "retention",
    "sharpen",
    "shift",
    "usage",
    "write",
    "write_weighting",
]
