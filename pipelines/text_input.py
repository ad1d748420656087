"""Reading raw text for tfnlp's Beam jobs, with every input line accounted for.

`ReadTextLines` yields the text of every usable line of the files a list of
globs matches (local paths, gs:// and any other Beam filesystem; .gz and .bz2
files are decompressed by extension), `ReadDocuments` their documents; both
count every line read (`input_accounting`). The smaller pieces are reused by
other readers (`pipelines.translation_pairs`).
"""

import json
import os
import re

import apache_beam as beam
from apache_beam.io import fileio
from apache_beam.io.filesystems import FileSystems

from pipelines import job
from tfnlp.data.file_patterns import match_patterns, split_patterns

INPUT_FORMATS = ("text", "jsonl")
# Where a jsonl document is split into sentences: line breaks, and the
# spaces after ".", "!", "?" or "…" (and any closing quotes or brackets)
# that come before an upper-case letter, a digit or an opening quote.
SENTENCE_BOUNDARY = re.compile(
    r"\n+|(?<=[.!?…])[\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z0-9À-ÖØ-Þ])"
)
SKIP_REASONS = ("blank", "bad_json", "not_object", "missing_text", "text_not_string")
COUNTER_NAMES = (
    "lines_read",
    "lines_used",
    *(f"lines_skipped_{reason}" for reason in SKIP_REASONS),
    "lines_with_invalid_utf8",
    "lines_with_nul",
)


def match_input_files(patterns, flag="--input_file"):
    """The files matched by `patterns`, checked before any pipeline runs.

    Args:
        patterns: globs or paths on any Beam filesystem: a list, or one
            comma-separated string (`tfnlp.data.file_patterns`).
        flag: the flag that gave them, for the errors.

    Returns:
        The sorted, de-duplicated paths of the matched files (directories
        that a local glob matches are left out). Empty files are kept.

    Raises:
        FileNotFoundError: no pattern was given, or one of them matches no
            file; the message names that pattern.
        PermissionError: a local file matched cannot be read.
    """
    files = match_patterns(patterns, _beam_glob, flag=flag, expected="the text files to read",
                           is_directory=_is_local_directory)
    for path in files:
        if "://" not in path and not os.access(path, os.R_OK):
            raise PermissionError(
                f"The input file {path} of {flag} cannot be read (permission "
                "denied). Make it readable, or leave it out of the glob."
            )
    return files


def _beam_glob(pattern):
    return [metadata.path for metadata in FileSystems.match([pattern])[0].metadata_list]


def _is_local_directory(path):
    return "://" not in path and os.path.isdir(path)


def check_input_format(input_format, formats=INPUT_FORMATS):
    """Checks a reader's `input_format` argument.

    Args:
        input_format: the format asked for.
        formats: the formats the reader knows.

    Raises:
        ValueError: `input_format` is not one of `formats`.
    """
    if input_format not in formats:
        raise ValueError(
            f"input_format must be one of {formats}, not {input_format!r}."
        )


def decode_line(raw):
    """Decodes one line read as bytes.

    Decoding is UTF-8 with `errors="replace"`, so an invalid byte becomes
    U+FFFD, which tfnlp's normalization then drops: the same text as the
    original BERT's `decode(errors="ignore")`. Lines with NUL bytes are kept
    too (normalization drops NUL). Neither kind of line is lost, but both
    are counted.

    Args:
        raw: the line's bytes, without its line end.

    Returns:
        `(text, has_invalid_utf8, has_nul)`: the text with each invalid byte
        sequence replaced by U+FFFD, and whether the line had invalid UTF-8
        or a NUL byte.
    """
    has_nul = b"\x00" in raw
    try:
        return raw.decode("utf-8"), False, has_nul
    except UnicodeDecodeError:
        return raw.decode("utf-8", errors="replace"), True, has_nul


