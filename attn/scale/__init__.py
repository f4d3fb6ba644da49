"""Attention at scale: exact attention in tiles with the online softmax (no T×T matrix kept), linear attention
as a fast-weight memory (masked product = recurrence) and the delta rule that erases before it writes, a
training-free measure of what each memory holds, and a count of the tensors' memory at a computation's peak."""

from attn.scale.linear import (
    FastWeights,
    causal_linear_attention,
    chunked_linear_attention,
    decayed_linear_attention,
    delta_rule_attention,
    elu_feature_map,
    linear_attention_step,
    recurrent_linear_attention,
)
from attn.scale.measures import peak_tensor_bytes
from attn.scale.recall import associative_recall, best_setting
from attn.scale.tiled import (
    OnlineSoftmaxState,
    hbm_traffic,
    online_softmax_trace,
    online_softmax_update,
    tile_work,
    tiled_attention,
)

__all__ = [
    "FastWeights",
    "OnlineSoftmaxState",
    "associative_recall",
    "best_setting",
    "causal_linear_attention",
    "chunked_linear_attention",
    "decayed_linear_attention",
    "delta_rule_attention",
    "elu_feature_map",
    "hbm_traffic",
    "linear_attention_step",
    "online_softmax_trace",
    "online_softmax_update",
    "peak_tensor_bytes",
    "recurrent_linear_attention",
    "tile_work",
    "tiled_attention",
]
