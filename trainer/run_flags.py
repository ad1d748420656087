"""The command-line flags every trainer shares: the strategy, precision and
XLA flags, the wall-clock budget, the optimizer and output flags of the
trainers on the custom loop, the positivity checks of step counts, and the
check of the TFRecord shards a data flag names."""

import argparse
import contextlib
import logging

import tensorflow as tf

from tfnlp.command_line import (
    UsageError,
    add_boolean_flag,
    check_input_file,
    check_output_directory,
    mode_help,
)
from tfnlp.data import tfrecord_files
from tfnlp.data.file_patterns import match_patterns
from trainer import length_buckets, optimization, run_files
from trainer.distribution import STRATEGIES
from trainer.optimization import OPTIMIZERS, SCHEDULES
from trainer.runtime import MIXED_PRECISION


def add_task_flag(group, names):
    """Adds `--task`, the registered task the run trains (`trainer.train`):
    one of `names`, the first by default."""
    group.add_argument("--task", choices=names, default=names[0],
                       help="The task to train (tfnlp train --task=NAME).")


def add_model_dir_flag(group, contents="Checkpoints, TensorBoard logs and train_log.jsonl."):
    """Adds every trainer's required `--model_dir`; `contents`, its help,
    says what the run writes there."""
    group.add_argument("--model_dir", required=True, help=contents)


def add_export_dir_flag(group, model, kind="SavedModel"):
    """Adds `--export_dir` (default: no export): "Write `model` as a `kind`
    here."."""
    group.add_argument("--export_dir", default="", help=f"Write {model} as a {kind} here.")


def add_seed_flag(group, weights="the initial weights"):
    """Adds `--seed` (default 0), which seeds `weights`, dropout and the
    data order."""
    group.add_argument("--seed", type=int, default=0,
                       help=f"Seeds {weights}, dropout and the data order.")


def add_global_batch_size_flag(group, items="Examples", default=None):
    """Adds `--global_batch_size`: `items` per step over all replicas;
    required when `default` is None."""
    group.add_argument("--global_batch_size", type=int, default=default,
                       required=default is None,
                       help=f"{items} per step over all replicas.")


def add_train_steps_flag(group, help, default=None):
    """Adds `--train_steps`, with `help`; required when `default` is None."""
    group.add_argument("--train_steps", type=int, default=default, required=default is None,
                       help=help)


def add_shard_data_flags(group, writer, evaluation=""):
    """Adds `--train_data` (required) and `--eval_data` (default: none):
    comma-separated globs of the TFRecord shards of `python -m writer`;
    `evaluation`, when given, says what an evaluation does with them."""
    group.add_argument("--train_data", required=True,
                       help=f"Comma-separated globs of the training shards of "
                            f"python -m {writer}.")
    group.add_argument("--eval_data", default="",
                       help="Comma-separated globs of the validation shards"
                            + (f"; {evaluation}." if evaluation else "."))


def add_shuffle_buffer_flag(group, items="Records", default=10_000):
    """Adds `--shuffle_buffer`: how many `items` the training data's
    shuffle buffer holds."""
    group.add_argument("--shuffle_buffer", type=int, default=default,
                       help=f"{items} in the training data's shuffle buffer.")


def add_adam_beta_2_flag(group, default):
    """Adds `--adam_beta_2`, `default` when not given."""
    group.add_argument("--adam_beta_2", type=float, default=default,
                       help="Adam's beta_2, the decay of its squared-gradient average.")


def add_learning_rate_flag(group, default):
    """Adds `--learning_rate`, the peak after the warmup."""
    group.add_argument("--learning_rate", type=float, default=default,
                       help="The peak learning rate (after the warmup).")


def add_clip_norm_flag(group):
    """Adds `--clip_norm` (default 1.0; 0: no clipping)."""
    group.add_argument("--clip_norm", type=float, default=1.0,
                       help="Clip the gradient to this global norm; 0 for none.")


