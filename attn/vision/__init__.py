"""Attention for images: soft attention over a CNN's grid, hard attention with glimpses, the Vision Transformer."""

from attn.vision.cost import multiply_adds, values_read
from attn.vision.glimpse import glimpse, glimpse_boxes
from attn.vision.patches import ConvStem, PatchEmbedding, patchify
from attn.vision.ram import RAMConfig, RAMOutput, RecurrentAttention, ram_loss, reinforce
from attn.vision.rollout import attention_rollout, class_token_map
from attn.vision.spatial import PooledNet, SoftAttentionNet, SpatialConfig, SpatialOutput, spatial_attention
from attn.vision.train import (
    Look,
    accuracy,
    attention_map,
    look,
    mass_on_object,
    policy_gradient_variance,
    scene_loss,
    train_on_scenes,
)
from attn.vision.vit import ViT, ViTConfig, ViTOutput

__all__ = [
    "Look",
    "look",
    "ConvStem",
    "PatchEmbedding",
    "PooledNet",
    "RAMConfig",
    "RAMOutput",
    "RecurrentAttention",
    "SoftAttentionNet",
    "SpatialConfig",
    "SpatialOutput",
    "ViT",
    "ViTConfig",
    "ViTOutput",
    "accuracy",
    "attention_map",
    "attention_rollout",
    "class_token_map",
    "glimpse",
    "glimpse_boxes",
    "mass_on_object",
    "multiply_adds",
    "patchify",
    "policy_gradient_variance",
    "ram_loss",
    "reinforce",
    "scene_loss",
    "spatial_attention",
    "train_on_scenes",
    "values_read",
]
