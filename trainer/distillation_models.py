"""The students of distillation runs: build, record, load and export.

Used by `trainer.distill` (training) and `trainer.export` (a distillation
run's `--model_dir`). Two students:

- "bilstm": a `tfnlp.models.BiLSTMClassifier` on words
  (`tfnlp.text.WordTokenizer`, whose vocabulary the run writes to
  `MODEL_DIR/vocabulary.txt`), Tang et al.'s student;
- "bert": a `tfnlp.models.BertClassifier` of fewer layers than its BERT
  teacher, initialised from the teacher (`distilled_bert_classifier`:
  the embeddings, one layer of each group of consecutive layers, the pooler
  and, for a classifier teacher of as many classes, the classification
  layer), with the teacher's WordPiece vocabulary and lower-casing, as
  DistilBERT starts.

A run's `config.json` holds the student serialized by Keras (`run_config`)
and its `serving.json` what its export needs besides the checkpoint
(`serving_record`: the student kind, the labels, the vocabulary, the
lower-casing and the sequence length). Both students export a
`serving_default` on raw text with the outputs of a BERT classifier's
export (`label`, `class_id`, `probabilities`, `logits`), so
`python -m tfnlp.serve` serves either unchanged.
"""

import logging
import os

import keras
import numpy as np
import tensorflow as tf

from tfnlp.export import BertTextPreprocessor, export_saved_model
from tfnlp.export.saved_model import write_next_version
from tfnlp.export.word_classifier_signatures import WordClassifierSignatures
from tfnlp.models import BertClassifier, BertConfig, BertEncoder
from tfnlp.models.bert.bert_classifier import mean_over_tokens
from tfnlp.models.bert.bert_encoder import ENCODER_INPUTS
from tfnlp.text import BertTokenizer, WordTokenizer
from trainer import run_files
from trainer.checkpoints import read_run_config, restore_run_model

LOGGER = logging.getLogger(__name__)

RUN_KIND = "distillation"
STUDENTS = ("bilstm", "bert")
# The BiLSTM student's word vocabulary, in the run's model_dir.
VOCABULARY_FILE = "vocabulary.txt"
# The encoder layers copied whole from the teacher, besides the blocks.
COPIED_ENCODER_LAYERS = ("token_embedding", "segment_embedding", "position_embedding",
                         "embeddings_layer_norm", "pooled_dense")


def teacher_layer_indices(teacher_layers, student_layers):
    """The teacher layer each student layer starts from.

    The teacher's layers are cut into `student_layers` groups of
    consecutive layers (of equal size when it divides); student layer `i`
    takes the last layer of group `i`: "every other layer" for half as many
    layers, ending with the teacher's top layer, whose outputs the copied
    pooler and classifier were trained on.

    Args:
        teacher_layers: the teacher's number of Transformer layers.
        student_layers: the student's, from 1 to `teacher_layers`.

    Returns:
        A list of `student_layers` 0-based teacher layer indices, increasing.

    Raises:
        ValueError: `student_layers` is not in `[1, teacher_layers]`.

    Example:

    >>> teacher_layer_indices(6, 3), teacher_layer_indices(12, 4)
    ([1, 3, 5], [2, 5, 8, 11])

    References:
        - [Sanh et al., 2019. DistilBERT, a distilled version of BERT](
          https://arxiv.org/abs/1910.01108) (section 3: one layer out of two)
    """
    if not 1 <= int(student_layers) <= int(teacher_layers):
        raise ValueError(
            f"The student must have from 1 to {teacher_layers} layers (the teacher's); "
            f"got {student_layers}. Give --student_layers in that range."
        )
    return [(index + 1) * teacher_layers // student_layers - 1
            for index in range(student_layers)]


def teacher_encoder(teacher):
    """The `BertEncoder` of a teacher model (a classifier, a pretraining
    model or an encoder)."""
    encoder = getattr(teacher, "encoder", teacher)
    if not isinstance(encoder, BertEncoder):
        raise ValueError(
            f"The teacher is a {type(teacher).__name__}, not a BERT model; give --teacher "
            "a trainer.finetune run or a Hugging Face BERT directory."
        )
    return encoder


