"""Knowledge distillation: a small student classifier (a BiLSTM, or a BERT of
fewer layers) trained on a BERT teacher's logits, on `tf.distribute`.

The task of `python -m trainer.train --task=distillation` (`python -m
trainer.distill`): its flags, its students (built, recorded, loaded and
exported), its loop task `DistillationTask`, `run` and the export of its runs.
"""

import logging
import os

import keras
import numpy as np
import tensorflow as tf

from tfnlp.command_line import (
    ArgumentParser,
    UsageError,
    add_boolean_flag,
    add_label_column_flag,
    add_text_column_flag,
    check_input_file,
)
from tfnlp.data import distillation_dataset, distillation_num_classes
from tfnlp.data.distillation_schema import LABEL, NO_LABEL, TEACHER_LOGITS
from tfnlp.export import BertTextPreprocessor, export_saved_model
from tfnlp.export.saved_model import write_next_version
from tfnlp.export.word_classifier_signatures import WordClassifierSignatures
from tfnlp.losses.distillation_losses import logit_mean_squared_error, soft_target_loss
from tfnlp.models import BertClassifier, BertConfig, BertEncoder, BiLSTMClassifier
from tfnlp.models.bert.bert_classifier import mean_over_tokens
from tfnlp.models.bert.bert_encoder import ENCODER_INPUTS
from tfnlp.models.bilstm.bilstm_classifier import POOLINGS
from tfnlp.text import BertTokenizer, WordTokenizer, align_word_vectors
from tfnlp.text.word_vectors import WORD_VECTOR_FORMATS
from trainer import length_buckets, runtime
from trainer.bert_models import (
    check_inputs_fit,
    check_sequence_fits,
    checkpoint_config,
    load_trained_model,
)
from trainer.checkpoints import BestCheckpoint, latest_step, read_run_config, restore_run_model
from trainer.distillation_inputs import (
    StudentInputs,
    dev_dataset_function,
    dev_steps,
    label_list,
    read_dev_set,
    word_vocabulary,
)
from trainer.run_flags import (
    add_bucket_boundaries_flag,
    add_export_dir_flag,
    add_global_batch_size_flag,
    add_loop_output_flags,
    add_loop_training_flags,
    add_model_dir_flag,
    add_preset_config_flag,
    add_schedule_flag,
    add_seed_flag,
    add_shuffle_buffer_flag,
    add_task_flag,
    add_train_steps_flag,
    check_config_flag,
    check_counts,
    check_rates,
    check_output_flags,
    check_tfrecord_flag,
    match_data_files,
    model_from_config_flag,
    optimizer_from_flags,
)
from trainer.tasks.registry import TaskEntry, register_task
from trainer.training_loop import evaluate

LOGGER = logging.getLogger("trainer.distill")

# The kind a run's serving.json records ("model"), the task's name.
RUN_KIND = "distillation"
STUDENTS = ("bilstm", "bert")
# The --config models of the BiLSTM student.
MODELS = {"bilstm": BiLSTMClassifier}
OBJECTIVES = ("distill", "labels")
TEACHER_LOSSES = ("kl", "mse")
INPUT_MASK = "input_mask"
DATA_WRITER = "pipelines.distillation_data"
# The peak learning rate of each student when --learning_rate is not given.
DEFAULT_LEARNING_RATES = {"bilstm": 1e-3, "bert": 5e-5}
# --word_vectors' values for vectors made from the teacher: the mean of its
# WordPiece embeddings, or its sentence vector of each word alone.
TEACHER_WORD_VECTORS = "teacher"
TEACHER_OUTPUT_WORD_VECTORS = "teacher_output"
TEACHER_VECTORS = (TEACHER_WORD_VECTORS, TEACHER_OUTPUT_WORD_VECTORS)
DEFAULT_SEQUENCE_LENGTH = 128
# The share of the steps used for the warmup when --warmup_steps is not given.
DEFAULT_WARMUP_FRACTION = 0.1
BILSTM_SIZES = ("embedding_dim", "lstm_units", "hidden_dim")

# The encoder layers copied whole from the teacher, besides the blocks.
COPIED_ENCODER_LAYERS = ("token_embedding", "segment_embedding", "position_embedding",
                         "embeddings_layer_norm", "pooled_dense")

# The metrics the HParams tab compares runs by: (run, scalar name).
HPARAMS_METRICS = (
    ("eval", "accuracy"), ("eval", "teacher_agreement"), ("eval", "loss"),
    ("train", "loss"), ("train", "teacher_agreement"),
)
# Texts per batch when the teacher labels the dev set.
TEACHER_BATCH = 64
# The packed length of one word for --word_vectors=teacher_output: [CLS], up
# to 14 WordPieces, [SEP] (longer words are cut).
WORD_SEQUENCE_LENGTH = 16


