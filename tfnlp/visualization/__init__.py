"""Pictures of what models do: attention and alignment heatmaps with the
tokens on their axes (`alignment_heatmap`)."""

from tfnlp.visualization.alignment_heatmap import alignment_figure, alignment_image

__all__ = ["alignment_figure", "alignment_image"]