def add_keep_checkpoints_flag(group, default=5, kept_apart=""):
    """Adds `--keep_checkpoints`; `kept_apart`, a parenthesis of the help,
    says where a checkpoint that is not counted goes."""
    group.add_argument("--keep_checkpoints", type=int, default=default,
                       help="How many of the latest checkpoints are kept in --model_dir"
                            + (f" ({kept_apart})." if kept_apart else "."))


def add_preset_config_flag(group, presets, arguments, default="tiny", mode=""):
    """Adds `--config`: a preset of `presets` (their names, as the help
    lists them) or a JSON file of `arguments`, which the model flags after
    it override; `mode`, when given, is the case it is for ("BiLSTM")."""
    group.add_argument("--config", default=default,
                       help=mode_help(mode, f"a preset ({presets}) or a JSON file of "
                                            f"{arguments}; the flags below override it."))


def add_bert_config_flag(group, default, mode="", note=""):
    """Adds the BERT trainers' `--config`: a BertConfig preset or JSON
    file; `mode` says when it applies, `note` what else the help says."""
    group.add_argument("--config", default=default,
                       help=mode_help(mode, "a BertConfig preset (tiny, mini, small, base, "
                                            "large) or a BertConfig JSON file")
                            + (f"; {note}." if note else "."))


def add_bert_override_flags(group, num_layers_default="the config's"):
    """Adds the BERT trainers' `--num_layers` (default: `num_layers_default`,
    as its help says), `--hidden_dropout` and `--attention_dropout` (default:
    the config's)."""
    group.add_argument("--num_layers", type=int, default=None,
                       help=f"The number of Transformer layers (default: "
                            f"{num_layers_default}).")
    group.add_argument("--hidden_dropout", type=float, default=None,
                       help="The dropout rate of the hidden layers (default: the config's).")
    group.add_argument("--attention_dropout", type=float, default=None,
                       help="The dropout rate of the attention probabilities (default: the "
                            "config's).")


def add_checkpoint_flag(group, best="the best", mode=""):
    """Adds `--checkpoint`, a checkpoint prefix of the run read (default:
    `best`, else the latest); `mode` says when it applies."""
    group.add_argument("--checkpoint", default="",
                       help=mode_help(mode, f"a checkpoint prefix of the run (default: {best}, "
                                            "else the latest)."))


def add_bucket_boundaries_flag(group, batches, empty):
    """Adds `--bucket_boundaries` (default
    `length_buckets.DEFAULT_BOUNDARIES`): the widths of the length buckets
    of `batches` ("a training batch holds texts"); `empty` says how batches
    are made without them."""
    group.add_argument("--bucket_boundaries", default=length_buckets.DEFAULT_BOUNDARIES,
                       help=f"Length buckets: {batches} of one bucket "
                            "of these widths (and --max_seq_length), and each batch is "
                            "padded to the narrowest width that holds its longest one; "
                            f"empty: {empty}.")


def add_distribution_flags(group, jit_compile=True):
    """Adds `--strategy`, `--tpu`, `--mixed_precision` (and `--jit_compile`)."""
    group.add_argument("--strategy", choices=STRATEGIES, default="default",
                       help="How training is distributed: default (one device; the "
                            "default), mirrored (this machine's GPUs, else its CPUs), "
                            "multi_worker (the cluster in TF_CONFIG) or tpu (--tpu).")
    group.add_argument("--tpu", default="",
                       help="The TPU name or address (--strategy=tpu); default: a TPU "
                            "VM's own TPU.")
    group.add_argument("--mixed_precision", choices=MIXED_PRECISION, default=None,
                       help="Compute in bfloat16 or float16 with float32 weights (Keras' "
                            "mixed_ policy; float16 adds loss scaling); default: float32.")
    if jit_compile:
        add_boolean_flag(group, "jit_compile", False, "Compile the replica step with XLA.")