def distillation_parser():
    """The `argparse` parser of the distillation trainer's flags."""
    parser = ArgumentParser(
        prog="python -m trainer.distill",
        description="Trains a small student classifier on a BERT teacher's logits "
                    "(knowledge distillation), or on the gold labels alone.",
        allow_abbrev=False,
    )
    add_task_flag(parser, (RUN_KIND,))
    data = parser.add_argument_group("data")
    data.add_argument("--train_data", required=True,
                      help=f"Comma-separated globs of the transfer set's shards (python -m "
                           f"{DATA_WRITER}): texts with the teacher's logits.")
    data.add_argument("--labels_file", default="",
                      help="The label list, a JSON list (class id = index); default: the "
                           "labels.json beside the first training shard, else the class "
                           "ids.")
    data.add_argument("--eval_data", default="",
                      help="A labelled dev file (CSV, TSV or JSONL, as trainer.finetune "
                           "reads it): accuracy against its labels and, with a classifier "
                           "--teacher, agreement with the teacher, at every evaluation.")
    add_text_column_flag(data, "--eval_data")
    add_label_column_flag(data, "--eval_data")
    add_global_batch_size_flag(data, "Texts", default=32)
    add_shuffle_buffer_flag(data)
    data.add_argument("--max_seq_length", type=int, default=None,
                      help="The most tokens of a text the student reads (words for the "
                           "BiLSTM, WordPieces with [CLS] and [SEP] for BERT); default: "
                           f"the teacher run's, else {DEFAULT_SEQUENCE_LENGTH}.")
    add_bucket_boundaries_flag(data, "a training batch holds texts",
                               "batches in record order, padded to --max_seq_length")
    add_seed_flag(data)

    objective = parser.add_argument_group("objective")
    objective.add_argument("--objective", choices=OBJECTIVES, default="distill",
                           help="distill: learn the teacher's logits on every record (and "
                                "the gold labels with weight 1 - alpha); labels: the same "
                                "student on the labelled records' gold labels alone, the "
                                "baseline.")
    objective.add_argument("--loss", choices=TEACHER_LOSSES, default="kl",
                           help="The teacher term: kl (T^2 KL of the softened "
                                "distributions, Hinton et al.) or mse (the squared "
                                "difference of the logits, Tang et al.).")
    objective.add_argument("--temperature", type=float, default=2.0,
                           help="The softmax temperature T of --loss=kl.")
    objective.add_argument("--alpha", type=float, default=1.0,
                           help="The weight of the teacher term; 1 - alpha weighs the "
                                "cross-entropy with the gold labels of the labelled records.")

    student = parser.add_argument_group("student")
    add_model_dir_flag(student, "Checkpoints, TensorBoard logs, train_log.jsonl, "
                                "vocabulary.txt (BiLSTM).")
    student.add_argument("--student", choices=STUDENTS, default="bilstm",
                         help="bilstm: Tang et al.'s word-level BiLSTM; bert: a BERT of "
                              "--student_layers layers initialised from --teacher.")
    student.add_argument("--teacher", default="",
                         help="The teacher: a trainer.finetune run or a Hugging Face BERT "
                              "directory. The BERT student starts from it and takes its "
                              "vocabulary; with either student a classifier teacher also "
                              "labels --eval_data for the agreement.")
    student.add_argument("--student_layers", type=int, default=None,
                         help="BERT: the student's layers (default: half the teacher's), "
                              "each initialised from the last teacher layer of its group "
                              "(1, 3, 5 of 6 for 3).")
    student.add_argument("--dropout", type=float, default=None,
                         help="The dropout before the classification layer (BiLSTM: "
                              "after its ReLU layer); default: the model's.")
    add_preset_config_flag(student, "tiny, tang2019; the default", "BiLSTMClassifier arguments",
                           default="", mode="BiLSTM")
    for name in BILSTM_SIZES:
        student.add_argument(f"--{name}", type=int, default=None,
                             help=f"BiLSTM: overrides the preset's {name} (default: the "
                                  "preset's).")
    student.add_argument("--pooling", choices=POOLINGS, default=None,
                         help="BiLSTM: final states (Tang et al.) or max-pooling (default: "
                              "the preset's).")
    student.add_argument("--max_vocabulary_size", type=int, default=50_000,
                         help="BiLSTM: the most frequent words of the training texts kept.")
    student.add_argument("--min_word_count", type=int, default=1,
                         help="BiLSTM: leave out the words seen fewer times.")
    student.add_argument("--extra_vocabulary_file", default="",
                         help="BiLSTM: a word list or WordPiece vocabulary (such as the "
                              "teacher's vocab.txt) whose words the training texts lack "
                              "join the vocabulary after theirs, up to "
                              "--max_vocabulary_size: they keep their --word_vectors "
                              "instead of reading as [UNK].")
    student.add_argument("--word_vectors", default="",
                         help="BiLSTM: a word2vec or GloVe file whose vectors start the "
                              "embeddings (sets --embedding_dim); 'teacher': the mean of "
                              "the --teacher's WordPiece embeddings of each word; "
                              "'teacher_output': the --teacher's sentence vector of each "
                              "word alone.")
    student.add_argument("--word_vectors_format", choices=WORD_VECTOR_FORMATS,
                         default="auto",
                         help="The format of --word_vectors (gzipped or not); auto tells "
                              "it from the file's first lines.")
    add_boolean_flag(student, "freeze_word_vectors", False,
                     "BiLSTM: keep the embeddings of --word_vectors as they are.")
    add_boolean_flag(student, "multichannel_word_vectors", False,
                     "BiLSTM: read two channels of --word_vectors, one trained and one "
                     "kept as it is (Kim 2014; Tang et al. 2019), concatenated.")

    training = parser.add_argument_group("training")
    add_train_steps_flag(training, "Training steps, of --global_batch_size texts each.")
    add_schedule_flag(training, "linear")
    add_loop_training_flags(training)

    outputs = parser.add_argument_group("checkpoints, evaluation, logs and export")
    add_loop_output_flags(outputs)
    add_export_dir_flag(outputs, "the student (the best checkpoint by dev accuracy when "
                                 "there is one)",
                        "SavedModel whose serving_default takes raw text (as a BERT "
                        "classifier's export does)")
    parser.set_defaults(learning_rate=None, warmup_steps=None, weight_decay=0.01,
                        clip_norm=1.0)
    # The defaults that `parse_flags` resolves, in the shared flags' help.
    rates = " and ".join(f"{rate:g} for {name}" for name, rate in DEFAULT_LEARNING_RATES.items())
    warmup = f"{DEFAULT_WARMUP_FRACTION:.0%}%"  # "10%%": argparse %-formats the help.
    helps = {"learning_rate": f"The peak learning rate (after the warmup); default: {rates}.",
             "warmup_steps": "Steps over which the learning rate rises linearly from 0 to "
                             f"--learning_rate; default: {warmup} of --train_steps."}
    for action in parser._actions:
        action.help = helps.get(action.dest, action.help)
    return parser


