"""The command line of `python -m trainer.pretrain`."""

from tfnlp.command_line import (
    ArgumentParser,
    add_boolean_flag,
    check_input_file,
)
from trainer.run_flags import (
    add_loop_output_flags,
    add_loop_training_flags,
    check_config_flag,
    check_counts,
    check_run_flags,
)


def pretraining_parser():
    """The `argparse` parser of the pretraining flags."""
    parser = ArgumentParser(
        prog="python -m trainer.pretrain",
        description="BERT masked-LM and next-sentence pretraining on tf.distribute.",
        allow_abbrev=False,
    )
    data = parser.add_argument_group("data")
    data.add_argument("--train_data", required=True,
                      help="Comma-separated globs of the training TFRecord shards.")
    data.add_argument("--eval_data", default="",
                      help="Comma-separated globs of the evaluation shards.")
    data.add_argument("--max_seq_length", type=int, default=128,
                      help="The records' sequence length, [CLS] and both [SEP] included.")
    data.add_argument("--max_predictions_per_seq", type=int, default=20,
                      help="The records' most masked positions per sequence.")
    data.add_argument("--vocab_file", default="",
                      help="The vocabulary of the data; recorded for the export's text "
                           "and fill-mask signatures (without it: ids signatures only).")
    add_boolean_flag(data, "do_lower_case", True,
                     "Whether the data was lower-cased (recorded for the export).")
    data.add_argument("--shuffle_buffer", type=int, default=10_000,
                      help="Records in the training data's shuffle buffer.")
    data.add_argument("--seed", type=int, default=0,
                      help="Seeds the initial weights, dropout and the data order.")

    model = parser.add_argument_group("model")
    model.add_argument("--model_dir", required=True,
                       help="Checkpoints, TensorBoard logs and train_log.jsonl.")
    model.add_argument("--config", default="base",
                       help="A BertConfig preset (tiny, mini, small, base, large) or a "
                            "BertConfig JSON file.")
    model.add_argument("--vocab_size", type=int, default=None,
                       help="Overrides the config's vocab_size (the data's vocabulary).")
    model.add_argument("--num_layers", type=int, default=None,
                       help="Overrides the config's num_layers.")
    model.add_argument("--hidden_dropout", type=float, default=None,
                       help="Overrides the config's hidden_dropout.")
    model.add_argument("--attention_dropout", type=float, default=None,
                       help="Overrides the config's attention_dropout.")

    training = parser.add_argument_group("training")
    training.add_argument("--global_batch_size", type=int, required=True,
                          help="Examples per step over all replicas.")
    training.add_argument("--train_steps", type=int, required=True,
                          help="Training steps; the learning rate decays linearly to 0 "
                               "at the last.")
    add_loop_training_flags(training)

    outputs = parser.add_argument_group("checkpoints, logs and export")
    add_loop_output_flags(outputs)
    outputs.add_argument("--eval_steps", type=int, default=20,
                         help="Global batches per evaluation.")
    outputs.add_argument("--attention_images_every_steps", type=int, default=1000,
                         help="Steps between attention heatmaps (0: none).")
    outputs.add_argument("--export_dir", default="",
                         help="Write the trained encoder as a SavedModel here.")
    return parser


def parse_flags(argv=None):
    """Parses and checks the flags; exits with a usage message on errors."""
    parser = pretraining_parser()
    flags = parser.parse_args(argv)
    check_counts(
        parser, flags,
        positive=("global_batch_size", "train_steps", "max_seq_length",
                  "gradient_accumulation_steps", "keep_checkpoints", "log_every_steps"),
        non_negative=("warmup_steps", "checkpoint_every_steps", "eval_every_steps",
                      "attention_images_every_steps", "eval_steps", "stop_time_hours"),
    )
    if flags.warmup_steps > flags.train_steps:
        parser.error(
            f"--warmup_steps ({flags.warmup_steps}) must not exceed --train_steps "
            f"({flags.train_steps})."
        )
    if flags.learning_rate <= 0:
        parser.error(f"--learning_rate must be positive, got {flags.learning_rate}.")
    return flags


def check_paths(flags):
    """Checks the files and directories that the flags name, before training.

    Raises:
        UsageError: a data flag matches no TFRecord file, an input file
            cannot be read, or an output directory cannot be written.
    """
    check_run_flags(flags, "pipelines.pretraining_data")
    if flags.vocab_file:
        check_input_file("--vocab_file", flags.vocab_file,
                         "the WordPiece vocabulary of the data, one token a line")
    check_config_flag(flags.config)
