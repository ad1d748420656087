"""Reading whole documents as text, line breaks kept, with every line accounted for.

`ReadDocumentTexts` gives each document as one string, as a language model
reads it (`pipelines.lm_data`), where `text_input.ReadDocuments` gives
lists of sentences (BERT's format):

- `input_format="text"`, `document_boundary="blank_line"`: a document is a
  run of non-blank lines ended by a blank line or the end of the file
  (`text_input.ReadDocuments`), its lines joined by "\\n" (each line's own
  "\\r\\n" or "\\n" is its end; indentation stays);
- `input_format="text"`, `document_boundary="file"`: a file is one
  document, its exact text (blank lines, "\\r" and the final line break
  included), read whole by one worker: the layout of char-rnn and
  nanoGPT's Tiny Shakespeare, one stream. A file of blank lines only is
  no document (its lines count as skipped "blank");
- `input_format="jsonl"`: each record's "text" field is one document
  (`text_input.ReadTextLines`).

Every line read is counted as in `pipelines.text_input` ("lines_read",
"lines_used", "lines_skipped_<reason>", "lines_with_invalid_utf8",
"lines_with_nul"), and the documents as "documents_read", so that
`lines_read == lines_used + sum(lines_skipped)`. A file's lines are its
"\\n"-separated parts, a final line break ending the last line rather than
starting an empty one.
"""

import apache_beam as beam
from apache_beam.io import fileio

from pipelines import job, text_input

DOCUMENT_BOUNDARIES = ("blank_line", "file")


class _ReadWholeFileDocument(job.CountingDoFn):
    """Reads one text file as one document (its exact text), counting its lines."""

    def process(self, readable_file):
        with readable_file.open() as file:
            contents = file.read()
        parts = contents.split(b"\n")
        line_count = len(parts) - (1 if contents.endswith(b"\n") or not contents else 0)
        texts = []
        for number, raw in enumerate(parts):
            text, invalid_utf8, nul = text_input.decode_line(raw)
            texts.append(text)
            if number < line_count:
                self.count("lines_with_invalid_utf8", invalid_utf8)
                self.count("lines_with_nul", nul)
        self.count("lines_read", line_count)
        document = "\n".join(texts)
        if not document.strip():
            self.count("lines_skipped_blank", line_count)
            return
        self.count("lines_used", line_count)
        self.count("documents_read")
        yield document


def _with_documents_read(counts):
    """A jsonl reader's counts, with each used line counted as a document."""
    return {**counts, "documents_read": counts.get("lines_used", 0)}


class ReadDocumentTexts(beam.PTransform):
    """Reads documents as whole strings, counting every line and document.

    Applied to a pipeline (`texts, counts = pipeline | ReadDocumentTexts(...)`),
    it returns two PCollections: the documents (str, line breaks inside, in
    no particular order) and a single dict of counts (see the module
    docstring). The globs are matched when the transform is created, so a
    glob that matches nothing fails before the pipeline starts.

    Args:
        patterns: a list of globs (or one comma-separated string) on any
            Beam filesystem; `.gz` and `.bz2` files are decompressed.
        input_format: "text" or "jsonl".
        document_boundary: for text, "blank_line" or "file" (see the module
            docstring); jsonl records are documents whatever it says.
        max_line_bytes: with "blank_line", longer lines are skipped and
            counted ("too_long").
        label: an optional label for the transform.

    Raises:
        FileNotFoundError: a glob matches no file.
        ValueError: an unknown `input_format` or `document_boundary`.

    Example:

    >>> import os, tempfile, apache_beam as beam
    >>> path = os.path.join(tempfile.mkdtemp(), "play.txt")
    >>> with open(path, "w") as file:
    ...     _ = file.write("ROMEO:\\nHark!\\n\\nJULIET:\\nAy me.\\n")
    >>> with beam.Pipeline() as pipeline:
    ...     texts, counts = pipeline | ReadDocumentTexts(path, "text", "file")
    ...     _ = texts | beam.Map(lambda text: print(repr(text)))
    'ROMEO:\\nHark!\\n\\nJULIET:\\nAy me.\\n'
    """

    def __init__(self, patterns, input_format="text", document_boundary="blank_line",
                 max_line_bytes=1_000_000, label=None):
        super().__init__(label)
        text_input.check_input_format(input_format)
        if document_boundary not in DOCUMENT_BOUNDARIES:
            raise ValueError(
                f"document_boundary must be one of {DOCUMENT_BOUNDARIES}, not "
                f"{document_boundary!r}."
            )
        self.input_format = input_format
        self.document_boundary = document_boundary
        if input_format == "jsonl":
            self._reader = text_input.ReadTextLines(patterns, "jsonl")
        elif document_boundary == "blank_line":
            self._reader = text_input.ReadDocuments(patterns, "text", max_line_bytes)
        else:
            self.files = text_input.match_input_files(patterns)

    def expand(self, pipeline_or_pcollection):
        pipeline = pipeline_or_pcollection.pipeline
        if self.input_format == "jsonl":
            texts, counts = pipeline | "ReadJsonl" >> self._reader
            return texts, counts | "CountDocuments" >> beam.Map(_with_documents_read)
        if self.document_boundary == "blank_line":
            documents, counts = pipeline | "ReadDocuments" >> self._reader
            return documents | "JoinLines" >> beam.Map("\n".join), counts
        read = (
            pipeline
            | "ListFiles" >> beam.Create(self.files)
            | "MatchFiles" >> fileio.MatchAll()
            | "SpreadFiles" >> beam.Reshuffle()
            | "OpenFiles" >> fileio.ReadMatches()
            | "ReadFiles" >> beam.ParDo(_ReadWholeFileDocument()).with_outputs(
                job.COUNTS_TAG, main="documents")
        )
        counts = read[job.COUNTS_TAG] | "SumCounts" >> beam.CombineGlobally(job.SumCounts(
            (*text_input.COUNTER_NAMES, "documents_read")))
        return read.documents, counts
