import pytest

from tests.visualization.rendered_markdown import rendered_html, rendered_table
from tfnlp.visualization import markdown_table, markdown_text

# Markdown syntax, HTML and a table separator: all to be shown as typed.
AWKWARD = "a *b* _c_ | </s> & <b>d</b> [x](y) 1. # `z` \\ ~e~ !f"


def test_the_text_tab_shows_every_cell_as_it_is():
    assert rendered_table(markdown_table(["#", "source", "translation"],
                                         [[0, AWKWARD, "ok"], [1, "x", AWKWARD]])) == [
        ["#", "source", "translation"], ["0", AWKWARD, "ok"], ["1", "x", AWKWARD]]


def test_a_line_break_in_a_cell_does_not_end_the_row():
    assert rendered_table(markdown_table(["source"], [["one\ntwo\r\nthree"]])) == [
        ["source"], ["one two  three"]]


def test_escaped_text_outside_a_table_shows_as_it_is_too():
    assert rendered_html(markdown_text(AWKWARD)) == (
        "<p>a *b* _c_ | &lt;/s&gt; &amp; &lt;b&gt;d&lt;/b&gt; [x](y) 1. # `z` \\ ~e~ !f</p>")


def test_a_row_of_the_wrong_width_is_refused():
    with pytest.raises(ValueError, match="Row 1 of the table has 1 cells; the header has 2"):
        markdown_table(["source", "translation"], [["a", "b"], ["c"]])