def parse_flags(argv=None):
    """Parses and checks the flags, and resolves the student's defaults;
    exits with a usage message on errors."""
    parser = distillation_parser()
    flags = parser.parse_args(argv)
    if flags.warmup_steps is None:
        flags.warmup_steps = int(DEFAULT_WARMUP_FRACTION * flags.train_steps)
    if flags.learning_rate is None:
        flags.learning_rate = DEFAULT_LEARNING_RATES[flags.student]
    check_counts(
        parser, flags,
        positive=("train_steps", "global_batch_size", "gradient_accumulation_steps",
                  "keep_checkpoints", "log_every_steps", "shuffle_buffer",
                  "max_vocabulary_size", "min_word_count"),
        non_negative=("warmup_steps", "checkpoint_every_steps", "eval_every_steps",
                      "stop_time_hours"),
    )
    check_counts(parser, flags, positive=[
        name for name in ("max_seq_length", "student_layers", *BILSTM_SIZES)
        if getattr(flags, name) is not None])
    if flags.learning_rate <= 0:
        parser.error(f"--learning_rate must be positive, got {flags.learning_rate}.")
    if not flags.temperature > 0:
        parser.error(f"--temperature must be positive, got {flags.temperature}.")
    if not 0 <= flags.alpha <= 1:
        parser.error(f"--alpha, the weight of the teacher term, must be in [0, 1]; got "
                     f"{flags.alpha}.")
    check_rates(parser, flags, ("dropout",))
    if flags.student == "bert":
        if not flags.teacher:
            parser.error("--student=bert starts from the teacher's layers and vocabulary: "
                         "give --teacher (a trainer.finetune run or a Hugging Face BERT "
                         "directory).")
        given = [f"--{name}" for name in ("config", "word_vectors", "pooling",
                                          "extra_vocabulary_file", *BILSTM_SIZES)
                 if getattr(flags, name)]
        if given:
            parser.error(f"{', '.join(given)} shape the BiLSTM student's words and sizes; "
                         "the BERT student takes the teacher's config and WordPiece "
                         "vocabulary, with --student_layers. Leave them out.")
        if flags.max_seq_length is not None and flags.max_seq_length < 4:
            parser.error(f"--max_seq_length={flags.max_seq_length} leaves no room for "
                         "text after [CLS] and [SEP]; use at least 4.")
    else:
        flags.config = flags.config or "tang2019"
        if flags.freeze_word_vectors and flags.multichannel_word_vectors:
            parser.error("--multichannel_word_vectors trains one of its two channels, so it "
                         "cannot be combined with --freeze_word_vectors; pass one of them.")
        if flags.student_layers is not None:
            parser.error("--student_layers sizes the BERT student (--student=bert); the "
                         "BiLSTM's sizes are --config and --embedding_dim, --lstm_units, "
                         "--hidden_dim.")
    return flags