def add_stop_time_flag(group):
    """Adds `--stop_time_hours` (fairseq's name): a wall-clock budget (the
    trainers on `training_loop.train`)."""
    group.add_argument(
        "--stop_time_hours", type=float, default=0.0,
        help="Stop after the first step that ends this many hours after training "
             "began (compilation and evaluations count), evaluating, saving and "
             "exporting as at --train_steps; 0: no limit. The learning-rate "
             "schedule still runs to --train_steps.")


def add_loop_training_flags(group):
    """Adds the training flags of the trainers on `training_loop.train`: the
    optimizer (`--learning_rate`, the peak after `--warmup_steps`;
    `--optimizer`, `--weight_decay`, `--clip_norm`), `--gradient_accumulation_steps`,
    `--ema_momentum`, the distribution flags and `--stop_time_hours`. The
    defaults are BERT pretraining's; a trainer changes them with
    `parser.set_defaults`."""
    add_learning_rate_flag(group, 1e-4)
    group.add_argument("--warmup_steps", type=int, default=10_000,
                       help="Steps over which the learning rate rises linearly from 0 to "
                            "--learning_rate.")
    add_optimizer_flags(group)
    add_clip_norm_flag(group)
    group.add_argument("--gradient_accumulation_steps", type=int, default=1,
                       help="Split each replica's batch into this many micro-batches.")
    add_ema_flag(group)
    add_distribution_flags(group)
    add_stop_time_flag(group)


def ema_momentum(value):
    """argparse type: a momentum in [0, 1) (0: no moving average)."""
    try:
        momentum = float(value)
    except ValueError:
        momentum = -1.0
    if not 0 <= momentum < 1:
        raise argparse.ArgumentTypeError(
            f"expected a momentum in [0, 1), e.g. 0.999, or 0 for none; not {value!r}")
    return momentum


def add_ema_flag(group):
    """Adds `--ema_momentum`: the optimizer keeps a moving average of the
    weights, which the evaluations and the export use
    (`trainer.optimization.averaged_weights`)."""
    group.add_argument("--ema_momentum", type=ema_momentum, default=0.0,
                       help="Keep an exponential moving average of the weights with "
                            "this momentum (e.g. 0.999); the evaluations (and a best "
                            "checkpoint) and the export use the averaged weights. 0: none.")


def add_optimizer_flags(group):
    """Adds `--optimizer` and `--weight_decay` (every trainer's)."""
    group.add_argument("--optimizer", choices=OPTIMIZERS, default="adamw",
                       help="adamw (Adam with decoupled weight decay), lamb (its "
                            "layer-wise trust ratio, for large batches) or muon "
                            "(orthogonalized momentum for kernels, AdamW for the rest).")
    group.add_argument("--weight_decay", type=float, default=0.01,
                       help="The decoupled weight-decay rate, LayerNorm and bias "
                            "variables excluded; 0 for none.")


def add_schedule_flag(group, default):
    """Adds `--learning_rate_schedule`, `default` when not given."""
    group.add_argument("--learning_rate_schedule", choices=SCHEDULES, default=default,
                       help="After the warmup: linear (to 0 at --train_steps), "
                            "inverse_sqrt (as 1/sqrt(step), the Transformer's) or cosine "
                            "(to a tenth of the peak at --train_steps).")


def add_loop_output_flags(group):
    """Adds when the trainers on `training_loop.train` save, log, evaluate and
    profile: `--checkpoint_every_steps`, `--keep_checkpoints`,
    `--log_every_steps`, `--eval_every_steps` (default 0: only at the end),
    `--progress_every_seconds` and `--profile_steps`."""
    group.add_argument("--checkpoint_every_steps", type=int, default=1000,
                       help="Steps between checkpoints (0: only at the end).")
    add_keep_checkpoints_flag(group)
    group.add_argument("--log_every_steps", type=int, default=100,
                       help="Steps between TensorBoard scalars and log lines.")
    add_progress_flag(group)
    group.add_argument("--eval_every_steps", type=int, default=0,
                       help="Steps between evaluations (0: only at the end).")
    group.add_argument("--profile_steps", default="",
                       help="'START,END': trace these steps with the TF profiler.")


