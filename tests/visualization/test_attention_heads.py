import numpy as np
import pytest

from tfnlp.visualization import attention_heads_figure, attention_heads_image, figure_pixels

TOKENS = ["[CLS]", "the", "dog", "##s", "$x$", "[SEP]"]


def labels(tick_labels):
    return [label.get_text() for label in tick_labels]


def test_each_head_is_a_titled_panel_and_the_outer_panels_carry_the_tokens():
    weights = np.full((6, len(TOKENS), len(TOKENS)), 1 / len(TOKENS))
    figure = attention_heads_figure(weights, TOKENS, title="Layer 2")
    panels = [axes for axes in figure.axes if axes.get_title().startswith("head")]
    assert [axes.get_title() for axes in panels] == [f"head {index}" for index in range(6)]
    # Four to a row: heads 0-3, then 4-5; the tokens label the rows of the
    # left column (0, 4) and the columns of each column's lowest panel.
    assert [bool(labels(axes.get_yticklabels())) for axes in panels] == [
        True, False, False, False, True, False]
    assert [bool(labels(axes.get_xticklabels())) for axes in panels] == [
        False, False, True, True, True, True]
    assert labels(panels[4].get_yticklabels()) == TOKENS
    assert labels(panels[5].get_xticklabels()) == TOKENS
    # A token is plain text, never matplotlib math.
    assert not any(label.get_parse_math() for label in panels[4].get_yticklabels())
    assert "Layer 2" in [text.get_text() for text in figure.texts]


def test_a_heads_weights_are_drawn_in_its_own_panel_brightest_where_they_are_highest():
    weights = np.full((2, 6, 6), 0.01, "float32")
    weights[1, 0, 5] = 1.0  # head 1: the first token attends to the last
    figure = attention_heads_figure(weights, TOKENS)
    image = figure_pixels(figure)
    # viridis: the largest weight is yellow (bright red and green, little blue).
    yellow = (image[:, :, 0] > 200) & (image[:, :, 1] > 200) & (image[:, :, 2] < 100)
    panel = figure.axes[1].get_window_extent()  # display pixels, origin at the bottom
    rows, columns = np.nonzero(yellow)
    inside = ((columns >= panel.x0) & (columns <= panel.x1)
              & (image.shape[0] - rows >= panel.y0) & (image.shape[0] - rows <= panel.y1))
    assert inside.sum() > 50
    cell = panel.width / 6
    # Its top-right cell (row 0, column 5), and nowhere else in that panel.
    assert columns[inside].min() >= panel.x1 - cell - 1
    assert (image.shape[0] - rows[inside]).min() >= panel.y1 - cell - 1


def test_a_long_example_gets_smaller_labels_that_do_not_overlap():
    tokens = [f"t{index}" for index in range(48)]
    figure = attention_heads_figure(np.zeros((4, 48, 48)), tokens)
    panel = figure.axes[0]
    cell_points = panel.get_position().height * figure.get_figheight() * 72 / 48
    font_points = panel.get_yticklabels()[0].get_fontsize()
    assert 5 <= font_points <= cell_points
    # Four panels in a row, at least 10 pixels a token.
    image = attention_heads_image(np.zeros((4, 48, 48)), tokens)
    assert image.shape[1] >= 4 * 48 * 10


def test_weights_that_do_not_match_the_tokens_are_refused():
    with pytest.raises(ValueError, match="need 3 tokens; received 2"):
        attention_heads_figure(np.zeros((2, 3, 3)), ["a", "b"])
    with pytest.raises(ValueError, match="must be \\(num_heads, length, length\\)"):
        attention_heads_figure(np.zeros((3, 3)), ["a", "b", "c"])