def check_paths(flags):
    """Checks the files and directories that the flags name, before training.

    Raises:
        UsageError: `--train_data` matches no TFRecord file, an input file
            or directory cannot be read, or an output directory cannot be
            written.
    """
    check_tfrecord_flag("--train_data", flags.train_data, DATA_WRITER)
    if flags.eval_data:
        check_input_file("--eval_data", flags.eval_data,
                         "a labelled CSV, TSV or JSONL dev file")
    if flags.labels_file:
        check_input_file("--labels_file", flags.labels_file,
                         'a JSON list of labels, such as ["negative", "positive"]')
    if flags.word_vectors in TEACHER_VECTORS and not flags.teacher:
        raise UsageError(f"--word_vectors={flags.word_vectors} takes its vectors from the "
                         "--teacher: give --teacher (a trainer.finetune run or a Hugging "
                         "Face BERT directory), or a word-vector file.")
    if flags.extra_vocabulary_file:
        check_input_file("--extra_vocabulary_file", flags.extra_vocabulary_file,
                         "a word list or WordPiece vocabulary, one word a line")
    if flags.word_vectors and flags.word_vectors not in TEACHER_VECTORS:
        check_input_file("--word_vectors", flags.word_vectors,
                         "a word2vec (binary or text) or GloVe file")
    if flags.teacher and "://" not in flags.teacher and not os.path.isdir(flags.teacher):
        raise UsageError(
            f"--teacher={flags.teacher} is not a directory; expected the model_dir of a "
            "trainer.finetune run or a Hugging Face BERT directory.")
    if flags.student == "bilstm":
        check_config_flag(flags.config, sorted(MODELS["bilstm"].presets),
                          "a JSON file of BiLSTMClassifier arguments")
    elif flags.max_seq_length is not None:
        # The BERT student has the teacher's position embeddings.
        check_sequence_fits(checkpoint_config(flags.teacher, "--teacher"),
                            flags.max_seq_length)
    check_output_flags(flags)


def _bilstm_arguments(flags):
    """The BiLSTM student's constructor arguments that its flags set."""
    arguments = {name: getattr(flags, name)
                 for name in ("embedding_dim", "lstm_units", "hidden_dim", "pooling", "dropout")
                 if getattr(flags, name) is not None}
    arguments["freeze_embeddings"] = flags.freeze_word_vectors
    arguments["multichannel"] = flags.multichannel_word_vectors
    return arguments


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


def load_teacher(path):
    """The teacher model and its serving record (vocabulary, lower-casing,
    sequence length, labels), from a `trainer.finetune` run or a Hugging
    Face BERT directory."""
    teacher, record = load_trained_model(path)
    if not record.get("vocab_file"):
        raise UsageError(
            f"--teacher={path} records no WordPiece vocabulary (no vocab_file in its "
            "serving.json, no vocab.txt): the BERT student reads the teacher's.")
    LOGGER.info("Teacher: %s of %s.", type(teacher).__name__, path)
    return teacher, record


def teacher_tokenizer(record):
    """The teacher's `BertTokenizer`, as its run's serving record gives it
    (lower-cased unless the record says otherwise)."""
    return BertTokenizer(record["vocab_file"], lower_case=record.get("lower_case", True))


def teacher_dev_logits(teacher, record, texts):
    """The teacher's float32 logits `(texts, classes)` on the dev texts,
    tokenized as the teacher's run recorded."""
    preprocessor = BertTextPreprocessor(
        teacher_tokenizer(record), record.get("sequence_length", DEFAULT_SEQUENCE_LENGTH))
    logits = [teacher(preprocessor(tf.constant(texts[start:start + TEACHER_BATCH])),
                      training=False)
              for start in range(0, len(texts), TEACHER_BATCH)]
    return np.concatenate([np.asarray(part, np.float32) for part in logits])


def word_embeddings(flags, vocabulary, teacher=None, teacher_record=None):
    """The BiLSTM's constructor arguments of `--word_vectors`: the matrix
    aligned with `vocabulary` and its size (none without the flag), from a
    file (word2vec or GloVe; the counts of words found and missing are
    logged) or from the teacher: `teacher` (the mean of its WordPiece
    embeddings of each word) or `teacher_output` (its sentence vector of
    each word alone). A resumed run takes the embeddings from its checkpoint and
    the size from its config.json instead of reading the file again."""
    if not flags.word_vectors:
        return {}
    if latest_step(flags.model_dir):
        config = read_run_config(flags.model_dir, "trainer.distill")
        LOGGER.info("Resuming: the embeddings come from the checkpoint, not from %s.",
                    flags.word_vectors)
        return {"embedding_dim": config["config"]["embedding_dim"]}
    if flags.word_vectors in TEACHER_VECTORS:
        tokenizer = teacher_tokenizer(teacher_record)
        if flags.word_vectors == TEACHER_WORD_VECTORS:
            vectors = teacher_word_vectors(teacher, tokenizer, vocabulary)
            source = "the mean of the teacher's WordPiece embeddings"
        else:
            vectors = teacher_output_word_vectors(
                teacher, BertTextPreprocessor(tokenizer, WORD_SEQUENCE_LENGTH), vocabulary)
            source = "the teacher's sentence vector of the word alone"
        LOGGER.info("Word vectors: %s, for each of the %d words (%d dimensions).", source,
                    len(vocabulary), vectors.shape[1])
        return {"embedding_weights": vectors, "embedding_dim": int(vectors.shape[1])}
    alignment = align_word_vectors(
        flags.word_vectors, vocabulary, padding_ids=(0,), seed=flags.seed,
        format=flags.word_vectors_format, dimension=flags.embedding_dim)
    LOGGER.info("Word vectors of %s: %d words found, %d by their lower-case form, %d "
                "missing (random vectors), of %d.", flags.word_vectors,
                alignment.found_exact, alignment.found_lowercase, alignment.missing,
                len(vocabulary) - alignment.padding)
    return {"embedding_weights": alignment.embeddings,
            "embedding_dim": int(alignment.embeddings.shape[1])}


