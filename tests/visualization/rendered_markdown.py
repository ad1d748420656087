"""Markdown as TensorBoard's Text tab shows it: its own renderer and HTML
sanitizer (`tensorboard.plugin_util.markdown_to_safe_html`), read back."""

import html.parser

from tensorboard import plugin_util


class _TableCells(html.parser.HTMLParser):
    """The text of each `<th>`/`<td>` of an HTML table, row by row."""

    def __init__(self):
        super().__init__()
        self.rows, self.cell = [], None

    def handle_starttag(self, tag, attributes):
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self.cell = ""

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.rows[-1].append(self.cell)
            self.cell = None


def rendered_html(markdown):
    """The HTML that the Text tab shows for `markdown`."""
    return plugin_util.markdown_to_safe_html(markdown)


def rendered_table(markdown):
    """The cells of each row of the (first) table that the Text tab shows
    for `markdown`, header row first; [] when it shows no table."""
    parser = _TableCells()
    parser.feed(rendered_html(markdown))
    return parser.rows
