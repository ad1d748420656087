"""Reading translation pairs for `pipelines.translation_data`, every input
pair accounted for.

`ReadTranslationPairs` yields `(source, target)` string pairs from
line-aligned files, tsv or jsonl, and counts every pair it drops by reason;
the other functions check, parse and count what it reads.
"""

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from pipelines import job, text_input
from pipelines.user_errors import UserError

INPUT_FORMATS = ("aligned", "tsv", "jsonl")
READ_DROP_REASONS = (
    "blank_line",
    "bad_tsv",
    "bad_json",
    "not_object",
    "missing_field",
    "field_not_string",
)
COUNTER_NAMES = (
    "pairs_read",
    *(f"pairs_dropped_{reason}" for reason in READ_DROP_REASONS),
    "pairs_with_invalid_utf8",
)
_CHUNK_BYTES = 1 << 20


def count_lines(path):
    """The number of lines of `path`, as the readers of this module see them.

    Streams the file (decompressed by extension) in 1 MB chunks and counts
    newline bytes; a last line without a newline counts too. Lines end at
    "\\n" only ("\\r\\n" is one line end, a lone "\\r" is text).

    Args:
        path: a file on any Beam filesystem.

    Returns:
        The line count.
    """
    lines = 0
    last = b""
    with FileSystems.open(path) as file:
        while chunk := file.read(_CHUNK_BYTES):
            lines += chunk.count(b"\n")
            last = chunk
    return lines + (bool(last) and not last.endswith(b"\n"))


def match_aligned_files(source_patterns, target_patterns):
    """Pairs the files that two sets of globs match, one to one.

    Args:
        source_patterns: globs of the source files (a list, or one
            comma-separated string).
        target_patterns: globs of the target files.

    Returns:
        `(source_path, target_path)` tuples: the sorted source files paired
        with the sorted target files.

    Raises:
        FileNotFoundError: a glob matches no file.
        ValueError: the globs match different numbers of files.
    """
    sources = text_input.match_input_files(source_patterns)
    targets = text_input.match_input_files(target_patterns)
    if len(sources) != len(targets):
        raise ValueError(
            f"--source_file={source_patterns!r} matches {len(sources)} files but "
            f"--target_file={target_patterns!r} matches {len(targets)}: "
            f"{_file_list(sources)} against {_file_list(targets)}. Line-aligned "
            "files are paired one to one in sorted order, so both sides need the "
            "same number of files; fix the globs so that each source file has its "
            "target file."
        )
    return list(zip(sources, targets))


def _file_list(paths, limit=5):
    shown = ", ".join(paths[:limit])
    return f"[{shown}{', ...' if len(paths) > limit else ''}]"


def line_count_error(source_path, source_lines, target_path, target_lines):
    """The error of two aligned files whose line counts differ."""
    return ValueError(
        f"The source file {source_path} has {source_lines} lines but the target "
        f"file {target_path} has {target_lines}. Line-aligned files must have the "
        "same number of lines (line i of one translates line i of the other). "
        "Check that the two files belong together, and that no sentence holds a "
        "stray line break; or give the pairs one a line with --input_format=tsv "
        "or jsonl."
    )


def check_aligned_line_counts(file_pairs):
    """Checks that each pair of aligned files has equal line counts.

    The driver streams both files once, counting newline bytes (about 1 GB/s
    from a local disk; no text is decoded or kept), and a difference is an
    error naming both files and both counts. For a huge corpus on remote
    storage the check can be turned off: the reading step then fails on the
    first pair of files that differ, with the same message, once the job
    reaches it.

    Args:
        file_pairs: `(source_path, target_path)` tuples.

    Returns:
        The total number of line pairs.

    Raises:
        ValueError: a pair's counts differ; the message names both files and
            both counts.
    """
    total = 0
    for source_path, target_path in file_pairs:
        source_lines = count_lines(source_path)
        target_lines = count_lines(target_path)
        if source_lines != target_lines:
            raise line_count_error(source_path, source_lines, target_path, target_lines)
        total += source_lines
    return total


def strip_line_end(raw):
    """`raw` (bytes) without its "\\n" or "\\r\\n" line end."""
    if raw.endswith(b"\n"):
        raw = raw[:-1]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
    return raw


def parse_tsv_pair(text):
    """The pair of one tsv line.

    Args:
        text: the decoded line, without its line end.

    Returns:
        `((source, target), None)`, or `(None, "bad_tsv")` when the line
        does not have exactly one tab.
    """
    fields = text.split("\t")
    if len(fields) != 2:
        return None, "bad_tsv"
    return (fields[0], fields[1]), None


