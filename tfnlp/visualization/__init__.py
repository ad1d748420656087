"""Pictures of what models do: attention and alignment heatmaps with the
tokens on their axes (`alignment_heatmap`, `attention_heads`), and the
markdown tables of TensorBoard's text tab (`markdown`)."""

from tfnlp.visualization.alignment_heatmap import alignment_figure, alignment_image
from tfnlp.visualization.attention_heads import attention_heads_figure, attention_heads_image
from tfnlp.visualization.figures import figure_pixels
from tfnlp.visualization.markdown import markdown_table, markdown_text

__all__ = [
    "alignment_figure",
    "alignment_image",
    "attention_heads_figure",
    "attention_heads_image",
    "figure_pixels",
    "markdown_table",
    "markdown_text",
]
