"""attn: the library behind *Attention, interactively*.

Chapters import it; it never imports a chapter. The core contract:

- :func:`softmax`, score functions, :func:`attend`, :func:`scaled_dot_product_attention` (``attn.functional``)
- :func:`causal_mask`, :func:`padding_mask`: boolean masks, ``True`` = may attend (``attn.masks``)
- :class:`AdditiveAttention`, :class:`DotAttention`, :class:`GeneralAttention` and the GRU encoder-decoder
  :class:`Seq2Seq` that learns to align (``attn.seq2seq``)
- :func:`content_addressing` and the end-to-end memory network :class:`MemN2N` (``attn.memn2n``)
- :class:`MultiHeadAttention`, positional encodings, :class:`LayerNorm`, encoder and decoder layers, the
  encoder-decoder :class:`Transformer` and the decoder-only :class:`LanguageModel` (``attn.transformer``)
- exact attention in tiles, linear attention as fast weights, the delta rule (``attn.scale``)
"""

from attn.blocks import (
    DecoderLayer,
    EncoderLayer,
    LayerNorm,
    LearnedPositions,
    MultiHeadAttention,
    RotaryMultiHeadAttention,
    SinusoidalPositions,
)
from attn.functional import (
    additive_scores,
    attend,
    content_addressing,
    cosine_scores,
    dot_product_scores,
    scaled_dot_product_attention,
    softmax,
)
from attn.masks import causal_mask, padding_mask
from attn.memn2n import MemN2N, MemN2NConfig
from attn.seq2seq import AdditiveAttention, DotAttention, GeneralAttention, Seq2Seq, Seq2SeqConfig
from attn.transformer import LanguageModel, LanguageModelConfig, Transformer, TransformerConfig

__all__ = [
    "AdditiveAttention",
    "DecoderLayer",
    "DotAttention",
    "EncoderLayer",
    "GeneralAttention",
    "LanguageModel",
    "LanguageModelConfig",
    "LayerNorm",
    "LearnedPositions",
    "MemN2N",
    "MemN2NConfig",
    "MultiHeadAttention",
    "RotaryMultiHeadAttention",
    "SinusoidalPositions",
    "Transformer",
    "TransformerConfig",
    "Seq2Seq",
    "Seq2SeqConfig",
    "additive_scores",
    "attend",
    "content_addressing",
    "causal_mask",
    "cosine_scores",
    "dot_product_scores",
    "padding_mask",
    "scaled_dot_product_attention",
    "softmax",
]
__version__ = "0.1.0"
