"""tfnlp.text.word_vectors: word2vec/GloVe files read back, and aligned to a
vocabulary. The files are written here, by hand, in each format."""

import gzip

import numpy as np
import pytest

from tfnlp.text import word_vectors
from tfnlp.text.word_vectors import (
    WordVectorFileError,
    align_word_vectors,
    detect_word_vector_format,
    iterate_word_vectors,
    read_word_vectors,
)

# Binary files cannot hold a word with a space (see
# test_text_words_may_hold_spaces).
WORDS = ["the", "Paris", "cat", "naïve", "New_York", "dog"]


def random_vectors(count, dimension, seed=0):
    # Values whose float32 bytes are all distinct, so a reader that slips by
    # a byte gives other numbers.
    return np.random.default_rng(seed).normal(size=(count, dimension)).astype(np.float32)


def write_binary(path, words, vectors, line_break=True, header=None):
    """The word2vec tool's format (a line break after each vector), or
    gensim's (`line_break=False`)."""
    header = header or f"{len(words)} {vectors.shape[1]}\n"
    with open(path, "wb") as file:
        file.write(header.encode())
        for word, vector in zip(words, vectors):
            file.write(word.encode("utf-8") + b" " + vector.astype("<f4").tobytes())
            if line_break:
                file.write(b"\n")
    return path


def text_lines(words, vectors):
    # repr of a float32 read back as float32 is exact.
    return "".join(
        word + " " + " ".join(repr(float(value)) for value in vector) + "\n"
        for word, vector in zip(words, vectors))


def write_text(path, words, vectors):
    path.write_text(f"{len(words)} {vectors.shape[1]}\n" + text_lines(words, vectors),
                    encoding="utf-8")
    return path


def write_glove(path, words, vectors):
    path.write_text(text_lines(words, vectors), encoding="utf-8")
    return path


def gzipped(path):
    compressed = path.with_name(path.name + ".gz")
    compressed.write_bytes(gzip.compress(path.read_bytes()))
    return compressed


WRITERS = {
    "word2vec_binary": lambda path, words, vectors: write_binary(path, words, vectors),
    "word2vec_text": write_text,
    "glove": write_glove,
}


def all_files(tmp_path, words, vectors):
    """(expected format, path) for each format, plain, gzipped and (binary)
    gensim-style."""
    files = []
    for format, write in WRITERS.items():
        path = write(tmp_path / f"vectors.{format}", words, vectors)
        files += [(format, path), (format, gzipped(path))]
    files.append(("word2vec_binary", write_binary(
        tmp_path / "gensim.bin", words, vectors, line_break=False)))
    return files


def test_every_format_reads_back_exactly_and_is_detected(tmp_path):
    vectors = random_vectors(len(WORDS), 7)
    for format, path in all_files(tmp_path, WORDS, vectors):
        assert detect_word_vector_format(path) == format, path
        for given_format in ("auto", format):
            read = list(iterate_word_vectors(path, format=given_format))
            assert [word for word, _ in read] == WORDS, path
            np.testing.assert_array_equal(np.stack([vector for _, vector in read]), vectors)
            assert all(vector.dtype == np.float32 for _, vector in read)


def test_binary_words_end_at_their_space_and_vectors_take_exactly_their_bytes(tmp_path):
    # One-letter and long words, a vector whose first byte is a space
    # (0x20) and one whose bytes hold a line break: a reader one byte off,
    # or one that looks for line breaks, gets other words and values.
    words = ["a", "bb", "supercalifragilistic", "é"]
    vectors = random_vectors(len(words), 3, seed=1)
    vectors[1, 0] = np.frombuffer(b"\x20\x0a\x20\x41", "<f4")[0]
    vectors[2, 2] = np.frombuffer(b"\x0a\x0a\x0a\x3f", "<f4")[0]
    for line_break in (True, False):
        path = write_binary(tmp_path / f"break{line_break}.bin", words, vectors, line_break)
        read = read_word_vectors(path, format="word2vec_binary")
        assert list(read) == words
        np.testing.assert_array_equal(np.stack(list(read.values())), vectors)


def test_the_header_line_is_never_a_word(tmp_path):
    vectors = random_vectors(3, 4)
    path = write_text(tmp_path / "vectors.txt", ["x", "y", "z"], vectors)
    assert path.read_text().startswith("3 4\n")
    assert list(read_word_vectors(path)) == ["x", "y", "z"]
    alignment = align_word_vectors(path, ["3", "x"])
    assert alignment.missing_words == ("3",)
    # Read as GloVe, the header line stands out at once.
    with pytest.raises(WordVectorFileError, match=r"line 2.*format=\"word2vec_text\""):
        read_word_vectors(path, format="glove")


def test_only_the_words_asked_for_are_kept(tmp_path):
    vectors = random_vectors(len(WORDS), 5)
    for _, path in all_files(tmp_path, WORDS, vectors):
        read = read_word_vectors(path, words={"cat", "New_York", "absent"})
        assert list(read) == ["cat", "New_York"]
        np.testing.assert_array_equal(read["New_York"], vectors[4])