def parse_json_object(text):
    """One JSON Lines record, which must be an object.

    Raw control characters inside strings are accepted (normalization drops
    them later), and a leading byte-order mark is removed.

    Args:
        text: one decoded line.

    Returns:
        `(record, None)`: the dict; or None and the reason the line holds
        none: "bad_json" (not JSON) or "not_object" (JSON of another type).
    """
    try:
        # strict=False accepts raw control characters (NUL included) inside
        # strings. A byte-order mark is not JSON, so it is removed first.
        record = json.loads(text.lstrip("\ufeff"), strict=False)
    except ValueError:
        return None, "bad_json"
    if not isinstance(record, dict):
        return None, "not_object"
    return record, None


def parse_jsonl_record(text):
    """The "text" field of one JSON Lines record.

    Args:
        text: one decoded line.

    Returns:
        `(record_text, skip_reason)`: the string in "text" and None, or None
        and the reason the line has no usable text ("bad_json",
        "not_object", "missing_text" or "text_not_string"). A lone surrogate
        escape in the string becomes U+FFFD (see `repair_surrogates`).
    """
    record, reason = parse_json_object(text)
    if reason is not None:
        return None, reason
    if "text" not in record:
        return None, "missing_text"
    if not isinstance(record["text"], str):
        return None, "text_not_string"
    return record["text"], None


def repair_surrogates(text):
    """`text` with each lone surrogate replaced by U+FFFD.

    Args:
        text: a string that may hold lone surrogates (from JSON escapes such
            as "\\ud800"), which cannot be encoded as UTF-8.

    Returns:
        `(text, repaired)`: the text, and whether anything was replaced.
    """
    try:
        text.encode("utf-8")
        return text, False
    except UnicodeEncodeError:
        # Valid pairs combine through UTF-16; lone halves become U+FFFD.
        repaired = text.encode("utf-16-le", "surrogatepass").decode(
            "utf-16-le", errors="replace"
        )
        return repaired, True


class _DecodeLines(job.CountingDoFn):
    """Decodes (and for jsonl parses) raw lines, counting every one.

    The main output is the text of each used line; the output tagged
    `job.COUNTS_TAG` holds one dict of counts per bundle.
    """

    COUNTER_NAMES = COUNTER_NAMES  # the module's names: every bundle reports each one

    def __init__(self, input_format):
        self._input_format = input_format

    def process(self, raw):
        counts = self.counts
        counts["lines_read"] += 1
        text, has_invalid_utf8, has_nul = decode_line(raw)
        if self._input_format == "jsonl" and text.strip():
            text, skip_reason = parse_jsonl_record(text)
            if skip_reason is None:
                text, repaired = repair_surrogates(text)
                has_invalid_utf8 = has_invalid_utf8 or repaired
        else:
            skip_reason = None
        counts["lines_with_invalid_utf8"] += has_invalid_utf8
        counts["lines_with_nul"] += has_nul
        if skip_reason is None and not text.strip():
            skip_reason = "blank"
        if skip_reason is not None:
            counts[f"lines_skipped_{skip_reason}"] += 1
            return
        counts["lines_used"] += 1
        yield text


def input_accounting(counts):
    """The stats-file section that accounts for every line read.

    Every line read is accounted for, both as Beam metrics (namespace
    "tfnlp", the names in `COUNTER_NAMES`) and in the counts this turns
    into the stats:

        lines_read == lines_used + sum(lines_skipped.values())

    where the skip reasons are "blank" (empty or whitespace-only text) and,
    for jsonl, "bad_json", "not_object" (valid JSON that is not an object),
    "missing_text" and "text_not_string". `lines_with_invalid_utf8`
    (invalid bytes, or a lone surrogate escape in JSON) and `lines_with_nul`
    count lines that were repaired, whatever their fate.

    Args:
        counts: the dict produced by `ReadTextLines`'s counts output.

    Returns:
        A dict with "lines_read", "lines_used", "lines_skipped" (by reason),
        and "lines_repaired" ("invalid_utf8" and "nul": lines that were
        kept or skipped after their invalid bytes were replaced, their NUL
        bytes to be dropped).
    """
    return {
        "lines_read": counts["lines_read"],
        "lines_used": counts["lines_used"],
        "lines_skipped": {
            reason: counts[f"lines_skipped_{reason}"] for reason in SKIP_REASONS
        },
        "lines_repaired": {
            "invalid_utf8": counts["lines_with_invalid_utf8"],
            "nul": counts["lines_with_nul"],
        },
    }


