"""The Transformer (Vaswani et al. 2017): attention, positions, layers and whole models."""

from attn.transformer.attention import KeyValue, MultiHeadAttention
from attn.transformer.layers import DecoderLayer, EncoderLayer, FeedForward, LayerNorm, layer_norm
from attn.transformer.models import (
    Decoder,
    Embedding,
    Encoder,
    KeyValueCache,
    LanguageModel,
    LanguageModelConfig,
    LanguageModelOutput,
    Transformer,
    TransformerConfig,
    TransformerOutput,
)
from attn.transformer.positions import LearnedPositions, SinusoidalPositions, sinusoidal_positions

__all__ = [
    "Decoder",
    "DecoderLayer",
    "Embedding",
    "Encoder",
    "EncoderLayer",
    "FeedForward",
    "KeyValue",
    "KeyValueCache",
    "LanguageModel",
    "LanguageModelConfig",
    "LanguageModelOutput",
    "LayerNorm",
    "LearnedPositions",
    "MultiHeadAttention",
    "SinusoidalPositions",
    "Transformer",
    "TransformerConfig",
    "TransformerOutput",
    "layer_norm",
    "sinusoidal_positions",
]
