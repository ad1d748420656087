"""The command line of `python -m trainer.pretrain`."""

import logging
import os

from tfnlp.command_line import (
    ArgumentParser,
    UsageError,
    add_boolean_flag,
    check_input_file,
)
from tfnlp.data import pretraining_schema
from tfnlp.data.file_names import STATS_FILE
from tfnlp.text import load_vocabulary
from trainer.bert_models import check_bert_config_flag, config_from_name
from trainer.run_files import read_json
from trainer.run_flags import (
    add_bert_config_flag,
    add_bert_override_flags,
    add_export_dir_flag,
    add_global_batch_size_flag,
    add_loop_output_flags,
    add_loop_training_flags,
    add_model_dir_flag,
    add_seed_flag,
    add_shard_data_flags,
    add_shuffle_buffer_flag,
    add_train_steps_flag,
    check_counts,
    check_output_flags,
    check_tfrecord_flag,
    first_data_record,
    flag_text,
    match_data_files,
    value_from_inputs,
)

LOGGER = logging.getLogger("trainer.pretrain")

DATA_WRITER = "pipelines.pretraining_data"
# The lengths and lower-casing when neither the flags nor the data say.
DEFAULT_MAX_SEQ_LENGTH = 128
DEFAULT_MAX_PREDICTIONS_PER_SEQ = 20
DEFAULT_LOWER_CASE = True


def pretraining_parser():
    """The `argparse` parser of the pretraining flags."""
    parser = ArgumentParser(
        prog="python -m trainer.pretrain",
        description="BERT masked-LM and next-sentence pretraining on tf.distribute.",
        allow_abbrev=False,
    )
    data = parser.add_argument_group("data")
    add_shard_data_flags(data, DATA_WRITER)
    data.add_argument("--max_seq_length", type=int, default=None,
                      help="The records' sequence length, [CLS] and both [SEP] included "
                           "(default: that of --train_data's records, else "
                           f"{DEFAULT_MAX_SEQ_LENGTH}); another is refused.")
    data.add_argument("--max_predictions_per_seq", type=int, default=None,
                      help="The records' most masked positions per sequence (default: "
                           "that of --train_data's records, else "
                           f"{DEFAULT_MAX_PREDICTIONS_PER_SEQ}); another is refused.")
    data.add_argument("--vocab_file", default="",
                      help="The vocabulary of the data: its tokens are the model's "
                           "vocab_size, and it is recorded for the export's text and "
                           "fill-mask signatures (without it: ids signatures only).")
    add_boolean_flag(data, "do_lower_case", None,
                     "Whether the data was lower-cased, recorded for the export "
                     "(default: as the data's stats.json records it, else true).")
    add_shuffle_buffer_flag(data)
    add_seed_flag(data)

    model = parser.add_argument_group("model")
    add_model_dir_flag(model)
    add_bert_config_flag(model, "base", note="its vocab_size is a default, which "
                                             "--vocab_file's size replaces")
    model.add_argument("--vocab_size", type=int, default=None,
                       help="The model's vocabulary size (default: the tokens of "
                            "--vocab_file, else the config's); with --vocab_file it must "
                            "be the file's.")
    add_bert_override_flags(model)

    training = parser.add_argument_group("training")
    add_global_batch_size_flag(training)
    add_train_steps_flag(training, "Training steps; the learning rate decays linearly to 0 "
                                   "at the last.")
    add_loop_training_flags(training)

    outputs = parser.add_argument_group("checkpoints, logs and export")
    add_loop_output_flags(outputs)
    outputs.add_argument("--eval_steps", type=int, default=20,
                         help="Global batches per evaluation.")
    outputs.add_argument("--attention_images_every_steps", type=int, default=1000,
                         help="Steps between attention heatmaps (0: none).")
    add_export_dir_flag(outputs, "the trained encoder")
    return parser


def parse_flags(argv=None):
    """Parses and checks the flags; exits with a usage message on errors."""
    parser = pretraining_parser()
    flags = parser.parse_args(argv)
    check_counts(
        parser, flags,
        positive=("global_batch_size", "train_steps", "gradient_accumulation_steps",
                  "keep_checkpoints", "log_every_steps"),
        non_negative=("warmup_steps", "checkpoint_every_steps", "eval_every_steps",
                      "attention_images_every_steps", "eval_steps", "stop_time_hours"),
    )
    check_counts(parser, flags, positive=[
        name for name in ("max_seq_length", "vocab_size") if getattr(flags, name) is not None])
    if flags.warmup_steps > flags.train_steps:
        parser.error(
            f"--warmup_steps ({flags.warmup_steps}) must not exceed --train_steps "
            f"({flags.train_steps})."
        )
    if flags.learning_rate <= 0:
        parser.error(f"--learning_rate must be positive, got {flags.learning_rate}.")
    return flags


