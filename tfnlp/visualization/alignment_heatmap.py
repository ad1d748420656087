"""An attention or alignment matrix drawn as a heatmap, tokens on the axes.

Drawn with matplotlib (its Agg canvas, no display needed): the figure for
files and notebooks, and the same picture as an RGB array for
`tf.summary.image`. The grid of a layer's heads is `attention_heads`.
"""

import numpy as np

from tfnlp.visualization.figures import DPI, figure_pixels, label_tokens, token_font_size

# The side of one token's cell, in inches (32 pixels at DPI).
CELL_INCHES = 0.32


def alignment_figure(weights, source_tokens, target_tokens, title=None,
                     source_label="source", target_label="target"):
    """A matplotlib figure of `weights` with the tokens on its axes.

    Args:
        weights: `(target_length, source_length)` attention weights (a row
            per target token, as `RNNSeq2Seq.alignments` gives them).
        source_tokens: the `source_length` labels of the columns.
        target_tokens: the `target_length` labels of the rows.
        title: an optional title.
        source_label: the x axis' name.
        target_label: the y axis' name ("output" for a model's own
            translation, say).

    Returns:
        A `matplotlib.figure.Figure` (save it with `figure.savefig(path)`).

    Raises:
        ValueError: the weights are not 2-D, or the token counts do not
            match their shape.

    Example:

    >>> import numpy as np
    >>> figure = alignment_figure(np.eye(3)[::-1], ["a", "b", "c"], ["c", "b", "a"])
    >>> [label.get_text() for label in figure.axes[0].get_xticklabels()]
    ['a', 'b', 'c']
    """
    from matplotlib.figure import Figure  # Agg canvas; no pyplot state.

    weights = np.asarray(weights, dtype=np.float32)
    if weights.ndim != 2:
        raise ValueError(
            f"weights must be (target_length, source_length); received shape {weights.shape}."
        )
    if weights.shape != (len(target_tokens), len(source_tokens)):
        raise ValueError(
            f"weights of shape {weights.shape} need {weights.shape[0]} target tokens and "
            f"{weights.shape[1]} source tokens; received {len(target_tokens)} and "
            f"{len(source_tokens)}. Crop the weights to the real tokens (no padding)."
        )
    figure = Figure(figsize=(max(3.0, 1.5 + CELL_INCHES * weights.shape[1]),
                             max(2.5, 1.2 + CELL_INCHES * weights.shape[0])), dpi=DPI)
    axes = figure.add_subplot()
    image = axes.imshow(weights, cmap="viridis", vmin=0.0, vmax=max(float(weights.max()), 1e-9),
                        aspect="auto")
    label_tokens(axes, source_tokens, target_tokens, token_font_size(CELL_INCHES))
    axes.set_xlabel(source_label)
    axes.set_ylabel(target_label)
    if title:
        axes.set_title(title, fontsize=10)
    figure.colorbar(image, ax=axes, fraction=0.04)
    figure.tight_layout()
    return figure


def alignment_image(weights, source_tokens, target_tokens, title=None, **labels):
    """`alignment_figure` rendered as a uint8 RGB array `(height, width, 3)`,
    for `tf.summary.image` (add a batch axis) or any image library.

    Args:
        weights, source_tokens, target_tokens, title: as `alignment_figure`.
        labels: `source_label` and `target_label`, as `alignment_figure`.

    Example:

    >>> import numpy as np
    >>> alignment_image(np.eye(2), ["a", "b"], ["x", "y"]).dtype
    dtype('uint8')
    """
    return figure_pixels(alignment_figure(weights, source_tokens, target_tokens, title,
                                          **labels))
