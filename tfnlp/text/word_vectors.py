"""Pretrained word vectors (word2vec, GloVe) and their alignment to a vocabulary.

A distilled student with a word-level encoder (the BiLSTM of Tang et al.,
2019) starts from pretrained word vectors. This module reads the three
common file formats and builds the student's embedding matrix from them:

- `"word2vec_binary"`: the word2vec tool's binary output. A header line
  "count dimension", then per word its UTF-8 bytes, a space and
  `dimension` little-endian float32 values, optionally followed by a line
  break (the word2vec tool writes one, gensim does not).
- `"word2vec_text"`: the same header line, then a line per word: the word
  and its values, separated by single spaces.
- `"glove"`: GloVe's text format: the word2vec text lines with no header;
  the first line's count of values is the dimension.

Any of them may be gzip-compressed (recognised by its first bytes, whatever
the file's name). `detect_word_vector_format` tells the formats apart from
the file's first lines; `iterate_word_vectors` streams a file's vectors,
`read_word_vectors` collects those of chosen words, and
`align_word_vectors` gives the embedding matrix of a vocabulary with counts
of the words found and missing.

The readers are written here on numpy rather than taken from gensim, which
is not a dependency of tfnlp, and so that a file is streamed: only the
vectors of the words asked for are parsed and kept, which is what lets a
vocabulary of tens of thousands of words take its rows from a GloVe or
word2vec file of several gigabytes.
"""

import contextlib
import dataclasses
import gzip
import re
import zlib

import numpy as np

WORD_VECTOR_FORMATS = ("auto", "word2vec_binary", "word2vec_text", "glove")

_GZIP_MAGIC = b"\x1f\x8b"
_UTF8_BYTE_ORDER_MARK = b"\xef\xbb\xbf"
_HEADER = re.compile(rb"^\s*(\d+)\s+(\d+)\s*$")
# The longest word the binary reader looks for a space behind before it
# calls the file broken (real words are far shorter).
_LONGEST_BINARY_WORD = 1 << 16
# How much the binary reader asks its file for at a time.
_BINARY_CHUNK_BYTES = 1 << 20
# The longest line the format detection reads.
_LONGEST_DETECTED_LINE = 1 << 24
_FLOAT32 = np.dtype("<f4")


class WordVectorFileError(ValueError):
    """A word-vector file that cannot be read as the format it was taken for.

    The message names the file and the line (text formats) or byte offset
    (binary format, counted in the decompressed data of a gzip file), what
    was found there, what was expected and what to do.

    Example:

    >>> issubclass(WordVectorFileError, ValueError)
    True
    """


@dataclasses.dataclass(frozen=True)
class WordVectorAlignment:
    """The embedding matrix of a vocabulary, and how its words were found.

    `found_exact + found_lowercase + missing + padding` is the size of the
    vocabulary.

    Args:
        embeddings: the float32 matrix `(vocabulary_size, dimension)`; row
            `i` belongs to the vocabulary's token `i`.
        found_exact: how many tokens (padding ids left out) had a vector of
            their own in the file.
        found_lowercase: how many took the vector of a word that differs
            from them only in case (with `lowercase_fallback`).
        missing: how many were not in the file (out of vocabulary); their
            rows are drawn at random.
        missing_words: those tokens, in vocabulary order.
        padding: how many rows were padding ids (zeros).

    Example:

    >>> import numpy as np
    >>> alignment = WordVectorAlignment(
    ...     embeddings=np.zeros((3, 2), "float32"), found_exact=1,
    ...     found_lowercase=0, missing=1, missing_words=("zzz",), padding=1)
    >>> alignment.dimension
    2

    References:
        - [Tang et al., 2019](https://arxiv.org/abs/1903.12136)
    """

    embeddings: np.ndarray
    found_exact: int
    found_lowercase: int
    missing: int
    missing_words: tuple
    padding: int

    @property
    def dimension(self):
        """The vectors' dimension (the embedding matrix's second axis)."""
        return self.embeddings.shape[1]


def _file_error(path, where, found, expected, remedy):
    return WordVectorFileError(f"{path}, {where}: {found}; expected {expected}. {remedy}")


