"""The command line of `python -m trainer.distill`."""

import os

from tfnlp.command_line import (
    ArgumentParser,
    UsageError,
    add_boolean_flag,
    add_label_column_flag,
    add_text_column_flag,
    check_input_file,
)
from tfnlp.models.bilstm.bilstm_classifier import POOLINGS
from tfnlp.text.word_vectors import WORD_VECTOR_FORMATS
from trainer.bert_models import check_sequence_fits, checkpoint_config
from trainer.distillation_models import STUDENTS
from trainer.model_registry import model_family
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
    add_train_steps_flag,
    check_config_flag,
    check_counts,
    check_output_flags,
    check_tfrecord_flag,
)
from trainer.tasks.distillation import OBJECTIVES, TEACHER_LOSSES

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


def distillation_parser():
    """The `argparse` parser of the distillation trainer's flags."""
    parser = ArgumentParser(
        prog="python -m trainer.distill",
        description="Trains a small student classifier on a BERT teacher's logits "
                    "(knowledge distillation), or on the gold labels alone.",
        allow_abbrev=False,
    )
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
    if flags.dropout is not None and not 0 <= flags.dropout < 1:
        parser.error(f"--dropout must be in [0, 1), got {flags.dropout}.")
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
        check_config_flag(flags.config, sorted(model_family("bilstm").presets),
                          "a JSON file of BiLSTMClassifier arguments")
    elif flags.max_seq_length is not None:
        # The BERT student has the teacher's position embeddings.
        check_sequence_fits(checkpoint_config(flags.teacher, "--teacher"),
                            flags.max_seq_length)
    check_output_flags(flags)
