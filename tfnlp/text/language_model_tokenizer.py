"""The tokenizer of a language-model data directory, in-graph, from its descriptor.

`load_language_model_tokenizer(data_dir)` is the one way the trainer, the
export and the server get the tokenizer that `pipelines.lm_data` made its
ids with: it reads `DIR/tokenizer.json` (`tfnlp.text.tokenizer_descriptor`),
checks the file it names against its SHA-256, and returns a
`LanguageModelTokenizer`, which gives every kind the same face.
"""

import hashlib
import posixpath

import keras
import tensorflow as tf

from tfnlp.data.file_names import TOKENIZER_DESCRIPTOR
from tfnlp.text.bert_tokenizer import BertTokenizer, tokenize_any_rank
from tfnlp.text.character_tokenizer import CharacterTokenizer
from tfnlp.text.id_rows import append_to_rows, detokenize_any_rank, ids_before_end
from tfnlp.text.sentencepiece_tokenizer import SentencePieceTokenizer
from tfnlp.text.tokenizer_descriptor import TokenizerDescriptor
from tfnlp.text.vocabulary import SPECIAL_TOKENS


def read_descriptor(data_dir):
    """The `TokenizerDescriptor` of `data_dir` (any `tf.io.gfile` path).

    Raises:
        FileNotFoundError: `DIR/tokenizer.json` or the file it names is
            missing.
        ValueError: the descriptor is invalid, or the file it names does not
            have the SHA-256 it records.
    """
    path = posixpath.join(str(data_dir), TOKENIZER_DESCRIPTOR)
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(
            f"{path} is missing: {data_dir} is not the output directory of "
            "python -m pipelines.lm_data (which writes the tokenizer's descriptor "
            "beside the shards). Pass that directory, or run the job first."
        )
    with tf.io.gfile.GFile(path, "rb") as file:
        descriptor = TokenizerDescriptor.from_json_bytes(file.read(), path)
    file_path = posixpath.join(str(data_dir), descriptor.file)
    if not tf.io.gfile.exists(file_path):
        raise FileNotFoundError(
            f"{file_path}, the {descriptor.kind} tokenizer file that {path} names, is "
            "missing; copy the whole data directory, or run python -m pipelines.lm_data "
            "again."
        )
    with tf.io.gfile.GFile(file_path, "rb") as file:
        digest = hashlib.sha256(file.read()).hexdigest()
    if digest != descriptor.sha256:
        raise ValueError(
            f"{file_path} has the SHA-256 {digest}, but {path} records {descriptor.sha256}: "
            "the file is not the one the data was tokenized with. Restore it, or run "
            "python -m pipelines.lm_data again."
        )
    return descriptor


def _inner_tokenizer(descriptor, file_path):
    if descriptor.kind == "character":
        return CharacterTokenizer(file_path)
    if descriptor.kind == "sentencepiece":
        return SentencePieceTokenizer(model_file=file_path)
    return BertTokenizer(file_path, lower_case=descriptor.lower_case)


def _vocabulary_size(tokenizer):
    return getattr(tokenizer, "vocabulary_size", None) or tokenizer.vocab_size