def _empty_file_error(path, expected):
    return _file_error(
        path, "line 1", "the file is empty or starts with a blank line", expected,
        "Check that the path points at the word-vector file and that it was fully "
        "written.")


def _is_gzip(path):
    with open(path, "rb") as file:
        return file.read(2) == _GZIP_MAGIC


def _open(path):
    """`path` opened for reading bytes, decompressed when it is gzip."""
    return gzip.open(path, "rb") if _is_gzip(path) else open(path, "rb")


def _offset_place(path, offset):
    return f"byte offset {offset}" + (" of the decompressed data" if _is_gzip(path) else "")


def _header(line):
    """(count, dimension) of a word2vec header line, or None."""
    match = _HEADER.match(line.removeprefix(_UTF8_BYTE_ORDER_MARK))
    return None if match is None else (int(match.group(1)), int(match.group(2)))


def _looks_like_text_vector(line, dimension):
    """Whether `line` is a word and `dimension` numbers, space-separated."""
    try:
        text = line.decode("utf-8").rstrip("\r\n ")
    except UnicodeDecodeError:
        return False
    fields = _split_text_record(text, dimension)
    return fields is not None and all(_is_number(value) for value in fields[1:])


def _check_format(format):
    if format not in WORD_VECTOR_FORMATS:
        raise ValueError(
            f"Unknown word-vector format {format!r}; expected one of "
            f"{', '.join(repr(name) for name in WORD_VECTOR_FORMATS)}. Pass one of "
            "those, or \"auto\" to tell it from the file."
        )


def detect_word_vector_format(path):
    """Tells the format of a word-vector file from its first lines.

    A first line of two whole numbers ("count dimension") is a word2vec
    header: the file is `"word2vec_text"` when the next line is a word and
    `dimension` numbers, `"word2vec_binary"` otherwise. Any other first line
    makes it `"glove"` (a GloVe file whose first line is a number and one
    integer value, such as "7 3", would read as a header: name its format).
    A gzip file is told by its first bytes and looked into.

    Args:
        path: the file.

    Returns:
        `"word2vec_binary"`, `"word2vec_text"` or `"glove"`.

    Raises:
        WordVectorFileError: the file is empty.

    Example:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "vectors.txt")
    >>> with open(path, "w") as file:
    ...     _ = file.write("2 3\\ncat 0.1 0.2 0.3\\ndog 0.4 0.5 0.6\\n")
    >>> detect_word_vector_format(path)
    'word2vec_text'

    References:
        - [Mikolov et al., 2013](https://arxiv.org/abs/1301.3781) (word2vec)
        - [Pennington et al., 2014](https://aclanthology.org/D14-1162/) (GloVe)
    """
    with _open(path) as file, _gzip_errors_told(path):
        first = file.readline(_LONGEST_DETECTED_LINE)
        if not first.strip():
            raise _empty_file_error(
                path, "a word2vec header (\"count dimension\") or a GloVe line (a "
                "word and its values)")
        header = _header(first)
        if header is None:
            return "glove"
        second = file.readline(_LONGEST_DETECTED_LINE)
    if not second.strip() or _looks_like_text_vector(second, header[1]):
        return "word2vec_text"
    return "word2vec_binary"


def _check_dimension(path, where, dimension, expected_dimension, source):
    if dimension < 1:
        raise _file_error(
            path, where, f"{source} gives dimension {dimension}",
            "a dimension of at least 1",
            "The file is not a word-vector file, or its header is broken.")
    if expected_dimension is not None and dimension != expected_dimension:
        raise _file_error(
            path, where, f"the vectors have dimension {dimension} ({source})",
            f"dimension {expected_dimension}, as asked for",
            "Use vectors of that dimension, or change the dimension the "
            "student's embeddings are built with.")


def _parse_values(path, line_number, word, values, dimension):
    try:
        return np.array(values, dtype=np.float32)
    except ValueError:
        for value in values:
            try:
                float(value)
            except ValueError:
                raise _file_error(
                    path, f"line {line_number}",
                    f"the value {value!r} of the word {word!r} is not a number",
                    f"the word and {dimension} numbers separated by single spaces",
                    "Fix or remove that line.") from None
        raise