def bilstm_student(flags, run, train_files, num_classes, origins, teacher=None,
                   teacher_record=None):
    """The BiLSTM student (Tang et al.), its `WordTokenizer` (its sequence
    length in words) and the vocabulary file of the serving record.

    A `tfnlp.models.BiLSTMClassifier` on words (`tfnlp.text.WordTokenizer`:
    lower-cased, punctuation split off); its vocabulary is the
    `--max_vocabulary_size` most frequent words of the training texts (seen
    at least `--min_word_count` times), then the words of
    `--extra_vocabulary_file` they lack, written to
    `MODEL_DIR/vocabulary.txt`; `--word_vectors` (word2vec or GloVe, or the
    teacher's: `word_embeddings`) start its embeddings. Sizes: `--config`
    (a preset, or a JSON file) and the size flags.
    """
    path, _ = word_vocabulary(run, train_files, num_classes, origins,
                              flags.max_vocabulary_size, flags.min_word_count,
                              flags.extra_vocabulary_file)
    sequence_length = flags.max_seq_length or DEFAULT_SEQUENCE_LENGTH
    tokenizer = WordTokenizer(path, sequence_length=sequence_length)
    arguments = {**_bilstm_arguments(flags),
                 **word_embeddings(flags, tokenizer.vocabulary, teacher, teacher_record)}
    model = model_from_config_flag(MODELS["bilstm"], flags.config,
                                   vocabulary_size=tokenizer.vocabulary_size,
                                   num_classes=num_classes, **arguments)
    vocab_file = os.path.join(flags.model_dir, os.path.basename(path))
    return model, tokenizer, vocab_file