def json_field(record, name):
    """The value of field `name` of a JSON object, or None when missing.

    A name with dots ("translation.de") reaches into nested objects, unless
    the object has a key spelled with the dots.
    """
    if name in record:
        return record[name]
    value = record
    for part in name.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def parse_jsonl_pair(text, source_field, target_field):
    """The pair of one JSON Lines record.

    Args:
        text: the decoded line.
        source_field: the field (or dotted path) of the source string.
        target_field: the field (or dotted path) of the target string.

    Returns:
        `((source, target), None)`, or None and the reason the line has no
        pair: "bad_json", "not_object", "missing_field" (either field) or
        "field_not_string" (either field).
    """
    record, reason = text_input.parse_json_object(text)
    if reason is not None:
        return None, reason
    values = [json_field(record, name) for name in (source_field, target_field)]
    if any(value is None for value in values):
        return None, "missing_field"
    if not all(isinstance(value, str) for value in values):
        return None, "field_not_string"
    return tuple(values), None


class _ReadAlignedFilePair(job.CountingDoFn):
    """Reads one pair of line-aligned files, zipping their lines.

    The element is a `(source_path, target_path)` tuple; the output is one
    `(source, target)` string pair per pair of lines, in file order.

    Why one worker per file pair: Beam reads a text file in parallel pieces
    that carry no line numbers, so two files cannot be joined on "line i"
    without first numbering every line of both in one pass and then
    shuffling both sides to meet. Zipping the two files here shuffles
    nothing, holds nothing in memory, streams the pairs in order, and cannot
    pair wrongly. The trade-off is parallelism: a corpus in one huge pair of
    files is read serially (at tens of MB/s, still well ahead of the
    tokenizing that follows and that Beam spreads over all workers). Split a
    very large corpus into aligned parts (`split -l` on both sides) to read
    it in parallel.
    """

    COUNTER_NAMES = COUNTER_NAMES

    def process(self, file_pair):
        source_path, target_path = file_pair
        counts = self.counts
        with FileSystems.open(source_path) as source, FileSystems.open(target_path) as target:
            while True:
                source_raw = source.readline()
                target_raw = target.readline()
                if not source_raw or not target_raw:
                    if source_raw or target_raw:
                        shorter, longer = (
                            (target_path, source_path) if source_raw
                            else (source_path, target_path))
                        raise UserError(
                            f"The line-aligned files {source_path} (source) and "
                            f"{target_path} (target) differ in length: {shorter} "
                            f"ends after {counts['pairs_read']} lines while {longer} "
                            "goes on. Line i of one must translate line i of the "
                            "other; check that the files belong together (with "
                            "--check_line_counts, the default, this is found "
                            "before the job runs)."
                        )
                    return
                counts["pairs_read"] += 1
                source_text, source_invalid, _ = text_input.decode_line(
                    strip_line_end(source_raw)
                )
                target_text, target_invalid, _ = text_input.decode_line(
                    strip_line_end(target_raw)
                )
                counts["pairs_with_invalid_utf8"] += source_invalid or target_invalid
                yield source_text, target_text


class _ParsePairLines(job.CountingDoFn):
    """Parses raw tsv or jsonl lines (bytes) into `(source, target)` pairs."""

    COUNTER_NAMES = COUNTER_NAMES

    def __init__(self, input_format, source_field, target_field):
        self._input_format = input_format
        self._source_field = source_field
        self._target_field = target_field

    def process(self, raw):
        counts = self.counts
        counts["pairs_read"] += 1
        text, invalid, _ = text_input.decode_line(raw)
        if not text.strip():
            counts["pairs_dropped_blank_line"] += 1
            return
        if self._input_format == "tsv":
            pair, reason = parse_tsv_pair(text)
        else:
            pair, reason = parse_jsonl_pair(text, self._source_field, self._target_field)
            if pair is not None:
                (source, source_repaired), (target, target_repaired) = (
                    text_input.repair_surrogates(side) for side in pair
                )
                pair = source, target
                invalid = invalid or source_repaired or target_repaired
        counts["pairs_with_invalid_utf8"] += invalid
        if reason is not None:
            counts[f"pairs_dropped_{reason}"] += 1
            return
        yield pair