class ReadRawLines(beam.PTransform):
    """Reads every line of the given files, as bytes without the line end.

    Files are read with `ReadAllFromText`, which splits large files across
    workers and decompresses `.gz` and `.bz2` files by extension; lines of
    any length (a megabyte and more) are read whole. Applied to a pipeline,
    it returns the PCollection of the lines (bytes), in no particular order.

    Args:
        files: the paths (`match_input_files`).
        label: an optional label for the transform.
    """

    def __init__(self, files, label=None):
        super().__init__(label)
        self.files = list(files)

    def expand(self, pipeline_or_pcollection):
        return (
            pipeline_or_pcollection.pipeline
            | "ListFiles" >> beam.Create(self.files)
            | "ReadLines" >> beam.io.ReadAllFromText(
                coder=beam.coders.BytesCoder(), strip_trailing_newlines=True
            )
        )


class ReadTextLines(beam.PTransform):
    """Reads the text of every line of the matched files, counting each line.

    - `input_format="text"`: each line is one record (BERT's format: one
      sentence per line, a blank line between documents);
    - `input_format="jsonl"`: each line is a JSON object whose "text" field
      (a string) is the record; any other field, such as an optional "id",
      is ignored here.

    Lines come out in no particular order, so that files are split and read
    in parallel (`ReadDocuments` keeps the line order that documents need).

    The globs are matched when the transform is created, so a glob that
    matches nothing fails before the pipeline starts. Files are read with
    `ReadRawLines`, which splits large files across workers; lines of any
    length (a megabyte and more) are read whole.

    Applied to a pipeline (`texts, counts = pipeline | ReadTextLines(...)`),
    it returns two PCollections: the text (str) of each used line, in no
    particular order, and a single dict of counts (see `input_accounting`).

    Args:
        patterns: a list of globs (or one comma-separated string) on any
            Beam filesystem.
        input_format: "text" (one record per line) or "jsonl" (one JSON
            object per line; its "text" field is the record).
        label: an optional label for the transform.

    Attributes:
        files: the sorted paths of the matched files.

    Raises:
        FileNotFoundError: a glob matches no file.
        ValueError: `input_format` is not one of `INPUT_FORMATS`.
    """

    def __init__(self, patterns, input_format="text", label=None):
        super().__init__(label)
        check_input_format(input_format)
        self.patterns = split_patterns(patterns)
        self.input_format = input_format
        self.files = match_input_files(self.patterns)

    def expand(self, pipeline_or_pcollection):
        raw_lines = pipeline_or_pcollection | "ReadLines" >> ReadRawLines(self.files)
        decoded = raw_lines | "DecodeLines" >> beam.ParDo(
            _DecodeLines(self.input_format)
        ).with_outputs(job.COUNTS_TAG, main="texts")
        counts = decoded[job.COUNTS_TAG] | "SumCounts" >> beam.CombineGlobally(
            job.SumCounts(COUNTER_NAMES)
        )
        return decoded.texts, counts


def split_sentences(text):
    """The sentences of a jsonl document's text, at `SENTENCE_BOUNDARY`.

    Args:
        text: the record's text.

    Returns:
        The non-empty sentences, stripped of surrounding whitespace, in
        order.
    """
    return [sentence.strip() for sentence in SENTENCE_BOUNDARY.split(text)
            if sentence.strip()]


