"""attn: the library behind *Attention, interactively*.

Chapters import it; it never imports a chapter. The core contract:

- :func:`softmax`, score functions, :func:`attend`, :func:`scaled_dot_product_attention` (``attn.functional``)
- :func:`causal_mask`, :func:`padding_mask`: boolean masks, ``True`` = may attend (``attn.masks``)
- :class:`AdditiveAttention`, :class:`DotAttention`, :class:`GeneralAttention` and the GRU encoder-decoder
  :class:`Seq2Seq` that learns to align (``attn.additive``)
"""

from attn.additive import AdditiveAttention, DotAttention, GeneralAttention, Seq2Seq, Seq2SeqConfig
from attn.functional import (
    additive_scores,
    attend,
    cosine_scores,
    dot_product_scores,
    scaled_dot_product_attention,
    softmax,
)
from attn.masks import causal_mask, padding_mask

__all__ = [
    "AdditiveAttention",
    "DotAttention",
    "GeneralAttention",
    "Seq2Seq",
    "Seq2SeqConfig",
    "additive_scores",
    "attend",
    "causal_mask",
    "cosine_scores",
    "dot_product_scores",
    "padding_mask",
    "scaled_dot_product_attention",
    "softmax",
]
__version__ = "0.1.0"
