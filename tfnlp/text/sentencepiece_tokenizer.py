"""The SentencePiece tokenizer of the translation data, in the TensorFlow graph."""

import base64
import hashlib

import keras
import sentencepiece
import tensorflow as tf
import tensorflow_text as tf_text
from tensorflow_text.python.ops.sentencepiece_tokenizer import gen_sentencepiece_tokenizer

from tfnlp.data import translation_schema
from tfnlp.text.bert_tokenizer import tokenize_any_rank


class _SharedModelResource(tf.saved_model.experimental.TrackableResource):
    """The SentencePiece model resource, under a name of its own.

    tensorflow-text creates the model as a resource private to the kernel
    that made it, so in eager mode it vanishes when TensorFlow clears its
    kernel cache, as `tf.random.set_seed` and `keras.utils.set_random_seed`
    do: a tokenizer built before seeding then fails with "Resource ...
    SentencepieceResource does not exist". Named after the model's bytes
    (`shared_name`), the resource lives in the resource manager instead; a
    second tokenizer of the same model shares it, and a SavedModel stays
    byte-for-byte the same.
    """

    def __init__(self, proto):
        super().__init__()
        self._proto = proto
        self._shared_name = "tfnlp_sentencepiece_" + hashlib.sha256(proto).hexdigest()[:32]
        _ = self.resource_handle  # Creates the resource now.

    def _create_resource(self):
        return gen_sentencepiece_tokenizer.sentencepiece_op(
            model=self._proto, shared_name=self._shared_name)