def bert_student(flags, teacher, record, num_classes):
    """The BERT student initialised from `teacher`, the teacher's
    `BertTokenizer` and the student's sequence length.

    DistilBERT's: a `BertClassifier` of `--student_layers` layers of the
    `--teacher`'s config (a `trainer.finetune` run or a Hugging Face BERT
    directory), its embeddings, layers (the last of each group of teacher
    layers: 1, 3, 5 of 6), pooler and classification layer copied from the
    teacher; the teacher's WordPiece vocabulary and lower-casing.
    """
    source = getattr(teacher, "encoder", teacher)
    layers = flags.student_layers or max(1, source.config.num_layers // 2)
    student, indices = distilled_bert_classifier(
        teacher, layers, num_classes, dropout=0.1 if flags.dropout is None else flags.dropout)
    LOGGER.info("BERT student: %d layers, initialised from the teacher's layers %s (of %d).",
                layers, indices, source.config.num_layers)
    tokenizer = teacher_tokenizer(record)
    sequence_length = (flags.max_seq_length or record.get("sequence_length")
                       or DEFAULT_SEQUENCE_LENGTH)
    check_inputs_fit(student.config, record["vocab_file"], tokenizer.vocab_size,
                     sequence_length)
    return student, tokenizer, sequence_length


def dev_set_with_teacher(flags, labels, teacher, teacher_record):
    """The dev set of `--eval_data`, with the teacher's logits when the
    teacher is a classifier of the same classes (its accuracy logged)."""
    dev_set = read_dev_set(flags.eval_data, flags.text_column, flags.label_column, labels)
    if isinstance(teacher, BertClassifier) and teacher.num_classes == len(labels):
        dev_set.teacher_logits = teacher_dev_logits(teacher, teacher_record, dev_set.texts)
        accuracy = float(np.mean(np.argmax(dev_set.teacher_logits, -1) == dev_set.labels))
        LOGGER.info("The teacher's accuracy on the %d dev examples: %.4f.",
                    len(dev_set.texts), accuracy)
    elif teacher is not None:
        LOGGER.info("The teacher is no classifier of %d classes: no agreement is reported.",
                    len(labels))
    return dev_set


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


class DistillationTask:
    """The loss, step sums and metrics of a student classifier (the
    training-loop task of knowledge distillation).

    A batch holds the student's inputs (token ids, tokenized from the record's
    text by the trainer's input pipeline), `input_mask` (1 for real tokens),
    `label` (the gold class id, -1 for a text without one) and, where the
    teacher's logits are known, `teacher_logits`.

    Two objectives:

    - "distill": every example's teacher term, `loss="kl"` (Hinton et al.'s
      `T² · KL` of the temperature-softened distributions,
      `tfnlp.losses.soft_target_loss`) or `loss="mse"` (the mean squared
      difference of the logits, Tang et al.,
      `tfnlp.losses.logit_mean_squared_error`), averaged over the examples of
      the global batch and weighted by `alpha`; plus, when `alpha < 1`, the
      cross-entropy with the gold labels averaged over the labelled examples of
      the global batch and weighted by `1 - alpha`. Records without a label
      only ever add the teacher term.
    - "labels": the cross-entropy with the gold labels alone, averaged over
      the labelled examples (the baseline: the same student trained without a
      teacher). The teacher's logits are never read.

    Both averages are exact across replicas: `batch_totals` gives the examples
    and labelled examples of a replica's share, and the loop sums them over the
    replicas. The evaluation reports the accuracy against the gold labels and,
    when the batches carry the teacher's logits, the student's agreement with
    the teacher's predicted classes.

    Args:
        model: the student, called on `{name: batch[name] for name in
            feature_names}` (or on the one feature itself, when there is
            one) and returning logits `(batch, num_classes)`.
        feature_names: the batch's keys the model reads ("token_ids" for
            a `tfnlp.models.BiLSTMClassifier`; "input_ids", "input_mask",
            "segment_ids" for a `BertClassifier`).
        objective: "distill" (the teacher's logits, and the labels with
            weight `1 - alpha`) or "labels" (the gold labels alone).
        loss: the teacher term, "kl" (soft targets) or "mse" (logits).
        temperature: `T` of the "kl" term (ignored by "mse").
        alpha: the weight of the teacher term, in [0, 1].

    Example:

    >>> import numpy as np
    >>> task = DistillationTask(model=lambda features, training=None: features,
    ...                         feature_names=("logits",), temperature=2.0)
    >>> batch = {"logits": tf.constant([[0.0, 1.0]]), "input_mask": tf.ones([1, 3]),
    ...          "teacher_logits": tf.constant([[1.0, 1.0]]), "label": tf.constant([-1])}
    >>> totals = task.batch_totals(batch)
    >>> loss = task.loss(batch, task.forward(batch), totals)
    >>> expected = soft_target_loss(batch["teacher_logits"], batch["logits"], 2.0)
    >>> bool(np.isclose(float(loss), float(expected[0])))
    True

    References:
        - [Hinton et al., 2015. Distilling the Knowledge in a Neural
          Network](https://arxiv.org/abs/1503.02531)
        - [Tang et al., 2019. Distilling Task-Specific Knowledge from BERT
          into Simple Neural Networks](https://arxiv.org/abs/1903.12136)
        - [Sanh et al., 2019. DistilBERT, a distilled version of BERT](
          https://arxiv.org/abs/1910.01108)
    """

    sum_names = ("teacher_loss_sum", "teacher_examples", "agreement", "cross_entropy_sum",
                 "labelled", "correct", "examples", "tokens")

    def __init__(self, model, feature_names, objective="distill", loss="kl", temperature=1.0,
                 alpha=1.0):
        if objective not in OBJECTIVES:
            raise ValueError(
                f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}.")
        if loss not in TEACHER_LOSSES:
            raise ValueError(
                f"loss must be one of {', '.join(TEACHER_LOSSES)}, got {loss!r}.")
        if not temperature > 0:
            raise ValueError(f"temperature must be positive, got {temperature!r}.")
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha, the teacher term's weight, must be in [0, 1]; got "
                             f"{alpha!r}.")
        self.model = model
        self.feature_names = tuple(feature_names)
        self.objective = objective
        self.teacher_loss = loss
        self.temperature = float(temperature)
        self.alpha = float(alpha)

    @property
    def teacher_weight(self):
        """The weight of the teacher term in the loss (0 for "labels")."""
        return self.alpha if self.objective == "distill" else 0.0

    def forward(self, batch, training=None):
        """The student's logits."""
        if len(self.feature_names) == 1:
            features = batch[self.feature_names[0]]
        else:
            features = {name: batch[name] for name in self.feature_names}
        return self.model(features, training=training)

    def batch_totals(self, batch):
        """The examples and labelled examples, whose global sums normalise
        the two terms of the loss."""
        return {"examples": _examples(batch), "labelled": tf.reduce_sum(_has_label(batch))}

    def loss(self, batch, outputs, totals):
        """This replica's share of the global batch's loss."""
        cross_entropy = tf.reduce_sum(_cross_entropy(batch, outputs)) / tf.maximum(
            totals["labelled"], 1.0)
        if self.teacher_weight == 0.0:
            return cross_entropy
        teacher = tf.reduce_sum(self._teacher_term(batch, outputs)) / tf.maximum(
            totals["examples"], 1.0)
        if self.teacher_weight == 1.0:
            return teacher
        return self.teacher_weight * teacher + (1.0 - self.teacher_weight) * cross_entropy

    def _teacher_term(self, batch, outputs):
        """The teacher term of each example, float32 `(batch,)`."""
        if TEACHER_LOGITS not in batch:
            raise ValueError(
                "The distillation objective needs the teacher's logits, but the batch "
                f"has only {sorted(batch)}. Read the transfer set's shards (they hold "
                f"{TEACHER_LOGITS!r}), or train with objective='labels'."
            )
        if self.teacher_loss == "kl":
            return soft_target_loss(batch[TEACHER_LOGITS], outputs, self.temperature)
        return logit_mean_squared_error(batch[TEACHER_LOGITS], outputs)

    def sums(self, batch, outputs):
        """The summed figures of one (micro-)batch, in float32: the teacher
        term and the agreement with the teacher's class over the examples
        that carry teacher logits (`teacher_examples`; none under the
        "labels" objective in training), the cross-entropy and the correct
        predictions over the labelled examples, the examples and the real
        tokens (for the throughput)."""
        has_label = _has_label(batch)
        predictions = tf.argmax(outputs, axis=-1, output_type=tf.int32)
        labels = tf.cast(batch[LABEL], tf.int32)
        zero = tf.constant(0.0)
        teacher_loss_sum = teacher_examples = agreement = zero
        if TEACHER_LOGITS in batch:
            teacher_classes = tf.argmax(batch[TEACHER_LOGITS], axis=-1, output_type=tf.int32)
            teacher_loss_sum = tf.reduce_sum(self._teacher_term(batch, outputs))
            teacher_examples = _examples(batch)
            agreement = tf.reduce_sum(tf.cast(tf.equal(predictions, teacher_classes),
                                              tf.float32))
        return {
            "teacher_loss_sum": teacher_loss_sum,
            "teacher_examples": teacher_examples,
            "agreement": agreement,
            "cross_entropy_sum": tf.reduce_sum(_cross_entropy(batch, outputs)),
            "labelled": tf.reduce_sum(has_label),
            "correct": tf.reduce_sum(has_label * tf.cast(tf.equal(predictions, labels),
                                                         tf.float32)),
            "examples": _examples(batch),
            "tokens": tf.reduce_sum(tf.cast(batch[INPUT_MASK], tf.float32)),
        }

    def results(self, totals):
        """`loss` (the objective's), `accuracy` and `cross_entropy` (over
        the labelled examples) and, where the batches carried the teacher's
        logits, `teacher_loss` and `teacher_agreement` (the share of
        examples whose predicted class is the teacher's). Without teacher
        logits (evaluation on a dev file with no teacher) `loss` is the
        cross-entropy."""
        labelled = max(totals["labelled"], 1.0)
        results = {"cross_entropy": totals["cross_entropy_sum"] / labelled,
                   "accuracy": totals["correct"] / labelled}
        loss = results["cross_entropy"]
        if totals["teacher_examples"]:
            results["teacher_loss"] = totals["teacher_loss_sum"] / totals["teacher_examples"]
            results["teacher_agreement"] = totals["agreement"] / totals["teacher_examples"]
            if self.teacher_weight:
                loss = (self.teacher_weight * results["teacher_loss"]
                        + (1.0 - self.teacher_weight) * loss)
        return {"loss": loss, **results}

    def step_record(self, sums):
        """The per-step figures of `train_log.jsonl` besides the loss."""
        record = {"examples": sums["examples"], "labelled": sums["labelled"],
                  "cross_entropy": sums["cross_entropy_sum"] / max(sums["labelled"], 1.0)}
        if sums["teacher_examples"]:
            record["teacher_loss"] = sums["teacher_loss_sum"] / sums["teacher_examples"]
        return record