def _excerpt(text, length=60):
    return repr(text) if len(text) <= length else repr(text[:length]) + "..."


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def _split_text_record(line, dimension):
    """`line` split into a word and `dimension` fields, or None.

    The word is what comes before the last `dimension` space-separated
    fields, so it may hold spaces; but one whose last piece is a number is
    taken for a line with too many values (None).
    """
    fields = line.rsplit(" ", dimension)
    word = fields[0]
    if len(fields) != dimension + 1 or not word:
        return None
    if " " in word and _is_number(word.rsplit(" ", 1)[1]):
        return None
    return fields


def _text_records(path, file, format, words, max_words, expected_dimension,
                  encoding_errors):
    """(dimension, generator of (word, vector)) of a text-format file."""
    count = None
    hint = "."
    if format == "word2vec_text":
        _, count, dimension = _read_header(path, file, expected_dimension)
        dimension_source = "the dimension of the header"
        first_record_line = None
    else:
        first_line = file.readline()
        header = _header(first_line)
        if not first_line.strip():
            raise _empty_file_error(path, "a word and its values separated by single spaces")
        if header is not None:
            hint = (". Its first line looks like a word2vec header (\"count "
                    "dimension\"): pass format=\"word2vec_text\" or \"auto\".")
        first_line_values = len(first_line.rstrip(b"\r\n ").split(b" ")) - 1
        if expected_dimension is None:
            dimension = first_line_values
            _check_dimension(path, "line 1", dimension, None, "the first line")
            dimension_source = "the dimension of the first line"
        else:
            dimension = expected_dimension
            dimension_source = "the dimension asked for"
            first_text = first_line.decode("utf-8", "replace").rstrip("\r\n ")
            if _split_text_record(first_text, dimension) is None:
                _check_dimension(path, "line 1", first_line_values, dimension,
                                 "the first line")
        first_record_line = first_line

    def lines():
        if first_record_line is not None:
            yield 1, first_record_line
        yield from enumerate(file, start=2)

    def records():
        read = 0
        for number, raw in lines():
            if max_words is not None and read >= max_words:
                return
            if not raw.strip():
                continue
            if number == 1:
                raw = raw.removeprefix(_UTF8_BYTE_ORDER_MARK)
            try:
                line = raw.decode("utf-8", errors=encoding_errors).rstrip("\r\n ")
            except UnicodeDecodeError as error:
                raise _file_error(
                    path, f"line {number}", f"the line is not valid UTF-8 ({error.reason})",
                    "UTF-8 text",
                    "Pass encoding_errors=\"replace\" or \"ignore\" to read such "
                    "words anyway.") from None
            if count is not None and read >= count:
                raise _file_error(
                    path, f"line {number}",
                    f"a word beyond the {count} words the header announces",
                    f"{count} words, as the header says",
                    "Correct the count in the header line.")
            fields = _split_text_record(line, dimension)
            if fields is None:
                values = len(line.split(" ")) - 1
                raise _file_error(
                    path, f"line {number}",
                    f"the line {_excerpt(line)} has {values} values",
                    f"a word and {dimension} values ({dimension_source})",
                    "Fix or remove that line, or check that the file was not cut "
                    "short or joined from files of different dimensions" + hint)
            read += 1
            word = fields[0]
            if words is None or word in words:
                yield word, _parse_values(path, number, word, fields[1:], dimension)
        if count is not None and read < count and (max_words is None or read < max_words):
            raise _file_error(
                path, "end of file", f"the file ends after {read} words",
                f"{count} words, as the header says",
                "The file may be truncated: download or write it again.")

    return dimension, records()


class _ByteStream:
    """Reads a binary file in chunks, keeping track of the absolute offset."""

    def __init__(self, file, offset):
        self._file = file
        self._buffer = b""
        self._position = 0
        self._buffer_offset = offset

    @property
    def offset(self):
        return self._buffer_offset + self._position

    def available(self, size):
        """Makes up to `size` bytes available; returns how many are."""
        while len(self._buffer) - self._position < size:
            chunk = self._file.read(max(_BINARY_CHUNK_BYTES, size))
            if not chunk:
                break
            self._buffer_offset += self._position
            self._buffer = self._buffer[self._position:] + chunk
            self._position = 0
        return len(self._buffer) - self._position

    def until_space(self):
        """The bytes before the next space (which is consumed), or None
        where the data ends first or no space comes within the longest
        word; then `rest` gives what is left."""
        searched = self._position
        while True:
            end = self._buffer.find(b" ", searched)
            if end >= 0:
                word = self._buffer[self._position:end]
                self._position = end + 1
                return word
            have = len(self._buffer) - self._position
            if have > _LONGEST_BINARY_WORD or self.available(have + 1) == have:
                return None
            searched = self._position + have

    def take(self, size):
        data = self._buffer[self._position:self._position + size]
        self._position += len(data)
        return data

    def rest(self, size):
        self.available(size)
        return self._buffer[self._position:self._position + size]


