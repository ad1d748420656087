"""Tokenized documents through temporary files (pipelines.token_store)."""

import pytest

from pipelines import token_store


@pytest.mark.parametrize("vocab_size", [30522, 70000])
def test_documents_survive_their_compact_encoding(vocab_size):
    document = [[101, 7592, 2088], [vocab_size - 1], [0, 1, 2, 3]]
    typecode = token_store.id_typecode(vocab_size)
    encoded = token_store.encode_document(document, typecode)
    decoded = token_store.decode_document(encoded)
    assert [list(sentence) for sentence in decoded] == document
    id_bytes = 2 if vocab_size <= 65536 else 4
    assert len(encoded) == token_store.HEADER.size + 4 * 3 + 8 * id_bytes


def test_references_read_back_the_documents_of_several_files(tmp_path):
    documents = [[[1, 2, 3], [4]], [[5] * 300], [[6, 7]], [[8], [9], [10]]]
    first = token_store.DocumentWriter(str(tmp_path), "H")
    second = token_store.DocumentWriter(str(tmp_path), "H")
    references = [
        first.write(documents[0]), second.write(documents[1]),
        first.write(documents[2]), second.write(documents[3]),
    ]
    first.close()
    second.close()
    assert first.path != second.path
    assert [reference.tokens for reference in references] == [4, 300, 2, 3]
    # Any order of references, as a shuffle delivers them.
    order = [3, 0, 2, 1]
    read = token_store.read_documents([references[index] for index in order])
    assert [[list(sentence) for sentence in document] for document in read] == [
        documents[index] for index in order
    ]


def test_a_truncated_file_is_a_clear_error(tmp_path):
    writer = token_store.DocumentWriter(str(tmp_path), "H")
    reference = writer.write([[1, 2, 3]])
    writer.close()
    with open(writer.path, "r+b") as file:
        file.truncate(reference.size - 1)
    with pytest.raises(IOError, match="ends before the document"):
        token_store.read_documents([reference])