def _examples(batch):
    return tf.cast(tf.shape(batch[LABEL])[0], tf.float32)


def _has_label(batch):
    return tf.cast(tf.not_equal(tf.cast(batch[LABEL], tf.int32), NO_LABEL), tf.float32)


def _cross_entropy(batch, logits):
    """The cross-entropy of each labelled example with its gold label, 0
    for the others, float32 `(batch,)`."""
    labels = tf.cast(batch[LABEL], tf.int32)
    cross_entropy = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.maximum(labels, 0), logits=tf.cast(logits, tf.float32))
    return cross_entropy * _has_label(batch)


def run(flags):
    """Trains as the flags say; returns the final step's loss.

        python -m trainer.distill --train_data='TRANSFER/train-*' \\
            --eval_data=dev.tsv --model_dir=RUN --student=bilstm \\
            --word_vectors=glove.840B.300d.txt --loss=mse --train_steps=20000

    It reads the transfer set of `python -m pipelines.distillation_data`
    (texts with the teacher's logits, a gold label where there is one;
    `tfnlp.data.distillation_dataset`), tokenizes it for the student
    (`trainer.distillation_inputs`) and trains the student with
    `DistillationTask`:

    - `--objective=distill`: the teacher term on every record, `--loss=kl`
      (Hinton et al.'s `T² · KL` at `--temperature`) or `--loss=mse` (the
      logits' squared difference, Tang et al.), weighted by `--alpha`, plus
      `1 - alpha` times the cross-entropy with the gold labels of the
      records that have one;
    - `--objective=labels`: the baseline, the same student trained on the
      labelled records' gold labels alone (the teacher's logits are never
      read), so that distillation can be compared with it.

    The students are `bilstm_student`'s and `bert_student`'s. With `--eval_data` (a labelled dev file) every
    evaluation reports the accuracy against its gold labels and, when
    `--teacher` is a classifier, the agreement with the teacher's
    predictions on it (`dev_set_with_teacher`); the checkpoint of the best
    accuracy is kept.

    Writes into `--model_dir` what every trainer on the shared loop writes
    (`trainer.runtime`): resumable `ckpt-STEP` checkpoints, TensorBoard logs
    and the HParams in `tensorboard/`, `train_log.jsonl`, `eval_log.jsonl`,
    `best/`; `config.json` (the student serialized by Keras) and
    `serving.json` (its kind, labels, vocabulary and sequence length, for
    `trainer.export`). With `--export_dir`, the next version of a
    SavedModel whose `serving_default` takes raw text and returns `label`,
    `class_id`, `probabilities` and `logits`, as a BERT classifier's export
    does, so `python -m tfnlp.serve` serves it unchanged.

    References:
        - [Hinton et al., 2015. Distilling the Knowledge in a Neural Network](
          https://arxiv.org/abs/1503.02531)
        - [Tang et al., 2019. Distilling Task-Specific Knowledge from BERT
          into Simple Neural Networks](https://arxiv.org/abs/1903.12136)
        - [Sanh et al., 2019. DistilBERT, a distilled version of BERT](
          https://arxiv.org/abs/1910.01108)
    """
    description = (f"Distillation ({flags.objective}, {flags.student} student)"
                   if flags.objective == "distill" else
                   f"Training on the gold labels alone ({flags.student} student)")
    return runtime.train_run(flags, lambda run: build_training(flags, run), description)


