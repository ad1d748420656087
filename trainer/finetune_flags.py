"""The command line of `python -m trainer.finetune`."""

import os

from tfnlp.command_line import (
    ArgumentParser,
    UsageError,
    add_label_column_flag,
    add_labels_flag,
    add_lower_case_flag,
    add_text_column_flag,
    check_input_file,
)
from tfnlp.data.labelled_files import split_labels
from tfnlp.text import load_vocabulary
from trainer import finetune_data
from trainer.bert_models import (
    check_bert_config_flag, check_inputs_fit, checkpoint_config, config_from_name,
)
from trainer.run_flags import (
    add_bert_config_flag,
    add_bert_override_flags,
    add_bucket_boundaries_flag,
    add_clip_norm_flag,
    add_distribution_flags,
    add_ema_flag,
    add_export_dir_flag,
    add_global_batch_size_flag,
    add_keep_checkpoints_flag,
    add_learning_rate_flag,
    add_model_dir_flag,
    add_optimizer_flags,
    add_progress_flag,
    add_seed_flag,
    add_stop_time_flag,
    add_train_steps_flag,
    check_output_flags,
    value_from_inputs,
)

# The encoder's sizes that the flags set from scratch and a checkpoint
# records otherwise.
SIZE_FLAGS = ("vocab_size", "num_layers")


def finetuning_parser():
    """The `argparse` parser of the fine-tuning flags."""
    parser = ArgumentParser(
        prog="python -m trainer.finetune",
        description="Fine-tunes BERT for classification, token classification or spans.",
        allow_abbrev=False,
        conflict_handler="resolve",  # Its --verbose also takes the old 0-2.
    )
    parser.add_argument("--task", choices=finetune_data.TASKS, required=True,
                        help="classification (a label per text or text pair), "
                             "token_classification (a tag per word) or span (an answer "
                             "span in a context, as SQuAD).")

    data = parser.add_argument_group("data")
    data.add_argument("--train_data", required=True, help="The training CSV, TSV or JSONL file.")
    data.add_argument("--eval_data", default="", help="The evaluation file (same format).")
    add_text_column_flag(data, "--train_data and --eval_data", mode="classification",
                         segment=" (or first segment)")
    data.add_argument("--text_pair_column", default="",
                      help="classification: the column of the second segment, if any.")
    add_label_column_flag(data, "--train_data and --eval_data", mode="classification")
    add_labels_flag(data, "the sorted labels of the training file")
    data.add_argument("--num_classes", type=int, default=0,
                      help="Without --labels: the labels are the integers 0..N-1.")
    data.add_argument("--vocab_file", required=True, help="The WordPiece vocabulary.")
    add_lower_case_flag(data, True, "uncased vocabularies")
    data.add_argument("--max_seq_length", type=int, default=128,
                      help="The most WordPieces of an example, [CLS] and [SEP] included; "
                           "longer text is truncated.")
    add_bucket_boundaries_flag(data, "a batch holds examples",
                               "every batch padded to --max_seq_length (always so with "
                               "--strategy=tpu)")
    add_seed_flag(data, "the head's initial weights")

    model = parser.add_argument_group("model")
    add_model_dir_flag(model, "Checkpoints, TensorBoard logs, labels.json, eval_results.json.")
    model.add_argument("--init_checkpoint", default="",
                       help="A pretraining model_dir or checkpoint prefix, or a Hugging "
                            "Face BERT directory; empty: train from scratch.")
    add_bert_config_flag(model, "", mode="Without --init_checkpoint")
    model.add_argument("--vocab_size", type=int, default=None,
                       help="The encoder's vocabulary size (default: the tokens of "
                            "--vocab_file from scratch, replacing the --config's; the "
                            "checkpoint's with --init_checkpoint); another is refused.")
    add_bert_override_flags(model, "the --config's from scratch; the checkpoint's with "
                                   "--init_checkpoint, where another is refused")
    model.add_argument("--pooling", choices=("auto", "pooled_output", "mean"), default="auto",
                       help="The classifier's sentence vector: BERT's pooled [CLS] output, or "
                            "the mean of the tokens' states; auto: mean for a "
                            "sentence-transformers --init_checkpoint that pools by mean, "
                            "else pooled_output.")
    model.add_argument("--dropout", type=float, default=0.1,
                       help="Dropout before the (token) classification layer.")

    training = parser.add_argument_group("training")
    add_global_batch_size_flag(training, default=32)
    training.add_argument("--epochs", type=int, default=3,
                          help="Passes over the training data (without --train_steps).")
    add_train_steps_flag(training, "Train exactly this many steps (instead of --epochs).",
                         default=0)
    add_learning_rate_flag(training, 2e-5)
    training.add_argument("--warmup_steps", type=int, default=None,
                          help="Linear warmup steps; default: 10%% of the steps.")
    add_optimizer_flags(training)
    add_clip_norm_flag(training)
    add_ema_flag(training)
    add_distribution_flags(training)
    training.set_defaults(jit_compile=True)
    add_stop_time_flag(training)

    outputs = parser.add_argument_group("checkpoints, logs and export")
    outputs.add_argument("--eval_every_epochs", type=int, default=1,
                         help="With --eval_data: epochs between evaluations during "
                              "training (0: only the final evaluation).")
    outputs.add_argument("--eval_every_steps", type=int, default=0,
                         help="With --eval_data: steps between evaluations (and "
                              "checkpoints) instead of --eval_every_epochs.")
    add_keep_checkpoints_flag(outputs, 2, "the best is kept apart, in best/")
    outputs.add_argument("--log_every_steps", type=int, default=100,
                         help="Steps between TensorBoard training scalars.")
    add_progress_flag(outputs)
    add_export_dir_flag(outputs, "the fine-tuned model")
    outputs.add_argument("--verbose", type=int, choices=(0, 1, 2), nargs="?", const=2,
                         default=2,
                         help="Accepted for older command lines, whose 0-2 was Keras "
                              "fit's verbosity: the progress lines "
                              "(--progress_every_seconds) report training now, whatever "
                              "the value. A bare --verbose prints the traceback of an "
                              "error.")
    return parser


