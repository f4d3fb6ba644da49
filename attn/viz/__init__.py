"""Pictures of attention. Every function takes tensors and token lists, never a model."""

from attn.viz.attributions import attribution_viewer
from attn.viz.images import image_attention, patch_grid, scene_grid
from attn.viz.live import live_view
from attn.viz.plots import bar_weights, head_grid, heatmap, hop_heatmap, lookup_figure, one_example
from attn.viz.viewer import AttentionView, attention_viewer

__all__ = [
    "AttentionView",
    "attention_viewer",
    "attribution_viewer",
    "bar_weights",
    "head_grid",
    "heatmap",
    "hop_heatmap",
    "image_attention",
    "live_view",
    "patch_grid",
    "scene_grid",
    "lookup_figure",
    "one_example",
]