def _read_header(path, file, expected_dimension):
    """(the line, count, dimension) of a word2vec file's header line."""
    header_line = file.readline(_LONGEST_DETECTED_LINE)
    header = _header(header_line)
    if header is None:
        raise _file_error(
            path, "line 1", f"the first line {_excerpt(header_line)} is not a header",
            "the word2vec header \"count dimension\" (two whole numbers)",
            "Pass format=\"glove\" for a text file without a header, or "
            "format=\"auto\" to tell the format from the file.")
    count, dimension = header
    _check_dimension(path, "line 1", dimension, expected_dimension, "the header")
    return header_line, count, dimension


def _binary_records(path, file, words, max_words, expected_dimension, encoding_errors):
    """(dimension, generator of (word, vector)) of a word2vec binary file."""
    header_line, count, dimension = _read_header(path, file, expected_dimension)
    vector_bytes = dimension * _FLOAT32.itemsize
    stream = _ByteStream(file, len(header_line))
    if _looks_like_text_vector(stream.rest(_BINARY_CHUNK_BYTES).split(b"\n", 1)[0], dimension):
        raise _file_error(
            path, "line 2", "the line after the header is a word and its values as text",
            "a word, a space and its vector as binary float32 values",
            "The file is in word2vec text format: pass format=\"word2vec_text\" or "
            "\"auto\".")
    wanted = count if max_words is None else min(count, max_words)

    def records():
        for index in range(wanted):
            start = stream.offset
            raw_word = stream.until_space()
            if raw_word is None:
                rest = stream.rest(_LONGEST_BINARY_WORD + 1)
                if rest.strip():
                    raise _file_error(
                        path, _offset_place(path, start),
                        f"word {index + 1} has no space after it within "
                        f"{min(len(rest), _LONGEST_BINARY_WORD)} bytes",
                        "a word, a space and its vector",
                        "The file is truncated or not in word2vec binary format "
                        "(try format=\"auto\").")
                raise _file_error(
                    path, _offset_place(path, start),
                    f"the file ends after {index} words",
                    f"{count} words, as the header says",
                    "The file may be truncated: download or write it again.")
            raw_word = raw_word.lstrip(b"\n")
            try:
                word = raw_word.decode("utf-8", errors=encoding_errors)
            except UnicodeDecodeError as error:
                raise _file_error(
                    path, _offset_place(path, start),
                    f"word {index + 1} is not valid UTF-8 ({error.reason})",
                    "UTF-8 words",
                    "Pass encoding_errors=\"replace\" or \"ignore\" to read such "
                    "words anyway.") from None
            if not word:
                raise _file_error(
                    path, _offset_place(path, start), f"word {index + 1} is empty",
                    "a word before each vector",
                    "The file is corrupt or not in word2vec binary format (try "
                    "format=\"auto\").")
            vector_start = stream.offset
            have = stream.available(vector_bytes)
            if have < vector_bytes:
                raise _file_error(
                    path, _offset_place(path, vector_start),
                    f"the vector of word {index + 1} ({word!r}) has only {have} "
                    "bytes before the file ends",
                    f"{vector_bytes} bytes ({dimension} float32 values)",
                    "The file is truncated: download or write it again.")
            data = stream.take(vector_bytes)
            if words is None or word in words:
                yield word, np.frombuffer(data, dtype=_FLOAT32).astype(np.float32)
        if wanted == count:
            trailing = stream.rest(64)
            if trailing.strip():
                raise _file_error(
                    path, _offset_place(path, stream.offset),
                    f"data follows the {count} words the header announces",
                    "the file to end there",
                    "Correct the count in the header line, or check that the file "
                    "is in word2vec binary format.")

    return dimension, records()


