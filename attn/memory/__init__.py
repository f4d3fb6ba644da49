"""Memory that is written: Neural Turing Machine addressing, the DNC's allocation and linkage, and the two models."""

from attn.memory.access import read, write
from attn.memory.addressing import address, content_addressing, interpolate, sharpen, shift
from attn.memory.dynamic_allocation import allocation, retention, usage, write_weighting
from attn.memory.measures import errors_per_sequence, head_moves, head_rows, linear_probe, rows_reused
from attn.memory.model import DNC, NTM, DNCConfig, DNCOutput, LSTMBaseline, NTMConfig, NTMOutput, logits_of, oneplus
from attn.memory.temporal_linkage import directional_weightings, link_matrix, precedence, read_weighting
from attn.memory.train import bit_loss, train_bits, train_until

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
    "oneplus",
    "train_bits",
    "train_until",
    "allocation",
    "content_addressing",
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