def build_training(flags, run):
    """The student, optimizer, task, data, evaluation and export of a
    distillation run (`runtime.TrainingParts`), in the strategy's scope."""
    runtime.check_global_batch_size(flags.global_batch_size, run.replicas,
                                    flags.gradient_accumulation_steps)
    train_files = match_data_files("--train_data", flags.train_data, DATA_WRITER)
    num_classes = distillation_num_classes(train_files)
    labels = label_list(flags.labels_file, train_files, num_classes)
    origins = "labelled" if flags.objective == "labels" else None
    teacher, teacher_record = load_teacher(flags.teacher) if flags.teacher else (None, {})

    if flags.student == "bert":
        model, tokenizer, sequence_length = bert_student(flags, teacher, teacher_record,
                                                         num_classes)
        vocab_file, lower_case = teacher_record["vocab_file"], tokenizer.lower_case
        model_settings = {**model.config.to_dict(), "num_classes": num_classes}
    else:
        model, tokenizer, vocab_file = bilstm_student(flags, run, train_files, num_classes,
                                                      origins, teacher, teacher_record)
        sequence_length, lower_case = tokenizer.sequence_length, True
        model_settings = model.get_config()
    widths = (length_buckets.bucket_widths(flags.bucket_boundaries, sequence_length)
              if flags.bucket_boundaries.strip() and flags.strategy != "tpu" else None)
    inputs = StudentInputs(tokenizer, sequence_length, widths)
    record = serving_record(flags.student, labels, sequence_length, lower_case, vocab_file)
    optimizer = optimizer_from_flags(flags, model,
                                                  schedule=flags.learning_rate_schedule)
    optimizer.build(model.trainable_variables)
    best = BestCheckpoint(flags.model_dir, "accuracy", higher_is_better=True, chief=run.chief)
    best_model = tf.train.Checkpoint(model=model)
    dev_set = (dev_set_with_teacher(flags, labels, teacher, teacher_record)
               if flags.eval_data else None)

    def dataset_function(seed):
        def dataset_fn(input_context):
            records = distillation_dataset(
                train_files, batch_size=None, num_classes=num_classes, origins=origins,
                shuffle=True, shuffle_buffer=flags.shuffle_buffer, seed=seed, repeat=True,
                input_context=input_context)
            return inputs.training_batches(
                records, input_context.get_per_replica_batch_size(flags.global_batch_size),
                with_teacher_logits=flags.objective == "distill")

        return dataset_fn

    def evaluator(loop, writers, step):
        dataset = run.strategy.distribute_datasets_from_function(
            dev_dataset_function(dev_set, inputs, flags.global_batch_size))
        steps = dev_steps(len(dev_set.texts), flags.global_batch_size, run.replicas)

        def evaluate_dev_set():
            values = evaluate(loop, iter(dataset), steps)
            best.update(int(step.numpy()), values, best_model)
            return values

        return evaluate_dev_set

    def export(run):
        if best.path():
            best_model.read(best.path()).assert_consumed()
        runtime.export_at_end(run, export_student, model, flags.export_dir, record=record)

    return runtime.TrainingParts(
        model=model,
        optimizer=optimizer,
        task=DistillationTask(model, inputs.feature_names, objective=flags.objective,
                              loss=flags.loss, temperature=flags.temperature,
                              alpha=flags.alpha),
        dataset_function=dataset_function,
        config=run_config(model),
        serving_record=record,
        model_settings=model_settings,
        hparams_metrics=HPARAMS_METRICS,
        evaluator=evaluator if dev_set is not None else None,
        export=export,
    )


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


TASK = register_task(TaskEntry(
    names=(RUN_KIND,),
    summary="A small student classifier (BiLSTM or BERT) on a BERT teacher's logits.",
    parse_flags=parse_flags, check_paths=check_paths, run=run,
    export_run=export_distillation_run,
    command="distill",
))
