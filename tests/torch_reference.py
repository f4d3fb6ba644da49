"""Copying attn's weights into torch's own modules, for the tests that compare the two."""

import torch
from torch import nn

from attn.blocks import LayerNorm, MultiHeadAttention


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def close(actual, expected, atol=1e-5, rtol=1e-5):
    torch.testing.assert_close(actual, expected, atol=atol, rtol=rtol)


@torch.no_grad()
def copy_attention(ours: MultiHeadAttention, theirs: nn.MultiheadAttention) -> None:
    """torch packs W_Q, W_K, W_V into one ``in_proj_weight`` of shape (3 d_model, d_model)."""
    theirs.in_proj_weight.copy_(torch.cat([ours.W_q.weight, ours.W_k.weight, ours.W_v.weight]))
    theirs.out_proj.weight.copy_(ours.W_o.weight)
    if ours.W_q.bias is not None:
        theirs.in_proj_bias.copy_(torch.cat([ours.W_q.bias, ours.W_k.bias, ours.W_v.bias]))
        theirs.out_proj.bias.copy_(ours.W_o.bias)


@torch.no_grad()
def copy_norm(ours: LayerNorm, theirs: nn.LayerNorm) -> None:
    theirs.weight.copy_(ours.gamma)
    theirs.bias.copy_(ours.beta)


@torch.no_grad()
def copy_layer(ours: nn.Module, theirs: nn.Module) -> None:
    """An EncoderLayer into nn.TransformerEncoderLayer, or a DecoderLayer into nn.TransformerDecoderLayer."""
    copy_attention(ours.self_attention, theirs.self_attn)
    if hasattr(ours, "cross_attention"):
        copy_attention(ours.cross_attention, theirs.multihead_attn)
    theirs.linear1.load_state_dict(ours.feed_forward.W_1.state_dict())
    theirs.linear2.load_state_dict(ours.feed_forward.W_2.state_dict())
    for i in (1, 2, 3):
        if hasattr(ours, f"norm{i}"):
            copy_norm(getattr(ours, f"norm{i}"), getattr(theirs, f"norm{i}"))