def check_paths(flags):
    """Checks the files and directories that the flags name, and sets the
    flags that the inputs decide (`set_flags_from_inputs`), before training.

    Raises:
        UsageError: a data flag matches no TFRecord file, an input file
            cannot be read, an output directory cannot be written, or a flag
            disagrees with the inputs.
    """
    check_tfrecord_flag("--train_data", flags.train_data, DATA_WRITER)
    if flags.eval_data:
        check_tfrecord_flag("--eval_data", flags.eval_data, DATA_WRITER)
    if flags.vocab_file:
        check_input_file("--vocab_file", flags.vocab_file,
                         "the WordPiece vocabulary of the data, one token a line")
    check_bert_config_flag(flags.config)
    set_flags_from_inputs(flags)
    check_output_flags(flags)


def set_flags_from_inputs(flags):
    """Sets the flags that the inputs decide, refusing one given with
    another value, before anything is written:

    - `--max_seq_length` and `--max_predictions_per_seq`: the lengths of
      `--train_data`'s records (its first record's; `--eval_data`'s must
      be the same); without a record, 128 and 20.
    - `--vocab_size`: the tokens of `--vocab_file`; without it, the flag,
      else the `--config`'s (a preset's or a file's vocab_size is a
      default, which the vocabulary replaces).
    - `--do_lower_case`: as the stats.json of the data job beside the
      first training shard records it; else true.

    Then checks that the model of the flags takes the data: the sequence
    length fits its position embeddings, and the first record's ids its
    vocabulary.

    Args:
        flags: the parsed flags, changed in place.

    Raises:
        UsageError: a flag disagrees with the inputs, or the model cannot
            take the data.
    """
    train_files = match_data_files("--train_data", flags.train_data, DATA_WRITER)
    first = data_sizes("--train_data", flags.train_data, train_files)
    if first is not None:
        _, sizes = first
        for name in ("max_seq_length", "max_predictions_per_seq"):
            setattr(flags, name, value_from_inputs(
                f"--{name}", getattr(flags, name), getattr(sizes, name),
                f"the records of --train_data={flags.train_data} have {name} "
                f"{getattr(sizes, name)}"))
        if flags.eval_data:
            check_eval_data_sizes(flags, sizes)
    if flags.max_seq_length is None:
        flags.max_seq_length = DEFAULT_MAX_SEQ_LENGTH
    if flags.max_predictions_per_seq is None:
        flags.max_predictions_per_seq = DEFAULT_MAX_PREDICTIONS_PER_SEQ
    if flags.vocab_file:
        tokens = len(load_vocabulary(flags.vocab_file))
        flags.vocab_size = value_from_inputs(
            "--vocab_size", flags.vocab_size, tokens,
            f"--vocab_file={flags.vocab_file} has {tokens} tokens")
    stats_path, parameters = data_parameters(train_files)
    recorded = parameters.get("do_lower_case")
    flags.do_lower_case = value_from_inputs(
        "--do_lower_case", flags.do_lower_case, recorded,
        f"the data's {stats_path} records do_lower_case={flag_text(recorded)}")
    if flags.do_lower_case is None:
        flags.do_lower_case = DEFAULT_LOWER_CASE
    config = bert_config(flags)
    default_size = config_from_name(flags.config).vocab_size
    if flags.vocab_file and default_size != config.vocab_size:
        LOGGER.info("vocab_size=%d, the tokens of --vocab_file=%s (--config=%s has %d).",
                    config.vocab_size, flags.vocab_file, flags.config, default_size)
    if config.max_position_embeddings < flags.max_seq_length:
        raise UsageError(
            f"--max_seq_length={flags.max_seq_length} is longer than the config's "
            f"max_position_embeddings={config.max_position_embeddings}; give a --config "
            "with more positions, or write the data with a shorter --max_seq_length."
        )
    if first is not None and first[1].stored_unmasked:
        masking_ids(flags, first[0])
    if first is not None and first[1].largest_token_id >= config.vocab_size:
        raise UsageError(
            f"{first[0]} (--train_data) holds the token id {first[1].largest_token_id}, "
            f"but the model has {config.vocab_size} ids ({vocabulary_source(flags)}); give "
            "the --vocab_file the data was written with."
        )