@keras.saving.register_keras_serializable(package="tfnlp")
class LanguageModelTokenizer(keras.layers.Layer):
    """The tokenizer that a language-model data directory's ids came from.

    One face for every kind the job writes (`CharacterTokenizer`,
    `SentencePieceTokenizer`, `BertTokenizer`, held as `tokenizer`): int32
    ids, the special ids by the same names, and `detokenize` that ends
    each sequence at the end-of-document id. The ids equal the job's (each
    in-graph tokenizer is tested against the plain-Python one the job's
    workers run).

    Args:
        data_dir: the job's output directory (any `tf.io.gfile` path),
            holding `tokenizer.json` and the file it names.
        add_end_of_document: whether `call` appends the end-of-document id
            to each sequence, as every document in the records ends.
        **kwargs: standard `keras.layers.Layer` arguments.

    Attributes:
        descriptor: the `TokenizerDescriptor`.
        kind: "character", "sentencepiece" or "wordpiece".
        tokenizer: the in-graph tokenizer of that kind (a Keras layer; a
            SavedModel holding this layer tracks its vocabulary asset or
            model resource through it).
        vocabulary_size, end_of_document_id, unknown_id, pad_id: from the
            descriptor (`pad_id` may be None).
        non_text_ids: the special ids that stand for no text (see the
            property).

    Call arguments:
        inputs: a string tensor of any shape; `tokenize(inputs,
            add_end_of_document)`.

    Example:

        tokenizer = load_language_model_tokenizer("data/shakespeare")
        ids = tokenizer.tokenize(tf.constant(["ROMEO:\\n"]))   # int32 ragged
        text = tokenizer.detokenize(generated_ids)               # stops at <eod>
    """

    def __init__(self, data_dir, add_end_of_document=False, **kwargs):
        kwargs.setdefault("trainable", False)
        super().__init__(**kwargs)
        self.data_dir = str(data_dir)
        self.add_end_of_document = bool(add_end_of_document)
        self.descriptor = read_descriptor(self.data_dir)
        self.tokenizer = _inner_tokenizer(
            self.descriptor, posixpath.join(self.data_dir, self.descriptor.file))
        actual = _vocabulary_size(self.tokenizer)
        if actual != self.descriptor.vocabulary_size:
            raise ValueError(
                f"The {self.kind} tokenizer of {self.data_dir} has {actual} ids, but its "
                f"{TOKENIZER_DESCRIPTOR} records {self.descriptor.vocabulary_size}."
            )
        self.built = True

    @property
    def kind(self):
        return self.descriptor.kind

    @property
    def vocabulary_size(self):
        return self.descriptor.vocabulary_size

    @property
    def end_of_document_id(self):
        return self.descriptor.end_of_document_id

    @property
    def unknown_id(self):
        return self.descriptor.unknown_id

    @property
    def pad_id(self):
        return self.descriptor.pad_id

    @property
    def non_text_ids(self):
        """The special ids that stand for no text, sorted: a generator
        should never produce them (`suppressed_token_ids` of
        `tfnlp.decoding`).

        The padding and unknown ids of every kind (`<pad>` and `<unk>`,
        which `detokenize` leaves out or writes as U+FFFD), SentencePiece's
        begin-of-sequence id `<s>`, and WordPiece's `[PAD]`, `[UNK]`,
        `[CLS]` and `[MASK]`. The end-of-document id is not among them: it
        ends a generated sequence.

        Example:

            tokenizer = load_language_model_tokenizer("data/shakespeare")
            tokenizer.non_text_ids   # (0, 1): <pad> and <unk>
        """
        ids = {self.pad_id, self.unknown_id}
        if self.kind == "sentencepiece":
            ids.add(self.tokenizer.bos_id)
        elif self.kind == "wordpiece":
            # A token listed twice has its later id, as in the tokenizer.
            positions = {token: index for index, token in enumerate(self.tokenizer.vocabulary)}
            ids.update(positions[token] for token in SPECIAL_TOKENS if token in positions)
        return tuple(sorted(index for index in ids
                            if index is not None and index >= 0
                            and index != self.end_of_document_id))

    def tokenize(self, strings, add_end_of_document=False):
        """The ids of `strings`, as the job's records hold them.

        Args:
            strings: a string tensor of any shape (UTF-8).
            add_end_of_document: append the end-of-document id to each
                sequence.

        Returns:
            int32 ids with one more dimension than `strings`: a RaggedTensor
            (a 1-D Tensor for a scalar string).
        """
        def tokenize_rows(rows):
            ids = tf.cast(self.tokenizer.tokenize(rows), tf.int32)
            if add_end_of_document:
                ids = append_to_rows(ids, self.end_of_document_id)
            return ids

        return tokenize_any_rank(tf.convert_to_tensor(strings, tf.string), tokenize_rows)

    def detokenize(self, ids):
        """The text of `ids`: each sequence ends at its first end-of-document
        id, and padding is left out.

        Args:
            ids: integer ids in the last dimension, dense or ragged, of rank
                1 or more.

        Returns:
            A string tensor of the shape of `ids` without its last
            dimension.
        """
        def detokenize_rows(rows):
            return self.tokenizer.detokenize(
                ids_before_end(rows, self.end_of_document_id, self.pad_id))

        return detokenize_any_rank(ids, detokenize_rows)

    def call(self, inputs):
        return self.tokenize(inputs, add_end_of_document=self.add_end_of_document)

    def get_config(self):
        config = super().get_config()
        config.update({"data_dir": self.data_dir,
                       "add_end_of_document": self.add_end_of_document})
        return config


def load_language_model_tokenizer(data_dir, add_end_of_document=False):
    """The in-graph tokenizer of a `pipelines.lm_data` output directory.

    Args:
        data_dir: the job's output directory (any `tf.io.gfile` path).
        add_end_of_document: whether the layer's `call` appends the
            end-of-document id.

    Returns:
        A `LanguageModelTokenizer`.

    Raises:
        FileNotFoundError: `DIR/tokenizer.json` or its file is missing.
        ValueError: the descriptor is invalid or does not match its file.
    """
    return LanguageModelTokenizer(data_dir, add_end_of_document=add_end_of_document)