def distilled_bert_classifier(teacher, num_layers, num_classes, dropout=0.1,
                              config_overrides=None):
    """A BERT classifier of `num_layers` layers, initialised from `teacher`.

    The student's config is the teacher's with `num_layers` (and
    `config_overrides`, such as dropouts). Its embeddings (token, segment,
    position, their LayerNorm), pooler and pooling (a classifier
    teacher's, such as the mean of a sentence-transformers checkpoint) are
    the teacher's; its layer `i`
    is the teacher's layer `teacher_layer_indices(...)[i]`; its
    classification layer is the teacher's when the teacher is a
    `BertClassifier` of `num_classes` classes, else new.

    Call inside the strategy's scope.

    Args:
        teacher: a `BertClassifier`, `BertPretrainingModel` or `BertEncoder`.
        num_layers: the student's number of layers.
        num_classes: the student's number of classes.
        dropout: the dropout before the classification layer.
        config_overrides: `BertConfig` fields to change besides `num_layers`.

    Returns:
        `(student, indices)`: the `BertClassifier` and the teacher layer
        index of each student layer.

    Example:

    >>> import numpy as np
    >>> from tfnlp.models import BertConfig
    >>> teacher = BertClassifier(BertEncoder(BertConfig.preset(
    ...     "tiny", vocab_size=50, num_layers=4)), num_classes=2)
    >>> student, indices = distilled_bert_classifier(teacher, 2, num_classes=2)
    >>> indices
    [1, 3]
    >>> all(np.array_equal(a, b) for a, b in zip(
    ...     student.encoder.transformer_layers[0].get_weights(),
    ...     teacher.encoder.transformer_layers[1].get_weights()))
    True

    References:
        - [Sanh et al., 2019. DistilBERT, a distilled version of BERT](
          https://arxiv.org/abs/1910.01108) (section 3, student initialization)
    """
    source = teacher_encoder(teacher)
    indices = teacher_layer_indices(source.config.num_layers, num_layers)
    config = BertConfig.from_dict({**source.config.to_dict(), **(config_overrides or {}),
                                   "num_layers": int(num_layers)})
    pooling = teacher.pooling if isinstance(teacher, BertClassifier) else "pooled_output"
    student = BertClassifier(BertEncoder(config), num_classes=num_classes, dropout=dropout,
                             pooling=pooling)
    for name in COPIED_ENCODER_LAYERS:
        getattr(student.encoder, name).set_weights(getattr(source, name).get_weights())
    for student_layer, index in zip(student.encoder.transformer_layers, indices):
        student_layer.set_weights(source.transformer_layers[index].get_weights())
    if isinstance(teacher, BertClassifier) and teacher.num_classes == num_classes:
        student.classifier_dense.set_weights(teacher.classifier_dense.get_weights())
    else:
        LOGGER.info("The teacher has no classification layer of %d classes: the student's "
                    "starts from random weights.", num_classes)
    return student, indices


def teacher_word_vectors(teacher, tokenizer, vocabulary, padding_ids=(0,)):
    """Word vectors for a word-level student from a BERT teacher's input
    embeddings: each word's row is the mean of the teacher's embeddings of
    its WordPieces.

    Where no word2vec or GloVe file is at hand, the teacher's own
    pretrained WordPiece embeddings are vectors of the same vocabulary
    the transfer set is written in. Written here because no library
    builds word vectors from a subword embedding table.

    Args:
        teacher: a `BertClassifier`, `BertPretrainingModel` or
            `BertEncoder`.
        tokenizer: the teacher's `BertTokenizer`.
        vocabulary: the student's tokens in id order (a list of str).
        padding_ids: the ids whose rows are zeros.

    Returns:
        A float32 numpy matrix `(len(vocabulary), teacher hidden size)`.

    Example:

    >>> import numpy as np
    >>> from tfnlp.models import BertConfig
    >>> from tfnlp.text import write_vocabulary
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "vocab.txt")
    >>> write_vocabulary(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "good", "##ness"], path)
    >>> encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=6, num_layers=1))
    >>> vectors = teacher_word_vectors(encoder, BertTokenizer(path), ["", "[UNK]", "goodness"])
    >>> table = encoder.token_embedding_matrix.numpy()
    >>> bool(np.allclose(vectors[2], table[[4, 5]].mean(axis=0))), bool(vectors[0].any())
    (True, False)
    """
    table = np.asarray(keras.ops.convert_to_numpy(
        teacher_encoder(teacher).token_embedding_matrix), np.float32)
    pieces = tokenizer.tokenize(tf.constant([str(word) for word in vocabulary]))
    lengths = np.maximum(pieces.row_lengths().numpy(), 1)[:, None]
    vectors = tf.reduce_sum(tf.gather(table, pieces), axis=1).numpy() / lengths
    vectors[list(padding_ids)] = 0.0
    return vectors.astype(np.float32)