def non_negative_seconds(value):
    """argparse type: a number of seconds, at least 0."""
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:
        raise argparse.ArgumentTypeError(f"expected seconds, 0 or more, not {value!r}")
    return seconds


def add_progress_flag(group):
    """Adds `--progress_every_seconds`: how often a progress line is logged
    when the output is not a terminal."""
    group.add_argument("--progress_every_seconds", type=non_negative_seconds, default=30.0,
                       help="Seconds between progress lines (step/total, tokens/s, time "
                            "left) when stderr is not a terminal; on a terminal a "
                            "progress bar is redrawn instead.")


def check_counts(parser, flags, positive=(), non_negative=()):
    """Exits through `parser.error` unless each flag in `positive` is at least
    1 and each in `non_negative` at least 0."""
    for name in positive:
        if getattr(flags, name) < 1:
            parser.error(f"--{name} must be at least 1, got {getattr(flags, name)}.")
    for name in non_negative:
        if getattr(flags, name) < 0:
            parser.error(f"--{name} must not be negative, got {getattr(flags, name)}.")


def check_rates(parser, flags, names):
    """Exits through `parser.error` unless each flag in `names` that is set
    (not None) is in [0, 1): dropout and label-smoothing rates."""
    for name in names:
        value = getattr(flags, name)
        if value is not None and not 0 <= value < 1:
            parser.error(f"--{name} must be in [0, 1), got {value}.")


def check_config_flag(config, presets, file_description):
    """Raises `UsageError` unless `--config` is a preset or a file that can
    be read.

    Args:
        config: the flag's value.
        presets: the preset names.
        file_description: what the file holds, for the message.
    """
    if config not in presets:
        check_input_file("--config", config,
                         f"a preset ({', '.join(presets)}) or {file_description}")


def optimizer_from_flags(flags, model=None, **arguments):
    """`optimization.create_optimizer` with the loop training flags
    (`--optimizer`, `--learning_rate`, `--train_steps`,
    `--warmup_steps`, `--weight_decay`, `--mixed_precision`,
    `--ema_momentum`) and the
    trainer's own `arguments` (the schedule, the Adam moments)."""
    return optimization.create_optimizer(
        flags.optimizer,
        learning_rate=flags.learning_rate,
        train_steps=flags.train_steps,
        warmup_steps=flags.warmup_steps,
        weight_decay=flags.weight_decay,
        model=model,
        mixed_precision=flags.mixed_precision,
        ema_momentum=flags.ema_momentum,
        **arguments,
    )


def model_from_config_flag(model_class, config, **arguments):
    """The model of `--config=config`: a preset of `model_class.presets`
    (`from_preset`) or a JSON file of its constructor arguments, with
    `arguments` (what the other flags and the data decide) on top.

    Raises:
        UsageError: the file does not hold a JSON object.
    """
    if config in model_class.presets:
        return model_class.from_preset(config, **arguments)
    sizes = run_files.read_json(config)
    if not isinstance(sizes, dict):
        raise UsageError(
            f"--config={config!r} is neither a {model_class.__name__} preset "
            f"({', '.join(sorted(model_class.presets))}) nor a JSON file of its "
            'constructor arguments such as {"hidden_dim": 64, ...}.'
        )
    return model_class(**{**sizes, **arguments})


@contextlib.contextmanager
def _tensorflow_warnings_silenced():
    """Keeps TensorFlow's logger to errors (its deprecation warnings)."""
    logger = tf.get_logger()
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _first_record(path):
    """The first record of `path` (None if it is empty), read without
    starting TensorFlow's eager runtime, as `tf.data` would:
    `MultiWorkerMirroredStrategy`, created later, must configure the
    runtime's collective ops before it starts. TF1's `tf_record_iterator`
    reads the file alone."""
    options = tf.io.TFRecordOptions(tfrecord_files.file_compression(path, "auto"))
    with _tensorflow_warnings_silenced():  # Its deprecation warning is not the user's.
        return next(iter(tf.compat.v1.io.tf_record_iterator(path, options)), None)