@keras.saving.register_keras_serializable(package="tfnlp")
class SentencePieceTokenizer(keras.layers.Layer):
    """A SentencePiece model's tokenizer and detokenizer, in-graph.

    Gives the ids of the Python `sentencepiece` package with the same model
    (`pipelines.translation_data` writes its records with those), through
    tensorflow-text's `SentencepieceTokenizer`: the model's own
    normalization (the job's models use `nmt_nfkc`: NFKC, control
    characters dropped, runs of spaces collapsed and trimmed), then its
    unigram or BPE segmentation, deterministically (no sampling). With a
    byte-fallback model (the job's) any text survives the round trip:
    `detokenize(tokenize(x))` is the normalized `x`.

    The serialized model (a `.model` file's bytes, a few hundred KB) is held
    by the layer and is a constant of the graph, so a SavedModel embeds it
    and needs no file when served, and `get_config` carries it (base64) so
    that a `.keras` file holds it too.

    The special ids must be those of `tfnlp.data.translation_schema` (PAD
    0, UNK 1, BOS 2, EOS 3), which the job's models have; another model is
    rejected when the layer is built.

    Args:
        proto: the serialized model (bytes), or
        model_file: the path of a `.model` file (any `tf.io.gfile` path);
            give exactly one of the two.
        add_eos: whether `call` appends EOS (the records' inputs end with
            it).
        **kwargs: standard `keras.layers.Layer` arguments.

    Attributes:
        PAD_ID, UNK_ID, BOS_ID, EOS_ID: the special ids (class constants).
        pad_id, unk_id, bos_id, eos_id: the model's, checked against them.
        proto: the serialized model.

    Call arguments:
        inputs: a string tensor of any shape; `tokenize(inputs, add_eos)`.

    Example:

    >>> import io, sentencepiece, tensorflow as tf
    >>> model = io.BytesIO()
    >>> sentencepiece.SentencePieceTrainer.train(
    ...     sentence_iterator=iter(["the cat sat on the mat"] * 50), model_writer=model,
    ...     vocab_size=280, hard_vocab_limit=False, byte_fallback=True,
    ...     pad_id=0, unk_id=1, bos_id=2, eos_id=3, minloglevel=2)
    >>> proto = model.getvalue()
    >>> tokenizer = SentencePieceTokenizer(proto=proto)
    >>> ids = tokenizer.tokenize(tf.constant(["The cat sat.", "Café ☃"]), add_eos=True)
    >>> [row[-1] for row in ids.to_list()] == [tokenizer.EOS_ID] * 2
    True
    >>> tokenizer.detokenize(ids).numpy().tolist() == [
    ...     "The cat sat.".encode(), "Café ☃".encode()]
    True

    References:
        - [Kudo & Richardson, 2018. SentencePiece: A simple and language
          independent subword tokenizer and detokenizer for Neural Text
          Processing](https://arxiv.org/abs/1808.06226)
        - [Kudo, 2018. Subword Regularization: Improving Neural Network
          Translation Models with Multiple Subword Candidates](
          https://arxiv.org/abs/1804.10959) (the unigram model)
    """

    PAD_ID = translation_schema.PAD_ID
    UNK_ID = translation_schema.UNK_ID
    BOS_ID = translation_schema.BOS_ID
    EOS_ID = translation_schema.EOS_ID

    def __init__(self, proto=None, model_file=None, add_eos=False, **kwargs):
        kwargs.setdefault("trainable", False)
        super().__init__(**kwargs)
        if (proto is None) == (model_file is None):
            raise ValueError(
                "Give SentencePieceTokenizer exactly one of proto (the bytes of a "
                ".model file) and model_file (its path)."
            )
        name = "the model proto"
        if model_file is not None:
            name = str(model_file)
            with tf.io.gfile.GFile(name, "rb") as file:
                proto = file.read()
        self.proto = bytes(proto)
        self.add_eos = bool(add_eos)
        processor = sentencepiece.SentencePieceProcessor()
        try:
            processor.LoadFromSerializedProto(self.proto)
        except (RuntimeError, OSError) as error:
            raise ValueError(
                f"{name} is not a SentencePiece model ({error}). Give the .model "
                "file that spm_train, sentencepiece.SentencePieceTrainer or "
                "pipelines.translation_data wrote."
            ) from error
        self.pad_id = processor.pad_id()
        self.unk_id = processor.unk_id()
        self.bos_id = processor.bos_id()
        self.eos_id = processor.eos_id()
        actual = (self.pad_id, self.unk_id, self.bos_id, self.eos_id)
        expected = (self.PAD_ID, self.UNK_ID, self.BOS_ID, self.EOS_ID)
        if actual != expected:
            raise ValueError(
                f"{name} has the special ids pad={actual[0]}, unk={actual[1]}, "
                f"bos={actual[2]}, eos={actual[3]}, but tfnlp's translation data "
                f"needs pad={expected[0]}, unk={expected[1]}, bos={expected[2]}, "
                f"eos={expected[3]} (id 0 is padding). Learn a model with those "
                "ids: python -m pipelines.translation_data (without --vocab_file) "
                "does, or sentencepiece.SentencePieceTrainer.train(..., pad_id=0, "
                "unk_id=1, bos_id=2, eos_id=3, byte_fallback=True)."
            )
        self._vocabulary_size = processor.get_piece_size()
        self._sentencepiece = tf_text.SentencepieceTokenizer(
            model=self.proto, out_type=tf.int32, nbest_size=0, alpha=1.0,
            reverse=False, add_bos=False, add_eos=False,
        )
        # tensorflow-text's tokenizer reads its model from `_model_resource`.
        self._sentencepiece._model_resource = _SharedModelResource(self.proto)
        self.built = True

    @property
    def resource(self):
        """The tensorflow-text tokenizer holding the model (a trackable
        resource): a SavedModel whose functions tokenize must track it, as
        `tfnlp.export` does."""
        return self._sentencepiece

    @property
    def vocabulary_size(self):
        """The number of pieces (ids run from 0 to this minus 1)."""
        return self._vocabulary_size

    def tokenize(self, strings, add_eos=False):
        """The ids of `strings`.

        Args:
            strings: a string tensor of any shape (UTF-8).
            add_eos: append EOS to each sequence (as the records have it).

        Returns:
            int32 ids with one more dimension than `strings`: a RaggedTensor
            (a 1-D Tensor for a scalar string). No BOS is added.
        """
        strings = tf.convert_to_tensor(strings, dtype=tf.string)

        def tokenize_rows(rows):
            ids = self._sentencepiece.tokenize(rows)
            if add_eos:
                eos = tf.fill(tf.stack([ids.nrows(), 1]), tf.constant(self.EOS_ID, tf.int32))
                ids = tf.concat([ids, tf.RaggedTensor.from_tensor(eos)], axis=1)
            return ids

        return tokenize_any_rank(strings, tokenize_rows)

    def detokenize(self, ids):
        """The text of `ids`, as decoder outputs come.

        Each sequence ends at its first EOS (what follows is ignored), and
        PAD and BOS are left out wherever they are, so padded or
        BOS-prefixed outputs can be passed in as they are.

        Args:
            ids: integer ids in the last dimension, dense (padded) or
                ragged, of rank 1 or more; every id in
                `[0, vocabulary_size)`.

        Returns:
            A string tensor of the shape of `ids` without its last dimension
            (a scalar for rank-1 ids; ragged where `ids` is ragged above its
            last dimension): the normalized text.
        """
        if isinstance(ids, tf.RaggedTensor):
            if ids.shape.rank > 2:
                return ids.with_values(self.detokenize(ids.values))
            ids = tf.cast(ids, tf.int32)
            valid = tf.sequence_mask(ids.row_lengths())
            dense = ids.to_tensor(default_value=self.PAD_ID)
            return self._detokenize_matrix(dense, valid)
        ids = tf.cast(tf.convert_to_tensor(ids), tf.int32)
        rank = ids.shape.rank
        if rank is None or rank == 0:
            raise ValueError("detokenize needs ids of known rank, 1 or more.")
        if rank == 1:
            return self.detokenize(ids[tf.newaxis])[0]
        if rank > 2:
            shape = tf.shape(ids)
            flat = tf.reshape(ids, tf.stack([-1, shape[-1]]))
            return tf.reshape(self.detokenize(flat), shape[:-1])
        return self._detokenize_matrix(ids, tf.ones_like(ids, dtype=tf.bool))

    def _detokenize_matrix(self, ids, valid):
        """Detokenizes a [batch, length] matrix, keeping the `valid` ids up
        to each row's first EOS except PAD and BOS."""
        before_eos = tf.equal(
            tf.cumsum(tf.cast(tf.equal(ids, self.EOS_ID), tf.int32), axis=1), 0)
        keep = (valid & before_eos & tf.not_equal(ids, self.PAD_ID)
                & tf.not_equal(ids, self.BOS_ID))
        return self._sentencepiece.detokenize(tf.ragged.boolean_mask(ids, keep))

    def id_to_piece(self, ids):
        """The pieces (strings, e.g. "▁Haus", "<0xE2>") of `ids` (any shape)."""
        return self._sentencepiece.id_to_string(ids)

    def call(self, inputs):
        return self.tokenize(inputs, add_eos=self.add_eos)

    def get_config(self):
        config = super().get_config()
        config.update({
            "proto": base64.b64encode(self.proto).decode("ascii"),
            "add_eos": self.add_eos,
        })
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("proto"), str):
            config["proto"] = base64.b64decode(config["proto"])
        return cls(**config)
