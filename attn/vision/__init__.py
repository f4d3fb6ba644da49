"""Attention for images: soft attention over a CNN's grid, hard attention with glimpses, the Vision Transformer."""

from attn.vision.glimpse import glimpse, glimpse_boxes
from attn.vision.measures import (
    Look,
    attention_map,
    look,
    mass_on_object,
    multiply_adds,
    policy_gradient_variance,
    values_read,
)
from attn.vision.model import (
    PooledNet,
    RAMConfig,
    RAMOutput,
    RecurrentAttention,
    SoftAttentionNet,
    SpatialConfig,
    SpatialOutput,
    ViT,
    ViTConfig,
    ViTOutput,
    spatial_attention,
)
from attn.vision.patches import ConvStem, PatchEmbedding, patchify
from attn.vision.ram import ram_loss, reinforce
from attn.vision.rollout import attention_rollout, class_token_map
from attn.vision.train import accuracy, scene_loss, train_on_scenes

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