def _check_max_words(max_words):
    if max_words is not None and (isinstance(max_words, bool) or not isinstance(max_words, int)
                                  or max_words < 1):
        raise ValueError(
            f"max_words is {max_words!r}; expected a positive whole number or None. "
            "Pass how many of the file's first words to read, or None for all.")


def _open_records(path, words, format, max_words, dimension, encoding_errors):
    """(file, dimension, generator of (word, vector)); the caller closes file."""
    _check_format(format)
    _check_max_words(max_words)
    if format == "auto":
        format = detect_word_vector_format(path)
    file = _open(path)
    try:
        with _gzip_errors_told(path):
            if format == "word2vec_binary":
                found_dimension, records = _binary_records(
                    path, file, words, max_words, dimension, encoding_errors)
            else:
                found_dimension, records = _text_records(
                    path, file, format, words, max_words, dimension, encoding_errors)
    except BaseException:
        file.close()
        raise
    return file, found_dimension, _compressed_data_checked(path, records)


def _compressed_data_checked(path, records):
    """`records`, with gzip's errors on broken data told as file errors."""
    with _gzip_errors_told(path):
        yield from records


@contextlib.contextmanager
def _gzip_errors_told(path):
    """Raises gzip's errors on broken data as file errors."""
    try:
        yield
    except (EOFError, gzip.BadGzipFile, zlib.error) as error:
        raise _file_error(
            path, "gzip data", f"the compressed data is truncated or corrupt ({error})",
            "a complete gzip file",
            "Download or compress the file again.") from None


def iterate_word_vectors(path, words=None, format="auto", max_words=None, dimension=None,
                         encoding_errors="strict"):
    """Streams the words and vectors of a word-vector file, in file order.

    Only the vectors of the words in `words` are parsed and yielded; every
    line is still checked for its count of values (text formats), and a
    binary file's every record for its length. A word listed twice in the
    file is yielded twice.

    Text lines are split at single spaces from the right, so a word with
    spaces inside (as a few GloVe files have) is read whole; trailing spaces
    and "\\r\\n" line ends are allowed, blank lines skipped.

    Args:
        path: the file (gzip-compressed or not).
        words: a container of the words wanted (anything that supports
            `in`: a set, a dict); None for all of them.
        format: `"auto"` (tell it from the file with
            `detect_word_vector_format`), `"word2vec_binary"`,
            `"word2vec_text"` or `"glove"`.
        max_words: read only the file's first `max_words` words (files are
            usually sorted by frequency); None for all.
        dimension: the dimension the vectors must have; None to take the
            file's.
        encoding_errors: what to do with words that are not valid UTF-8, as
            in `bytes.decode`: `"strict"` (an error), `"replace"` or
            `"ignore"`.

    Yields:
        `(word, vector)`: the word (str) and its float32 vector.

    Raises:
        WordVectorFileError: the file does not hold what its format
            requires (a line with another count of values, a dimension
            other than `dimension`, a truncated binary file, a header whose
            count is not the file's).
        ValueError: an unknown `format`, or a bad `max_words`.

    Example:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "glove.txt")
    >>> with open(path, "w") as file:
    ...     _ = file.write("the 0.5 -1.0\\ncat 0.25 2.0\\ndog 1.0 1.5\\n")
    >>> for word, vector in iterate_word_vectors(path, words={"cat", "dog"}):
    ...     print(word, vector.tolist())
    cat [0.25, 2.0]
    dog [1.0, 1.5]

    References:
        - [Mikolov et al., 2013](https://arxiv.org/abs/1301.3781) (word2vec)
        - [Pennington et al., 2014](https://aclanthology.org/D14-1162/) (GloVe)
    """
    file, _, records = _open_records(path, words, format, max_words, dimension,
                                     encoding_errors)
    with file:
        yield from records


