"""The attention of every head of one layer, as a grid of heatmaps with the
example's tokens on the axes.

One panel a head (titled "head h"), at most four to a row, on one colour
scale (0 to the layer's largest weight, with its colour bar): a row of a
panel is an attending token (the query), a column an attended one (the
key). The tokens label the left column's rows and the bottom panels'
columns, which every panel shares.
"""

import math

import numpy as np

from tfnlp.visualization.figures import DPI, figure_pixels, label_tokens, token_font_size

# A panel's side: CELL_INCHES a token, within PANEL_INCHES (a long example
# gets smaller cells and smaller labels, down to the smallest legible font).
CELL_INCHES = 0.16
PANEL_INCHES = (2.2, 5.0)
MAX_COLUMNS = 4
# Inches a label character takes per point of font size (a wide glyph).
_CHARACTER_INCHES_PER_POINT = 0.6 / 72


def attention_heads_figure(weights, tokens, title=None, max_columns=MAX_COLUMNS):
    """A matplotlib figure of one layer's heads, the tokens on the axes.

    Args:
        weights: `(num_heads, length, length)` attention weights of one
            example (a row per attending token), padding cropped.
        tokens: the `length` tokens of the example.
        title: an optional title above the grid ("layer 3", say).
        max_columns: the most panels in a row.

    Returns:
        A `matplotlib.figure.Figure`.

    Raises:
        ValueError: the weights are not `(heads, length, length)` for the
            `length` tokens given.

    Example:

    >>> import numpy as np
    >>> figure = attention_heads_figure(np.full((2, 3, 3), 1 / 3), ["[CLS]", "hi", "[SEP]"],
    ...                                 title="layer 0")
    >>> [axes.get_title() for axes in figure.axes[:2]]
    ['head 0', 'head 1']
    >>> [label.get_text() for label in figure.axes[0].get_yticklabels()]
    ['[CLS]', 'hi', '[SEP]']
    """
    from matplotlib.figure import Figure  # Agg canvas; no pyplot state.

    weights = _checked(weights, tokens)
    heads, length = weights.shape[0], weights.shape[1]
    panel = float(np.clip(CELL_INCHES * length, *PANEL_INCHES))
    font_size = token_font_size(panel / length)
    columns = max(1, min(max_columns, heads))
    rows = math.ceil(heads / columns)
    layout = _Layout(panel, columns, rows, label_inches=(
        max(len(str(token)) for token in tokens) * font_size * _CHARACTER_INCHES_PER_POINT),
        title=bool(title))
    figure = Figure(figsize=layout.size, dpi=DPI)
    highest = max(float(weights.max()), 1e-9)
    for index in range(heads):
        row, column = divmod(index, columns)
        axes = figure.add_axes(layout.panel_box(row, column))
        image = axes.imshow(weights[index], cmap="viridis", vmin=0.0, vmax=highest,
                            interpolation="nearest", aspect="auto")
        axes.set_title(f"head {index}", fontsize=9, pad=3)
        bottom_of_its_column = index + columns >= heads
        label_tokens(axes, tokens if bottom_of_its_column else None,
                     tokens if column == 0 else None, font_size)
    figure.colorbar(image, cax=figure.add_axes(layout.colour_bar_box()),
                    label="attention weight")
    left, bottom = layout.axis_title_positions()
    figure.text(0.5 * (left + 1.0 - layout.right / layout.size[0]), 0.1 / layout.size[1],
                "attended token (key)", ha="center", va="bottom", fontsize=9)
    figure.text(0.1 / layout.size[0], 0.5 * (bottom + 1.0 - layout.top / layout.size[1]),
                "attending token (query)", ha="left", va="center", rotation=90, fontsize=9)
    if title:
        figure.text(0.5, 1.0 - 0.12 / layout.size[1], title, ha="center", va="top",
                    fontsize=11)
    return figure


class _Layout:
    """Where the panels, the colour bar and the titles of the grid go, in
    inches from the figure's bottom left (the figure is sized to hold them
    all, so no layout engine has to measure the labels: that took as long
    as drawing)."""

    GAP = 0.15       # between two panels side by side
    HEAD_TITLE = 0.3  # above each panel
    COLOUR_BAR = (0.25, 0.2, 1.0)  # its gap to the panels, width, labels

    def __init__(self, panel, columns, rows, label_inches, title):
        self.panel, self.columns, self.rows = panel, columns, rows
        self.left = 0.35 + label_inches + 0.1    # the axis title, the y labels
        self.bottom = 0.35 + label_inches + 0.1  # the axis title, the x labels
        self.top = 0.45 if title else 0.1
        self.right = sum(self.COLOUR_BAR)
        self.size = (self.left + columns * panel + (columns - 1) * self.GAP + self.right,
                     self.bottom + rows * (panel + self.HEAD_TITLE) + self.top)

    def _fraction(self, x, y, width, height):
        return [x / self.size[0], y / self.size[1], width / self.size[0], height / self.size[1]]

    def panel_box(self, row, column):
        x = self.left + column * (self.panel + self.GAP)
        y = self.bottom + (self.rows - 1 - row) * (self.panel + self.HEAD_TITLE)
        return self._fraction(x, y, self.panel, self.panel)

    def colour_bar_box(self):
        height = min(self.rows * (self.panel + self.HEAD_TITLE) - self.HEAD_TITLE, 4.0)
        top = self.size[1] - self.top - self.HEAD_TITLE
        x = self.size[0] - self.right + self.COLOUR_BAR[0]
        return self._fraction(x, top - height, self.COLOUR_BAR[1], height)

    def axis_title_positions(self):
        """The left and bottom edges of the panels, as figure fractions."""
        return self.left / self.size[0], self.bottom / self.size[1]


def attention_heads_image(weights, tokens, title=None, max_columns=MAX_COLUMNS):
    """`attention_heads_figure` rendered as a uint8 RGB array `(height,
    width, 3)`, for `tf.summary.image` (add a batch axis).

    Args:
        weights, tokens, title, max_columns: as `attention_heads_figure`.

    Example:

    >>> import numpy as np
    >>> attention_heads_image(np.full((4, 2, 2), 0.5), ["a", "b"]).shape[2]
    3
    """
    return figure_pixels(attention_heads_figure(weights, tokens, title, max_columns))


def _checked(weights, tokens):
    weights = np.asarray(weights, dtype=np.float32)
    if weights.ndim != 3 or weights.shape[1] != weights.shape[2]:
        raise ValueError(
            "weights must be (num_heads, length, length), one square matrix a head; "
            f"received shape {weights.shape}."
        )
    if weights.shape[1] != len(tokens) or not len(tokens):
        raise ValueError(
            f"weights of shape {weights.shape} need {weights.shape[1]} tokens; received "
            f"{len(tokens)}. Crop the weights to the example's real tokens (no padding)."
        )
    return weights
