"""What the heatmaps of `tfnlp.visualization` share: tokens as tick labels
sized to their cells, and a figure rendered to pixels.

Drawn with matplotlib's Agg canvas (no display, no pyplot state). Text
needs a font renderer, which TensorFlow's image ops do not have, hence
matplotlib rather than a pure-TensorFlow image.
"""

import warnings

import numpy as np

# Dots per inch of every figure: a 0.1-inch token cell is 10 pixels.
DPI = 100
# The token labels' font size in points: the cell's height at most (a
# label must not overlap its neighbours), and never below what is legible
# at the image's actual size.
SMALLEST_FONT_POINTS = 5.0
LARGEST_FONT_POINTS = 9.0
POINTS_PER_INCH = 72.0


def token_font_size(cell_inches):
    """The font size (points) of token labels on cells `cell_inches` apart.

    Args:
        cell_inches: the distance between two neighbouring tokens' cells.

    Returns:
        85% of the cell's height in points, within [5, 9].

    Example:

    >>> token_font_size(0.1)
    6.12
    """
    return float(np.clip(round(0.85 * cell_inches * POINTS_PER_INCH, 2),
                         SMALLEST_FONT_POINTS, LARGEST_FONT_POINTS))


def label_tokens(axes, x_tokens=None, y_tokens=None, font_size=LARGEST_FONT_POINTS):
    """Puts one tick per token on the x axis (labels vertical) and the y axis.

    Labels are plain text: a token such as "$" or "$5$" is not read as
    matplotlib math.

    Args:
        axes: a `matplotlib.axes.Axes` holding an `imshow` of the tokens.
        x_tokens: the column labels, or None to leave the x axis unlabelled.
        y_tokens: the row labels, or None to leave the y axis unlabelled.
        font_size: the labels' size in points (see `token_font_size`).
    """
    if x_tokens is not None:
        axes.set_xticks(range(len(x_tokens)), labels=[str(token) for token in x_tokens],
                        rotation=90, fontsize=font_size, parse_math=False)
    else:
        axes.set_xticks([])
    if y_tokens is not None:
        axes.set_yticks(range(len(y_tokens)), labels=[str(token) for token in y_tokens],
                        fontsize=font_size, parse_math=False)
    else:
        axes.set_yticks([])


def figure_pixels(figure):
    """A matplotlib figure rendered as a uint8 RGB array `(height, width, 3)`.

    The array is what `tf.summary.image` takes (after a batch axis is
    added), which stores it as a PNG. A glyph missing from the font (a CJK
    token, say) is drawn as a box, without the warning matplotlib would
    print for each.

    Args:
        figure: a `matplotlib.figure.Figure`.

    Example:

    >>> from matplotlib.figure import Figure
    >>> figure_pixels(Figure(figsize=(2, 1), dpi=100)).shape
    (100, 200, 3)
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(figure)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Glyph .* missing from")
        canvas.draw()
    return np.asarray(canvas.buffer_rgba())[:, :, :3].copy()