def read_word_vectors(path, words=None, format="auto", max_words=None, dimension=None,
                      encoding_errors="strict"):
    """The vectors of chosen words of a word-vector file, as a dict.

    Reads the file as `iterate_word_vectors` does (streaming: only the
    vectors of `words` are kept); of a word listed twice in the file, the
    first vector is kept.

    Args:
        path: the file (gzip-compressed or not).
        words: the words wanted (any container); None for all (mind the
            memory with full-size files).
        format: `"auto"`, `"word2vec_binary"`, `"word2vec_text"` or
            `"glove"`.
        max_words: read only the file's first `max_words` words; None for all.
        dimension: the dimension the vectors must have; None to take the
            file's.
        encoding_errors: `"strict"`, `"replace"` or `"ignore"`, for words
            that are not valid UTF-8.

    Returns:
        A dict from word to float32 vector, in file order.

    Raises:
        WordVectorFileError: as `iterate_word_vectors`.
        ValueError: an unknown `format`, or a bad `max_words`.

    Example:

    >>> import os, struct, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "vectors.bin")
    >>> with open(path, "wb") as file:
    ...     _ = file.write(b"2 2\\n" + b"cat " + struct.pack("<2f", 0.5, 1.0) + b"\\n"
    ...                    + b"dog " + struct.pack("<2f", -2.0, 0.25) + b"\\n")
    >>> {word: vector.tolist() for word, vector in read_word_vectors(path).items()}
    {'cat': [0.5, 1.0], 'dog': [-2.0, 0.25]}

    References:
        - [Mikolov et al., 2013](https://arxiv.org/abs/1301.3781) (word2vec)
        - [Pennington et al., 2014](https://aclanthology.org/D14-1162/) (GloVe)
    """
    vectors = {}
    for word, vector in iterate_word_vectors(path, words, format, max_words, dimension,
                                             encoding_errors):
        vectors.setdefault(word, vector)
    return vectors


class _WantedWords:
    """The file words an alignment keeps: vocabulary tokens and, with the
    fallback, any word whose lower-case form is a token's."""

    def __init__(self, tokens, lowercase_fallback):
        self.tokens = set(tokens)
        self.lowercase = {token.lower() for token in tokens} if lowercase_fallback else set()

    def __contains__(self, word):
        return word in self.tokens or word.lower() in self.lowercase


def _check_padding_ids(padding_ids, vocabulary_size):
    padding = set()
    for padding_id in padding_ids:
        if (isinstance(padding_id, bool) or not isinstance(padding_id, (int, np.integer))
                or not 0 <= padding_id < vocabulary_size):
            raise ValueError(
                f"Padding id {padding_id!r} is not an id of the vocabulary; expected "
                f"whole numbers from 0 to {vocabulary_size - 1}. Pass the ids of the "
                "padding tokens (usually 0).")
        padding.add(int(padding_id))
    return padding