class _ReadTextFileDocuments(job.CountingDoFn):
    """Reads one text file into documents (lists of sentence strings).

    Counts lines (read, used, skipped as blank or too long, repaired) and
    documents read.
    """

    def __init__(self, max_line_bytes):
        self._max_line_bytes = max_line_bytes

    def process(self, readable_file):
        document = []
        with readable_file.open() as file:
            while raw := file.readline():
                self.count("lines_read")
                raw = raw.rstrip(b"\r\n")
                if len(raw) > self._max_line_bytes:
                    self.count("lines_skipped_too_long")
                    continue
                text, invalid_utf8, nul = decode_line(raw)
                self.count("lines_with_invalid_utf8", invalid_utf8)
                self.count("lines_with_nul", nul)
                if text.strip():
                    self.count("lines_used")
                    document.append(text)
                    continue
                self.count("lines_skipped_blank")
                if document:
                    self.count("documents_read")
                    yield document
                document = []
        if document:
            self.count("documents_read")
            yield document


class _SplitJsonlDocuments(job.CountingDoFn):
    """Turns each jsonl record's text into a document of sentences."""

    def process(self, text):
        self.count("documents_read")
        yield split_sentences(text)


class ReadDocuments(beam.PTransform):
    """Reads documents from the matched files, counting every line and document.

    A document is a list of sentence strings:

    - `input_format="text"` (BERT's format): each file is read whole by one
      worker, in line order; a document is a run of non-blank lines, one
      sentence each, ended by a blank line or the end of the file. Lines of
      more than `max_line_bytes` bytes are skipped.
    - `input_format="jsonl"`: each record (read by `ReadTextLines`) is one
      document, its text split into sentences by `split_sentences`.

    The globs are matched when the transform is created, so a glob that
    matches nothing fails before the pipeline starts.

    Applied to a pipeline (`documents, counts = pipeline | ReadDocuments(...)`),
    it returns two PCollections: the documents, in no particular order, and
    a single dict of counts: "lines_read", "lines_used",
    "lines_skipped_<reason>" ("blank", "too_long" for text; those of
    `ReadTextLines` for jsonl), "lines_with_invalid_utf8",
    "lines_with_nul" and "documents_read" (names never counted may be
    missing).

    Args:
        patterns: a list of globs (or one comma-separated string) on any
            Beam filesystem.
        input_format: "text" or "jsonl".
        max_line_bytes: the longest line kept, in bytes (text only).
        label: an optional label for the transform.

    Raises:
        FileNotFoundError: a glob matches no file.
        ValueError: `input_format` is not one of `INPUT_FORMATS`.
    """

    def __init__(self, patterns, input_format="text", max_line_bytes=1_000_000,
                 label=None):
        super().__init__(label)
        check_input_format(input_format)
        self.input_format = input_format
        self.max_line_bytes = max_line_bytes
        if input_format == "text":
            self.files = match_input_files(patterns)
        else:
            self._line_reader = ReadTextLines(patterns, "jsonl")

    def expand(self, pipeline_or_pcollection):
        pipeline = pipeline_or_pcollection.pipeline
        if self.input_format == "text":
            read = (
                pipeline
                | "ListFiles" >> beam.Create(self.files)
                | "MatchFiles" >> fileio.MatchAll()
                # Spreads the files over the workers, not one bundle for all.
                | "SpreadFiles" >> beam.Reshuffle()
                | "OpenFiles" >> fileio.ReadMatches()
                | "ReadDocuments"
                >> beam.ParDo(_ReadTextFileDocuments(self.max_line_bytes)).with_outputs(
                    job.COUNTS_TAG, main="documents"
                )
            )
            documents, counts = read.documents, [read[job.COUNTS_TAG]]
        else:
            texts, line_counts = pipeline | "ReadJsonl" >> self._line_reader
            split = texts | "SplitSentences" >> beam.ParDo(
                _SplitJsonlDocuments()
            ).with_outputs(job.COUNTS_TAG, main="documents")
            documents, counts = split.documents, [line_counts, split[job.COUNTS_TAG]]
        summed = (
            counts
            | "AllCounts" >> beam.Flatten()
            | "SumCounts" >> beam.CombineGlobally(job.SumCounts())
        )
        return documents, summed