def test_max_words_reads_the_first_words_only(tmp_path):
    vectors = random_vectors(len(WORDS), 2)
    for _, path in all_files(tmp_path, WORDS, vectors):
        assert list(read_word_vectors(path, max_words=2)) == WORDS[:2]
    # A header announcing more words than the file holds is fine when
    # max_words stops first.
    path = write_binary(tmp_path / "short.bin", WORDS[:3], vectors[:3], header="10 2\n")
    assert list(read_word_vectors(path, max_words=3)) == WORDS[:3]


def test_a_word_listed_twice_keeps_its_first_vector(tmp_path):
    vectors = random_vectors(3, 2)
    path = write_glove(tmp_path / "glove.txt", ["cat", "dog", "cat"], vectors)
    assert [word for word, _ in iterate_word_vectors(path)] == ["cat", "dog", "cat"]
    np.testing.assert_array_equal(read_word_vectors(path)["cat"], vectors[0])


def test_text_words_may_hold_spaces(tmp_path):
    words = ["the", ". . .", "new york"]
    vectors = random_vectors(3, 4)
    for write in (write_text, write_glove):
        path = write(tmp_path / "vectors.txt", words, vectors)
        read = read_word_vectors(path)
        assert list(read) == words
        np.testing.assert_array_equal(read["new york"], vectors[2])


def test_text_lines_with_trailing_spaces_crlf_and_blank_lines(tmp_path):
    path = tmp_path / "vectors.txt"
    path.write_bytes(b"\xef\xbb\xbf2 2\r\ncat 1 2 \r\n\r\ndog 3.5 -4e-1\r\n")
    read = read_word_vectors(path)
    assert {word: vector.tolist() for word, vector in read.items()} == {
        "cat": [1.0, 2.0], "dog": [3.5, np.float32(-0.4).item()]}


def test_alignment_counts_rows_and_padding(tmp_path):
    file_words = ["the", "paris", "PARIS", "Cat", "cat", "London"]
    vectors = random_vectors(len(file_words), 4)
    path = write_glove(tmp_path / "glove.txt", file_words, vectors)
    vocabulary = ["[PAD]", "the", "Paris", "CAT", "london", "zyzzyva", "[UNK]", "the"]
    alignment = align_word_vectors(path, vocabulary, padding_ids=(0,))
    assert (alignment.found_exact, alignment.found_lowercase, alignment.missing,
            alignment.padding) == (2, 3, 2, 1)
    assert alignment.missing_words == ("zyzzyva", "[UNK]")
    rows = alignment.embeddings
    assert rows.shape == (len(vocabulary), 4) and rows.dtype == np.float32
    np.testing.assert_array_equal(rows[0], 0)
    np.testing.assert_array_equal(rows[1], vectors[0])
    np.testing.assert_array_equal(rows[7], vectors[0])
    # The lower-case word itself is preferred to an earlier other-case one.
    np.testing.assert_array_equal(rows[2], vectors[1])
    np.testing.assert_array_equal(rows[3], vectors[4])
    np.testing.assert_array_equal(rows[4], vectors[5])

    without = align_word_vectors(path, vocabulary, lowercase_fallback=False, padding_ids=(0,))
    assert (without.found_exact, without.found_lowercase, without.missing) == (2, 0, 5)
    assert without.missing_words == ("Paris", "CAT", "london", "zyzzyva", "[UNK]")
    assert (alignment.found_exact + alignment.found_lowercase + alignment.missing
            + alignment.padding) == len(vocabulary)


def test_out_of_vocabulary_rows_are_seeded_and_take_the_found_vectors_scale(tmp_path):
    found = random_vectors(50, 64) * 3.0
    path = write_glove(tmp_path / "glove.txt", [f"w{i}" for i in range(50)], found)
    vocabulary = [f"w{i}" for i in range(50)] + [f"oov{i}" for i in range(200)]
    first = align_word_vectors(path, vocabulary, seed=3)
    again = align_word_vectors(path, vocabulary, seed=3)
    other = align_word_vectors(path, vocabulary, seed=4)
    np.testing.assert_array_equal(first.embeddings, again.embeddings)
    assert not np.array_equal(first.embeddings[50:], other.embeddings[50:])
    np.testing.assert_array_equal(first.embeddings[:50], found)
    drawn = first.embeddings[50:]
    assert abs(drawn.std() / found.std() - 1.0) < 0.05
    assert abs(drawn.mean()) < 0.1
    assert first.missing == 200 and first.found_exact == 50


def test_alignment_of_a_binary_gzip_file_matches_the_text_one(tmp_path):
    vectors = random_vectors(len(WORDS), 6)
    vocabulary = ["[PAD]", "cat", "paris", "new_york", "unknown"]
    results = [align_word_vectors(path, vocabulary, padding_ids=[0])
               for _, path in all_files(tmp_path, WORDS, vectors)]
    for result in results[1:]:
        np.testing.assert_array_equal(result.embeddings, results[0].embeddings)
        assert result.missing_words == ("unknown",)


def error_message(path, **options):
    with pytest.raises(WordVectorFileError) as error:
        read_word_vectors(path, **options)
    message = str(error.value)
    assert str(path) in message and "expected" in message
    return message