def align_word_vectors(path, vocabulary, lowercase_fallback=True, padding_ids=(), seed=0,
                       format="auto", max_words=None, dimension=None,
                       encoding_errors="strict"):
    """The embedding matrix of a vocabulary, from a pretrained word-vector file.

    Each vocabulary token's row is the file's vector of that word; with
    `lowercase_fallback`, a token the file lacks takes the vector of a word
    that differs from it only in case ("Paris" the vector of "paris", or
    "paris" that of "Paris"): the all-lower-case word where the file has it,
    otherwise the first such word in the file (files are usually sorted by
    frequency). Tokens found neither way are out of vocabulary: their rows
    are drawn from a normal distribution with mean zero and the standard
    deviation of the found vectors' values, with a generator seeded by
    `seed` (the same seed gives the same rows). Padding ids get zero rows
    and are left out of the counts.

    The file is streamed (`iterate_word_vectors`): only the vectors of the
    vocabulary's words (and of their other-case forms) are kept.

    Args:
        path: the word-vector file (word2vec binary or text, GloVe; gzip or
            not).
        vocabulary: the student's tokens in id order (a list of str).
        lowercase_fallback: look a token the file lacks up by case-folded
            match.
        padding_ids: the ids whose rows are zeros (e.g. `(0,)` for `[PAD]`).
        seed: seeds the out-of-vocabulary rows.
        format: `"auto"`, `"word2vec_binary"`, `"word2vec_text"` or
            `"glove"`.
        max_words: read only the file's first `max_words` words (the most
            frequent, in the usual files); None for all.
        dimension: the dimension the vectors must have (the student's
            embedding size); None to take the file's.
        encoding_errors: `"strict"`, `"replace"` or `"ignore"`, for words
            that are not valid UTF-8.

    Returns:
        A `WordVectorAlignment`: the float32 matrix
        `(len(vocabulary), dimension)` and the counts of tokens found
        exactly, found by case-folded match, missing, and padding.

    Raises:
        WordVectorFileError: the file cannot be read (see
            `iterate_word_vectors`).
        ValueError: a bad argument, or no vocabulary token is in the file.

    Example:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "glove.txt")
    >>> with open(path, "w") as file:
    ...     _ = file.write("the 1.0 2.0\\nparis 3.0 4.0\\n")
    >>> alignment = align_word_vectors(
    ...     path, ["[PAD]", "the", "Paris", "zyzzyva"], padding_ids=(0,))
    >>> alignment.embeddings[:3].tolist()
    [[0.0, 0.0], [1.0, 2.0], [3.0, 4.0]]
    >>> (alignment.found_exact, alignment.found_lowercase, alignment.missing)
    (1, 1, 1)
    >>> alignment.missing_words
    ('zyzzyva',)

    References:
        - [Tang et al., 2019](https://arxiv.org/abs/1903.12136)
        - [Pennington et al., 2014](https://aclanthology.org/D14-1162/) (GloVe)
    """
    if isinstance(vocabulary, (str, bytes)):
        raise ValueError(
            "vocabulary is a single string; expected the list of tokens in id order. "
            "Load a vocabulary file with tfnlp.text.load_vocabulary first.")
    vocabulary = list(vocabulary)
    padding = _check_padding_ids(padding_ids, len(vocabulary))
    aligned_ids = [index for index in range(len(vocabulary)) if index not in padding]
    for index in aligned_ids:
        if not isinstance(vocabulary[index], str):
            raise ValueError(
                f"Vocabulary token {index} is {vocabulary[index]!r}; expected a str. "
                "Pass the tokens as strings (decode bytes first).")
    tokens = {vocabulary[index] for index in aligned_ids}
    wanted = _WantedWords(tokens, lowercase_fallback)

    exact = {}
    # The vector each lower-case form falls back to, and the forms whose
    # vector is that of the lower-case word itself (preferred to the first
    # other-case word).
    by_lowercase = {}
    own_lowercase = set()
    file, found_dimension, records = _open_records(
        path, wanted, format, max_words, dimension, encoding_errors)
    with file:
        for word, vector in records:
            if word in tokens:
                exact.setdefault(word, vector)
            key = word.lower()
            if key in wanted.lowercase and (
                    key not in by_lowercase or (word == key and key not in own_lowercase)):
                by_lowercase[key] = vector
                if word == key:
                    own_lowercase.add(key)
    embeddings = np.zeros((len(vocabulary), found_dimension), dtype=np.float32)
    found_exact = found_lowercase = 0
    missing_ids = []
    for index in aligned_ids:
        token = vocabulary[index]
        if token in exact:
            embeddings[index] = exact[token]
            found_exact += 1
        elif lowercase_fallback and token.lower() in by_lowercase:
            embeddings[index] = by_lowercase[token.lower()]
            found_lowercase += 1
        else:
            missing_ids.append(index)
    missing_set = set(missing_ids)
    found_ids = [index for index in aligned_ids if index not in missing_set]
    if aligned_ids and not found_ids:
        raise ValueError(
            f"None of the {len(aligned_ids)} vocabulary tokens is in {path}"
            + (f" (its first {max_words} words)" if max_words is not None else "")
            + "; expected at least some of them to have vectors. Check that the "
            "file and the vocabulary are of the same language and casing (try "
            "lowercase_fallback=True), and that the vocabulary holds whole words "
            "rather than word pieces.")
    if missing_ids:
        scale = float(np.std(embeddings[found_ids]))
        generator = np.random.default_rng(seed)
        embeddings[missing_ids] = generator.normal(
            0.0, scale, size=(len(missing_ids), found_dimension)).astype(np.float32)
    return WordVectorAlignment(
        embeddings=embeddings,
        found_exact=found_exact,
        found_lowercase=found_lowercase,
        missing=len(missing_ids),
        missing_words=tuple(vocabulary[index] for index in missing_ids),
        padding=len(padding),
    )
