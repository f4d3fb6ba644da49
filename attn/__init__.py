"""attn: the library behind *Attention, interactively*.

Chapters import it; it never imports a chapter. The core contract:

- :func:`softmax`, score functions, :func:`attend`, :func:`scaled_dot_product_attention` (``attn.functional``)
- :func:`causal_mask`, :func:`padding_mask`: boolean masks, ``True`` = may attend (``attn.masks``)
"""

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