def parse_flags(argv=None):
    """Parses and checks the flags; exits with a usage message on errors."""
    parser = finetuning_parser()
    flags = parser.parse_args(argv)
    for name in ("global_batch_size", "max_seq_length", "keep_checkpoints", "log_every_steps"):
        if getattr(flags, name) < 1:
            parser.error(f"--{name} must be at least 1, got {getattr(flags, name)}.")
    for name in ("train_steps", "num_classes", "eval_every_epochs"):
        if getattr(flags, name) < 0:
            parser.error(f"--{name} must not be negative, got {getattr(flags, name)}.")
    if not flags.train_steps and flags.epochs < 1:
        parser.error(f"--epochs must be at least 1 (or give --train_steps), got {flags.epochs}.")
    if flags.warmup_steps is not None and flags.warmup_steps < 0:
        parser.error(f"--warmup_steps must not be negative, got {flags.warmup_steps}.")
    if flags.eval_every_steps < 0:
        parser.error(f"--eval_every_steps must not be negative, got {flags.eval_every_steps}.")
    if flags.learning_rate <= 0:
        parser.error(f"--learning_rate must be positive, got {flags.learning_rate}.")
    if flags.max_seq_length < 4:
        parser.error(f"--max_seq_length={flags.max_seq_length} is too short; use at least 4.")
    if not flags.init_checkpoint and not flags.config:
        parser.error(
            "Give --init_checkpoint (a pretraining model_dir or a Hugging Face "
            "directory) or, to train from scratch, --config (a preset or a JSON file)."
        )
    if flags.labels and flags.num_classes and len(split_labels(flags.labels)) != flags.num_classes:
        parser.error(
            f"--labels names {len(split_labels(flags.labels))} labels but "
            f"--num_classes={flags.num_classes}; give one of the two, or matching ones."
        )
    return flags


def check_paths(flags):
    """Checks the files and directories that the flags name, before training.

    Raises:
        UsageError: an input file cannot be read, `--init_checkpoint` does
            not exist, or an output directory cannot be written.
    """
    data = "a CSV, TSV or JSONL file of the --task"
    check_input_file("--train_data", flags.train_data, data)
    if flags.eval_data:
        check_input_file("--eval_data", flags.eval_data, data)
    check_input_file("--vocab_file", flags.vocab_file,
                     "the WordPiece vocabulary of the encoder, one token a line")
    if flags.config and not flags.init_checkpoint:
        check_bert_config_flag(flags.config)
    checkpoint = flags.init_checkpoint
    if (checkpoint and "://" not in checkpoint and not os.path.exists(checkpoint)
            and not os.path.exists(checkpoint + ".index")):
        raise UsageError(
            f"--init_checkpoint={checkpoint} does not exist; expected a pretraining "
            "model_dir, a checkpoint prefix (DIR/ckpt-N) or a Hugging Face BERT "
            "directory. Check the path.")
    set_flags_from_inputs(flags)
    check_output_flags(flags)


def set_flags_from_inputs(flags):
    """Sets the encoder's sizes that the inputs decide, refusing one given
    with another value, and checks that the encoder takes the vocabulary
    and the sequence length, before anything is written.

    From scratch, `--vocab_size` is the tokens of `--vocab_file` (the
    `--config`'s vocab_size is a default, which the vocabulary replaces).
    With `--init_checkpoint`, `--vocab_size` and `--num_layers` are the
    sizes its config records; the vocabulary must not have more tokens than
    its embeddings, nor `--max_seq_length` more than its positions.

    Args:
        flags: the parsed flags, changed in place.

    Raises:
        UsageError: a flag disagrees with the inputs, or the encoder cannot
            take them.
    """
    tokens = len(load_vocabulary(flags.vocab_file))
    if flags.init_checkpoint:
        config = checkpoint_config(flags.init_checkpoint)
        for name in SIZE_FLAGS:
            setattr(flags, name, value_from_inputs(
                f"--{name}", getattr(flags, name), getattr(config, name),
                f"--init_checkpoint={flags.init_checkpoint} has {name} "
                f"{getattr(config, name)} (its config.json)"))
    else:
        flags.vocab_size = value_from_inputs(
            "--vocab_size", flags.vocab_size, tokens,
            f"--vocab_file={flags.vocab_file} has {tokens} tokens")
        config = config_from_name(flags.config, {
            name: getattr(flags, name) for name in SIZE_FLAGS
            if getattr(flags, name) is not None})
    check_inputs_fit(config, flags.vocab_file, tokens, flags.max_seq_length)
