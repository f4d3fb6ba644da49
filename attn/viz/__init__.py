"""Pictures of attention. Every function takes tensors and token lists, never a model."""

from attn.viz.plots import bar_weights, heatmap, hop_heatmap, lookup_figure

__all__ = ["bar_weights", "heatmap", "hop_heatmap", "lookup_figure"]