# The tokens that masking while reading (data written with --dynamic_masking)
# needs the ids of.
MASKING_TOKENS = {"cls_id": "[CLS]", "sep_id": "[SEP]", "mask_id": "[MASK]"}


def masking_ids(flags, path=None):
    """The ids that masking while reading takes from `--vocab_file`, and
    the share of tokens to predict that the data's stats.json records (the
    keyword arguments of `tfnlp.data.pretraining_dataset`); `{}` without
    a vocabulary.

    Args:
        flags: the parsed flags.
        path: a record stored unmasked, for the message: then a vocabulary
            that gives the ids is required.

    Raises:
        UsageError: `path` is given and `--vocab_file` is not, or lacks a
            token.
    """
    where = (f"the records of --train_data={flags.train_data} ({path}) are stored unmasked "
             f"(written with --dynamic_masking) and are masked while read")
    if not flags.vocab_file:
        if path is None:
            return {}
        raise UsageError(f"{where}, which takes the ids of {', '.join(MASKING_TOKENS.values())} "
                         "from the vocabulary; give --vocab_file, the one the data was "
                         "written with.")
    ids = {token: index for index, token in enumerate(load_vocabulary(flags.vocab_file))}
    missing = [token for token in MASKING_TOKENS.values() if token not in ids]
    if missing and path is not None:
        raise UsageError(f"{where}, but --vocab_file={flags.vocab_file} has no "
                         f"{', '.join(missing)}; give the vocabulary the data was written with.")
    _, parameters = data_parameters(match_data_files("--train_data", flags.train_data,
                                                     DATA_WRITER))
    share = parameters.get("masked_lm_prob")
    return {"vocab_size": flags.vocab_size,
            **({"masked_lm_prob": share} if isinstance(share, float) else {}),
            **{name: ids[token] for name, token in MASKING_TOKENS.items() if token in ids}}


def data_parameters(train_files):
    """`(path, parameters)`: the stats.json of the data job beside the first
    training shard, and the job's parameters it records (`{}` without
    it)."""
    path = os.path.join(os.path.dirname(train_files[0]), STATS_FILE)
    stats = read_json(path, {})
    parameters = stats.get("parameters") if isinstance(stats, dict) else None
    return path, parameters if isinstance(parameters, dict) else {}


def data_sizes(flag, patterns, files):
    """`(path, RecordSizes)` of the first record of a data flag's files;
    None when they are empty.

    Raises:
        UsageError: the record is not a pretraining record.
    """
    first = first_data_record(files)
    if first is None:
        return None
    path, record = first
    try:
        return path, pretraining_schema.record_sizes(record)
    except ValueError as error:
        raise UsageError(f"{flag}={patterns}: {path} does not hold the pretraining records "
                         f"of `python -m {DATA_WRITER}`: {error}.") from None


def check_eval_data_sizes(flags, train_sizes):
    """Raises `UsageError` unless `--eval_data`'s records have the lengths
    of the training records."""
    eval_files = match_data_files("--eval_data", flags.eval_data, DATA_WRITER)
    first = data_sizes("--eval_data", flags.eval_data, eval_files)
    if first is None:
        return
    path, sizes = first
    lengths = (sizes.max_seq_length, sizes.max_predictions_per_seq)
    if lengths != (train_sizes.max_seq_length, train_sizes.max_predictions_per_seq):
        raise UsageError(
            f"The records of --eval_data={flags.eval_data} ({path}) have max_seq_length "
            f"{lengths[0]} and max_predictions_per_seq {lengths[1]}, those of --train_data "
            f"{train_sizes.max_seq_length} and {train_sizes.max_predictions_per_seq}; write "
            f"both with the same lengths (python -m {DATA_WRITER})."
        )


def vocabulary_source(flags):
    """Where the model's vocab_size comes from, for the messages."""
    if flags.vocab_file:
        return f"the tokens of --vocab_file={flags.vocab_file}"
    if flags.vocab_size is not None:
        return f"--vocab_size={flags.vocab_size}"
    return f"the vocab_size of --config={flags.config}"


def bert_config(flags):
    """The `BertConfig` of `--config` with the flags' overrides
    (`--vocab_size`, `--num_layers` and the dropouts)."""
    overrides = {
        name: getattr(flags, name)
        for name in ("vocab_size", "num_layers", "hidden_dropout", "attention_dropout")
        if getattr(flags, name) is not None
    }
    return config_from_name(flags.config, overrides)
