"""End-To-End Memory Networks (Sukhbaatar et al. 2015): the model, its training, its measures, and
``python -m attn.memn2n``."""

from attn.memn2n.measures import evaluate, support_attention
from attn.memn2n.model import MemN2N, MemN2NConfig, MemN2NOutput, memory_read, position_encoding, time_index
from attn.memn2n.train import Answer, MemN2NRun, split_valid, train_memn2n

__all__ = [
    "Answer",
    "MemN2N",
    "MemN2NConfig",
    "MemN2NOutput",
    "MemN2NRun",
    "evaluate",
    "memory_read",
    "position_encoding",
    "split_valid",
    "support_attention",
    "time_index",
    "train_memn2n",
]