def test_a_line_with_too_few_or_too_many_values(tmp_path):
    path = tmp_path / "glove.txt"
    path.write_text("cat 1 2 3\ndog 1 2\n")
    message = error_message(path)
    assert "line 2" in message and "2 values" in message and "3 values" in message
    path.write_text("cat 1 2 3\ndog 1 2 3\nfish 1 2 3 4\n")
    message = error_message(path)
    assert "line 3" in message and "4 values" in message
    path.write_text("3 2\ncat 1 2\ndog 1 x\nfish 1 2\n")
    assert "line 3" in error_message(path, words={"dog"})


def test_a_dimension_other_than_the_one_asked_for(tmp_path):
    vectors = random_vectors(2, 3)
    for format, path in all_files(tmp_path, ["a", "b"], vectors):
        message = error_message(path, dimension=4)
        assert "dimension 3" in message and "dimension 4" in message, format
        assert len(read_word_vectors(path, dimension=3)) == 2


def test_a_truncated_binary_file_names_the_offset(tmp_path):
    vectors = random_vectors(3, 4)
    path = write_binary(tmp_path / "vectors.bin", ["cat", "dog", "fish"], vectors)
    data = path.read_bytes()
    path.write_bytes(data[:-10])
    message = error_message(path)
    # The header (4 bytes), two records of 4 + 16 + 1 bytes, then "fish ".
    assert "byte offset 51" in message and "16 bytes" in message and "'fish'" in message
    path.write_bytes(data[:-22])
    message = error_message(path)
    assert "ends after 2 words" in message and "3 words" in message
    # The header announces fewer words than the file holds.
    write_binary(path, ["cat", "dog", "fish"], vectors, header="2 4\n")
    assert "data follows the 2 words" in error_message(path)
    gzipped_path = gzipped(write_binary(path, ["cat", "dog", "fish"], vectors))
    gzipped_path.write_bytes(gzipped_path.read_bytes()[:-12])
    assert "truncated" in error_message(gzipped_path)


def test_header_counts_that_do_not_match_a_text_file(tmp_path):
    path = tmp_path / "vectors.txt"
    path.write_text("3 2\ncat 1 2\ndog 3 4\n")
    assert "ends after 2 words" in error_message(path)
    path.write_text("1 2\ncat 1 2\ndog 3 4\n")
    assert "line 3" in error_message(path)


def test_a_format_that_does_not_match_the_file(tmp_path):
    vectors = random_vectors(2, 3)
    text = write_text(tmp_path / "vectors.txt", ["cat", "dog"], vectors)
    assert "word2vec text" in error_message(text, format="word2vec_binary")
    glove = write_glove(tmp_path / "glove.txt", ["cat", "dog"], vectors)
    assert "not a header" in error_message(glove, format="word2vec_text")
    binary = write_binary(tmp_path / "vectors.bin", ["cat", "dog"], vectors)
    with pytest.raises(WordVectorFileError, match="line 2"):
        read_word_vectors(binary, format="word2vec_text", encoding_errors="replace")
    with pytest.raises(ValueError, match="Unknown word-vector format 'fasttext'.*'glove'"):
        read_word_vectors(glove, format="fasttext")
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    assert "empty" in error_message(empty)


def test_invalid_utf8_words(tmp_path):
    path = tmp_path / "glove.txt"
    path.write_bytes(b"cat 1 2\nd\xffg 3 4\n")
    assert "line 2" in error_message(path) and "encoding_errors" in error_message(path)
    assert list(read_word_vectors(path, encoding_errors="replace")) == ["cat", "d\ufffdg"]


def test_bad_alignment_arguments(tmp_path):
    path = write_glove(tmp_path / "glove.txt", ["cat"], random_vectors(1, 2))
    with pytest.raises(ValueError, match="None of the 2 vocabulary tokens"):
        align_word_vectors(path, ["dog", "fish"])
    with pytest.raises(ValueError, match="Padding id 5"):
        align_word_vectors(path, ["cat"], padding_ids=(5,))
    with pytest.raises(ValueError, match="max_words"):
        align_word_vectors(path, ["cat"], max_words=0)
    with pytest.raises(ValueError, match="single string"):
        align_word_vectors(path, "cat")


def test_the_binary_reader_streams_in_chunks(tmp_path, monkeypatch):
    # Chunks smaller than a record: words and vectors cross chunk borders.
    monkeypatch.setattr(word_vectors, "_BINARY_CHUNK_BYTES", 3)
    words = [f"word{i}" for i in range(40)]
    vectors = random_vectors(len(words), 5)
    path = write_binary(tmp_path / "vectors.bin", words, vectors, line_break=False)
    read = read_word_vectors(path, format="word2vec_binary")
    assert list(read) == words
    np.testing.assert_array_equal(np.stack(list(read.values())), vectors)


def test_exported_from_tfnlp_text():
    import tfnlp.text

    assert tfnlp.text.align_word_vectors is align_word_vectors
    assert tfnlp.text.read_word_vectors is read_word_vectors