class ReadTranslationPairs(beam.PTransform):
    """Reads `(source, target)` string pairs, counting every pair read.

    The globs are matched, and for aligned input the line counts checked,
    when the transform is created, so a missing file or two files of
    different lengths fail before any pipeline runs
    (`check_aligned_line_counts`). Local paths, gs:// and any other Beam
    filesystem work; `.gz` and `.bz2` files are decompressed by extension.

    - `aligned` (the default): line-aligned files, line i of the source
      file translating line i of the target file (Multi30k, WMT, Europarl,
      OPUS Moses files). `source_file` and `target_file` are globs; the
      sorted lists of files they match are paired one to one, so
      `--source_file='train.*.en' --target_file='train.*.de'` pairs
      `train.1.en` with `train.1.de`, and so on. One worker reads each file
      pair (`_ReadAlignedFilePair` says why).
    - `tsv`: one pair a line, `source<TAB>target` (`input_file`); a line
      without exactly one tab is dropped as "bad_tsv".
    - `jsonl`: one JSON object a line (`input_file`) whose `source_field`
      and `target_field` (default "source" and "target") hold the two
      strings; a dotted name such as "translation.de" reaches into nested
      objects (the layout of Hugging Face's translation datasets), unless
      the object has a key with the dots in it.

    tsv and jsonl files are read with Beam's splittable text source, in
    parallel within a file. Every line read (for `aligned`: every pair of
    lines) counts as one pair read, and every pair that does not come out is
    counted under its reason: "blank_line" (a whitespace-only tsv/jsonl
    line), "bad_tsv", "bad_json", "not_object", "missing_field" and
    "field_not_string". Lines are read as bytes and decoded as UTF-8 with
    each invalid sequence replaced by U+FFFD (a lone surrogate escape in
    JSON too), which SentencePiece's `nmt_nfkc` normalization then removes
    (as BERT's `errors="ignore"` decoding drops the bytes); such pairs are
    kept and counted under "pairs_with_invalid_utf8".

    Applied to a pipeline (`pairs, counts = pipeline | ReadTranslationPairs(...)`),
    it returns two PCollections: the pairs, in no particular order, and a
    single dict of counts: "pairs_read", "pairs_dropped_<reason>" for each
    of `READ_DROP_REASONS`, and "pairs_with_invalid_utf8".

    Args:
        input_format: "aligned", "tsv" or "jsonl".
        source_file: the globs of the source files (aligned only; a list or
            one comma-separated string).
        target_file: the globs of the target files (aligned only).
        input_file: the globs of the tsv or jsonl files.
        source_field: the jsonl field of the source string.
        target_field: the jsonl field of the target string.
        check_line_counts: count the lines of each aligned file pair now,
            in this process, and raise if they differ.
        label: an optional label for the transform.

    Attributes:
        file_pairs: the `(source_path, target_path)` pairs (aligned).
        files: the matched files (tsv and jsonl).
        line_pairs: the number of aligned line pairs, when counted (else
            None).

    Raises:
        FileNotFoundError: a glob matches no file.
        ValueError: the format is unknown, the flags of the other format are
            given, or aligned files differ in number or in line counts.

    Example:

    >>> import os, tempfile, apache_beam as beam
    >>> folder = tempfile.mkdtemp()
    >>> for name, text in (("a.en", "Hello.\\nThanks.\\n"), ("a.de", "Hallo.\\nDanke.\\n")):
    ...     with open(os.path.join(folder, name), "w") as file:
    ...         _ = file.write(text)
    >>> reader = ReadTranslationPairs(source_file=os.path.join(folder, "*.en"),
    ...                               target_file=os.path.join(folder, "*.de"))
    >>> reader.line_pairs
    2
    >>> with beam.Pipeline() as pipeline:
    ...     pairs, counts = pipeline | reader
    ...     _ = pairs | beam.combiners.ToList() | beam.Map(lambda p: print(sorted(p)))
    [('Hello.', 'Hallo.'), ('Thanks.', 'Danke.')]

    References:
        - [Koehn, 2005. Europarl: A Parallel Corpus for Statistical Machine
          Translation](https://aclanthology.org/2005.mtsummit-papers.11),
          the line-aligned format.
    """

    def __init__(self, input_format="aligned", source_file=None, target_file=None,
                 input_file=None, source_field="source", target_field="target",
                 check_line_counts=True, label=None):
        super().__init__(label)
        text_input.check_input_format(input_format, INPUT_FORMATS)
        self.input_format = input_format
        self.source_field = source_field
        self.target_field = target_field
        self.file_pairs = self.files = self.line_pairs = None
        if input_format == "aligned":
            if input_file or not source_file or not target_file:
                raise ValueError(
                    "Line-aligned input (--input_format=aligned, the default) is read "
                    "from --source_file and --target_file, both required; "
                    "--input_file is for --input_format=tsv or jsonl."
                )
            self.file_pairs = match_aligned_files(source_file, target_file)
            if check_line_counts:
                self.line_pairs = check_aligned_line_counts(self.file_pairs)
        else:
            if source_file or target_file or not input_file:
                raise ValueError(
                    f"--input_format={input_format} reads one pair a line from "
                    "--input_file (required); --source_file and --target_file are "
                    "for line-aligned files (--input_format=aligned)."
                )
            self.files = text_input.match_input_files(input_file)

    def expand(self, pipeline_or_pcollection):
        pipeline = pipeline_or_pcollection.pipeline
        if self.input_format == "aligned":
            read = (
                pipeline
                | "ListFilePairs" >> beam.Create(self.file_pairs)
                # One file pair per worker: without the reshuffle a runner may
                # fuse all pairs into the Create's single bundle.
                | "SpreadFilePairs" >> beam.Reshuffle()
                | "ZipLines" >> beam.ParDo(_ReadAlignedFilePair()).with_outputs(
                    job.COUNTS_TAG, main="pairs")
            )
        else:
            read = (
                pipeline
                | "ReadLines" >> text_input.ReadRawLines(self.files)
                | "ParsePairs" >> beam.ParDo(
                    _ParsePairLines(self.input_format, self.source_field,
                                    self.target_field)
                ).with_outputs(job.COUNTS_TAG, main="pairs")
            )
        counts = read[job.COUNTS_TAG] | "SumCounts" >> beam.CombineGlobally(
            job.SumCounts(COUNTER_NAMES))
        return read.pairs, counts
