"""The Transformer's building blocks (Vaswani et al. 2017, §3), on the shared floor: multi-head attention, layer
normalization, the feed-forward network, encoder and decoder layers and their stacks, positional encodings
(sinusoidal, learned and rotary). Every
model made of them stands on them here: the Transformer and the language models (:mod:`attn.transformer`), the
Vision Transformer (:mod:`attn.vision`) and the pretrained BERT (:mod:`attn.pretrained`)."""

from attn.blocks.attention import KeyValue, MultiHeadAttention
from attn.blocks.layers import Decoder, DecoderLayer, Encoder, EncoderLayer, FeedForward, LayerNorm, layer_norm
from attn.blocks.positions import (
    LearnedPositions,
    RotaryMultiHeadAttention,
    SinusoidalPositions,
    rotary_positions,
    sinusoidal_positions,
)

__all__ = [
    "Decoder",
    "DecoderLayer",
    "Encoder",
    "EncoderLayer",
    "FeedForward",
    "KeyValue",
    "LayerNorm",
    "LearnedPositions",
    "MultiHeadAttention",
    "RotaryMultiHeadAttention",
    "SinusoidalPositions",
    "layer_norm",
    "rotary_positions",
    "sinusoidal_positions",
]