def first_data_record(files):
    """`(path, record)`: the first record of the first non-empty file of
    `files`, read as `check_tfrecord_flag` reads it (before the eager
    runtime starts); None when every file is empty."""
    for path in files:
        record = _first_record(path)
        if record is not None:
            return path, record
    return None


def flag_text(value):
    """A flag's value as the command line spells it (booleans lower-case)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def value_from_inputs(flag, given, found, source):
    """The value of a flag that the inputs decide (a vocabulary's size, the
    data's sequence length): what they hold, which the flag, when given,
    must repeat.

    Args:
        flag: the flag, e.g. "--vocab_size".
        given: its value on the command line; None when it was left out.
        found: the value the inputs hold; None when they do not say.
        source: what holds `found`, for the message, e.g.
            "--vocab_file=vocab.txt has 2362 tokens".

    Returns:
        `found`, or `given` when the inputs do not say.

    Raises:
        UsageError: `given` and `found` disagree.
    """
    if found is None:
        return given
    if given is not None and given != found:
        raise UsageError(f"{flag}={flag_text(given)} but {source}; leave {flag} out, or "
                         f"give {flag_text(found)}.")
    return found


def check_run_flags(flags, writer):
    """Checks, before training, the paths of a trainer that reads TFRecords:
    `--train_data` and `--eval_data` (when given) with `check_tfrecord_flag`,
    then the output directories with `check_output_flags`.

    Args:
        flags: the parsed flags.
        writer: the module that writes the data shards, for the messages.

    Raises:
        UsageError: as `check_tfrecord_flag` and `check_output_directory`.
    """
    check_tfrecord_flag("--train_data", flags.train_data, writer)
    if flags.eval_data:
        check_tfrecord_flag("--eval_data", flags.eval_data, writer)
    check_output_flags(flags)


def check_output_flags(flags):
    """Checks that every trainer's `--model_dir` and `--export_dir` (when
    given) can be written.

    Raises:
        UsageError: as `check_output_directory`.
    """
    check_output_directory("--model_dir", flags.model_dir)
    if flags.export_dir:
        check_output_directory("--export_dir", flags.export_dir)


def match_data_files(flag, patterns, writer):
    """The sorted files of a data flag's comma-separated globs.

    Raises:
        FileNotFoundError: a glob matches no file; the message names it and
            the job that writes such shards (`python -m <writer>`).
    """
    return match_patterns(patterns, tf.io.gfile.glob, flag=flag,
                          expected=f"the TFRecord shards of `python -m {writer}`")


def check_tfrecord_flag(flag, patterns, writer):
    """Checks, before training, the shards that a data flag names.

    Reads the first record of the first file (a cheap check that a text
    file was not given instead); a file that is empty is not checked.

    Args:
        flag: the flag, e.g. "--train_data".
        patterns: its value, comma-separated globs.
        writer: the module that writes such shards, for the message
            ("pipelines.pretraining_data").

    Raises:
        UsageError: the globs match no file, or the first file is not a
            TFRecord file.
    """
    try:
        files = match_data_files(flag, patterns, writer)
    except FileNotFoundError as error:
        raise UsageError(str(error)) from error
    expected = f"comma-separated globs of the TFRecord shards of `python -m {writer}`"
    first = files[0]
    if tf.io.gfile.isdir(first):
        raise UsageError(f"{flag}={patterns} matches the directory {first}; expected "
                         f"{expected}. Glob the files in it, e.g. {first}/*.")
    try:
        _first_record(first)
    except tf.errors.DataLossError as error:
        raise UsageError(f"{flag}: {first} is not a TFRecord file (its first record is "
                         f"corrupt); expected {expected}. Check the glob.") from error
