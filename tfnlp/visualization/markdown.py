"""Markdown tables for TensorBoard's text tab (`tf.summary.text`).

TensorBoard renders a text summary as Markdown (with tables) and strips
raw HTML, so each cell is escaped: Markdown's punctuation and the table's
`|` are backslash-escaped, `&`, `<` and `>` written as entities, and line
breaks become spaces (a table row is one line). The text shows as it is,
whatever it holds ("*", "_", "</s>", "|").
"""

# Characters that Markdown (and its tables) would read as syntax, and that
# Python-Markdown (the Text tab's renderer) lets a backslash escape.
_MARKDOWN_PUNCTUATION = "\\`*_{}[]()#+-.!|"
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def markdown_text(text):
    """`text` escaped to show literally in one Markdown table cell.

    Args:
        text: any string (or value; `str()` of it is used).

    Example:

    >>> markdown_text("a *b* | </s>")
    'a \\\\*b\\\\* \\\\| &lt;/s&gt;'
    """
    escaped = []
    for character in str(text):
        if character in _ENTITIES:
            escaped.append(_ENTITIES[character])
        elif character in _MARKDOWN_PUNCTUATION:
            escaped.append("\\" + character)
        elif character in "\r\n":
            escaped.append(" ")
        else:
            escaped.append(character)
    return "".join(escaped)


def markdown_table(header, rows):
    """A Markdown table of `rows` under `header`, every cell escaped.

    Args:
        header: the column names.
        rows: sequences of cells, as many as `header` has names.

    Returns:
        The table's Markdown, one line a row.

    Raises:
        ValueError: a row has more or fewer cells than the header.

    Example:

    >>> print(markdown_table(["source", "output"], [["ein Hund", "a dog"]]))
    | source | output |
    |---|---|
    | ein Hund | a dog |
    """
    lines = [_row(header), "|" + "---|" * len(header)]
    for index, row in enumerate(rows):
        if len(row) != len(header):
            raise ValueError(
                f"Row {index} of the table has {len(row)} cells; the header has "
                f"{len(header)} ({', '.join(map(str, header))}). Give every row one cell "
                "a column."
            )
        lines.append(_row(row))
    return "\n".join(lines)


def _row(cells):
    return "| " + " | ".join(markdown_text(cell) for cell in cells) + " |"