def teacher_output_word_vectors(teacher, preprocessor, vocabulary, padding_ids=(0,),
                                batch_size=256):
    """Word vectors for a word-level student from what a BERT teacher reads
    in each word alone: the teacher's sentence vector of the word as a
    one-word text (a classifier's `sentence_vector`, pooled as it was
    fine-tuned; the mean of the final states for an encoder).

    The input embeddings (`teacher_word_vectors`) hold what pretraining
    put in each WordPiece; these pass through every layer of the teacher
    as fine-tuned on the task, so a word the student never trains on still
    carries what the teacher makes of it. Written here because no library
    derives word vectors from a fine-tuned sentence encoder.

    Args:
        teacher: a `BertClassifier`, `BertPretrainingModel` or
            `BertEncoder`.
        preprocessor: a `tfnlp.export.BertTextPreprocessor` of the
            teacher's tokenizer (a short sequence length suffices: a word
            is a few WordPieces).
        vocabulary: the student's tokens in id order (a list of str).
        padding_ids: the ids whose rows are zeros.
        batch_size: words per forward pass.

    Returns:
        A float32 numpy matrix `(len(vocabulary), teacher hidden size)`.

    Example:

        preprocessor = BertTextPreprocessor(BertTokenizer(record["vocab_file"]), 16)
        vectors = teacher_output_word_vectors(classifier, preprocessor, ["", "dull", "fun"])
        vectors.shape   # (3, 384) for all-MiniLM-L6-v2; row 0 (padding) is zeros
    """
    vectors = []
    for start in range(0, len(vocabulary), batch_size):
        words = [str(word) for word in vocabulary[start:start + batch_size]]
        inputs = preprocessor(tf.constant(words))
        if isinstance(teacher, BertClassifier):
            sentence = teacher.sentence_vector(inputs, training=False)
        else:
            outputs = teacher_encoder(teacher)(
                {key: inputs[key] for key in ENCODER_INPUTS},
                training=False)
            sentence = mean_over_tokens(outputs["sequence_output"], inputs["input_mask"])
        vectors.append(np.asarray(keras.ops.convert_to_numpy(sentence), np.float32))
    vectors = np.concatenate(vectors)
    vectors[list(padding_ids)] = 0.0
    return vectors


def run_config(model):
    """What a run's `config.json` holds: the student serialized by Keras."""
    return keras.saving.serialize_keras_object(model)


def serving_record(student, labels, sequence_length, lower_case=True, vocab_file=""):
    """What export needs besides the checkpoints.

    Args:
        student: "bilstm" or "bert".
        labels: the label of each class id.
        sequence_length: the most tokens (words or WordPieces) of a text
            the student reads.
        lower_case: the BERT student's lower-casing (the word tokenizer
            always lower-cases).
        vocab_file: the vocabulary (the word vocabulary of the BiLSTM
            student, the WordPiece vocabulary of the BERT student).
    """
    return {"model": RUN_KIND, "student": student, "labels": list(labels),
            "sequence_length": int(sequence_length), "lower_case": bool(lower_case),
            "vocab_file": os.path.abspath(vocab_file)}


def word_tokenizer(record):
    """The BiLSTM student's `WordTokenizer` of a serving record."""
    return WordTokenizer(record["vocab_file"], sequence_length=record["sequence_length"])


def bert_preprocessor(record):
    """The BERT student's `BertTextPreprocessor` of a serving record."""
    return BertTextPreprocessor(BertTokenizer(record["vocab_file"],
                                              lower_case=record["lower_case"]),
                                record["sequence_length"])


def export_student(model, export_dir, record, text_signatures=True):
    """Exports a student as the next version of `export_dir`; returns its path.

    Args:
        model: the trained student.
        export_dir: the base directory of the versioned exports.
        record: the run's serving record.
        text_signatures: the BERT student: include `serving_default` on
            text (it needs the tensorflow-text ops to load); otherwise
            `serving_default` is `classify_ids`. The BiLSTM student's text
            signature uses core ops only and is always written.
    """
    if record["student"] == "bert":
        return export_saved_model(model, export_dir, bert_preprocessor(record),
                                  text_signatures=text_signatures, labels=record["labels"])
    signatures = WordClassifierSignatures(model, word_tokenizer(record), record["labels"])
    path = write_next_version(export_dir, signatures.signatures(),
                              {"tokenizer": signatures.tokenizer})
    LOGGER.info("Exported %s as %s.", type(model).__name__, path)
    return path


def load_student(model_dir, checkpoint=""):
    """The student of a `trainer.distill` run with its trained weights.

    Args:
        model_dir: the run's directory.
        checkpoint: a checkpoint prefix; by default the best one by
            validation accuracy (`best/`), else the latest.
    """
    model = keras.saving.deserialize_keras_object(read_run_config(model_dir, "trainer.distill"))
    return restore_run_model(model, model_dir, checkpoint)


def export_distillation_run(flags, record):
    """Exports a `trainer.distill` run (`trainer.export`'s exporter of the
    kind), with `--vocab_file`, `--do_lower_case` and `--max_seq_length`
    overriding what the run recorded."""
    record = dict(record)
    overrides = {"vocab_file": flags.vocab_file, "lower_case": flags.do_lower_case,
                 "sequence_length": flags.max_seq_length}
    record.update({name: value for name, value in overrides.items() if value is not None})
    model = load_student(flags.model_dir, flags.checkpoint)
    return export_student(model, flags.export_dir, record,
                          text_signatures=flags.text_signatures)


def read_labels(path):
    """The label list of a `labels.json` file (a JSON list), or None when
    there is no such file.

    Raises:
        ValueError: the file is not a JSON list.
    """
    labels = run_files.read_json(path)
    if labels is None:
        return None
    if not isinstance(labels, list) or not labels:
        raise ValueError(
            f"{path} is not a JSON list of labels (class id = index); write it as "
            '["negative", "positive"], or remove it to use the class ids as labels.'
        )
    return [str(label) for label in labels]
