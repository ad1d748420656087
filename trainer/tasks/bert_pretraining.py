"""BERT pretraining (masked LM and next sentence): the "pretraining" task.

Its flags and their derivation from the inputs, the data and model of a
run (`tfnlp.models.BertPretrainingModel` on the TFRecords of `python -m
pipelines.pretraining_data`), the loop-level task, `run` and the export.
"""

import logging
import math
import os

import tensorflow as tf

from tfnlp.command_line import (
    ArgumentParser,
    UsageError,
    add_boolean_flag,
    check_input_file,
)
from tfnlp.data import pretraining_dataset, pretraining_schema
from tfnlp.data.file_names import STATS_FILE
from tfnlp.losses.pretraining_losses import MASKED_LM_DENOMINATOR_EPSILON, pretraining_loss
from tfnlp.models import BertEncoder
from tfnlp.text import load_vocabulary
from trainer import optimization, runtime, summaries
from trainer.bert_models import (
    build_model,
    check_bert_config_flag,
    config_from_name,
    export_bert_run,
    export_trained_model,
)
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
    add_task_flag,
    add_train_steps_flag,
    check_counts,
    check_output_flags,
    check_tfrecord_flag,
    first_data_record,
    flag_text,
    match_data_files,
    optimizer_from_flags,
    value_from_inputs,
)
from trainer.tasks.registry import TaskEntry, register_task
from trainer.training_loop import evaluate

LOGGER = logging.getLogger("trainer.pretrain")

DATA_WRITER = "pipelines.pretraining_data"
# The lengths and lower-casing when neither the flags nor the data say.
DEFAULT_MAX_SEQ_LENGTH = 128
DEFAULT_MAX_PREDICTIONS_PER_SEQ = 20
DEFAULT_LOWER_CASE = True
# The names of this task (`--task`); a run's serving record has "model": "pretraining".
TASK_NAMES = ("pretraining",)
# The tokens that masking while reading (data written with --dynamic_masking)
# needs the ids of.
MASKING_TOKENS = {"cls_id": "[CLS]", "sep_id": "[SEP]", "mask_id": "[MASK]"}
# Records read to find a short fixed example for the attention pictures.
FIXED_EXAMPLE_CANDIDATES = 256
# The metrics the HParams tab compares runs by: (summary folder, tag).
HPARAMS_METRICS = tuple(
    (group, tag) for group in ("eval", "train")
    for tag in ("loss", "mlm_accuracy", "nsp_accuracy", "mlm_perplexity"))


def pretraining_parser():
    """The `argparse` parser of the pretraining flags."""
    parser = ArgumentParser(
        prog="python -m trainer.pretrain",
        description="BERT masked-LM and next-sentence pretraining on tf.distribute.",
        allow_abbrev=False,
    )
    add_task_flag(parser, TASK_NAMES)
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


def data_files(flags, training):
    """The shards of `--train_data` (training) or `--eval_data`."""
    flag = "train_data" if training else "eval_data"
    return match_data_files(f"--{flag}", getattr(flags, flag), "pipelines.pretraining_data")


def dataset_function(flags, global_batch_size, training, seed=None):
    """The `distribute_datasets_from_function` input function of the
    training (`--train_data`) or evaluation data (`--eval_data`).

    The dataset is built per input pipeline (one per worker) from
    `InputContext`, with batches of `global_batch_size / replicas`. With at
    least as many files as pipelines each pipeline reads its own files;
    otherwise every pipeline reads all files and keeps every N-th batch
    (with the same `--seed`, the global batches are then those of a single
    replica).
    """
    files = data_files(flags, training)
    masking = masking_ids(flags)

    def dataset_fn(input_context):
        batch_size = input_context.get_per_replica_batch_size(global_batch_size)
        pipelines = input_context.num_input_pipelines
        pipeline = input_context.input_pipeline_id
        shard_files = pipelines > 1 and len(files) >= pipelines
        dataset = pretraining_dataset(
            files[pipeline::pipelines] if shard_files else files,
            batch_size=batch_size,
            max_seq_length=flags.max_seq_length,
            max_predictions_per_seq=flags.max_predictions_per_seq,
            shuffle=training,
            shuffle_buffer=flags.shuffle_buffer,
            seed=flags.seed if seed is None else seed,
            repeat=True,
            drop_remainder=True,
            **masking,
        )
        if pipelines > 1 and not shard_files:
            dataset = dataset.shard(pipelines, pipeline)
        return dataset

    return dataset_fn


def fixed_example(flags):
    """The example of the attention pictures and masked-LM samples: the
    first record of `patterns` whose real tokens all fit in a picture
    (`summaries.MAX_PICTURE_TOKENS`) among the first 256, else the
    shortest of them."""
    dataset = pretraining_dataset(
        data_files(flags, training=not flags.eval_data)[:1],
        batch_size=1,
        max_seq_length=flags.max_seq_length,
        max_predictions_per_seq=flags.max_predictions_per_seq,
        shuffle=False,
        **masking_ids(flags),
    )
    shortest, shortest_length = None, None
    for record in dataset.take(FIXED_EXAMPLE_CANDIDATES):
        length = int(record["input_mask"].numpy().sum())
        if shortest is None or length < shortest_length:
            shortest, shortest_length = record, length
        if length <= summaries.MAX_PICTURE_TOKENS:
            break
    return {name: value.numpy() for name, value in shortest.items()}


def sample_writer(flags, model, run):
    """The `samples` callback of the training loop: attention pictures and
    masked-LM predictions of a fixed example, or None (not the chief, no
    `--attention_images_every_steps`, or a TPU, whose variables the host
    cannot run eagerly)."""
    if not (run.chief and flags.attention_images_every_steps and flags.strategy != "tpu"):
        return None
    example = fixed_example(flags)
    vocabulary = load_vocabulary(flags.vocab_file) if flags.vocab_file else None
    return summaries.sample_writer(
        summaries.AttentionProbe(model.encoder, example, vocabulary),
        summaries.MaskedLmSamples(model, example, vocabulary),
    )


def serving_record(flags):
    """What `trainer.export` needs besides the checkpoints."""
    record = {"model": "pretraining", "sequence_length": flags.max_seq_length,
              "lower_case": flags.do_lower_case}
    if flags.vocab_file:
        record["vocab_file"] = os.path.abspath(flags.vocab_file)
    return record


def _build(model, optimizer, flags):
    """Creates the model's and the optimizer's variables (for restoring)."""
    batch = {
        name: tf.zeros([1, length], dtype)
        for name, length, dtype in (
            ("input_ids", flags.max_seq_length, tf.int32),
            ("input_mask", flags.max_seq_length, tf.int32),
            ("segment_ids", flags.max_seq_length, tf.int32),
            ("masked_lm_positions", flags.max_predictions_per_seq, tf.int32),
            ("masked_lm_ids", flags.max_predictions_per_seq, tf.int32),
            ("masked_lm_weights", flags.max_predictions_per_seq, tf.float32),
            ("next_sentence_labels", 1, tf.int32),
        )
    }
    model(batch, training=False)
    if flags.weight_decay:
        inner = getattr(optimizer, "inner_optimizer", optimizer)
        inner.exclude_from_weight_decay(var_list=optimization.no_decay_variables(model))
    optimizer.build(model.trainable_variables)


class BertPretrainingTask:
    """The loss, step sums and metrics of a `BertPretrainingModel`.

    As in google-research/bert the masked-LM loss is `sum(weights *
    cross_entropy) / sum(weights)` over the whole global batch and the
    next-sentence loss is the mean over the global batch; the total is their
    sum. `batch_totals` gives the masked-LM weight and the examples of a
    replica's share of the batch; the loop sums them over the replicas, and
    `loss` divides this replica's weighted sums by those global totals.

    Args:
        model: the `tfnlp.models.BertPretrainingModel` (the batch dict of
            `tfnlp.data.pretraining_dataset` in; `mlm_logits` and
            `nsp_logits` out).

    Example:

    >>> from tfnlp.models import BertConfig, BertEncoder, BertPretrainingModel
    >>> encoder = BertEncoder(BertConfig.preset("tiny", num_layers=1, vocab_size=50))
    >>> task = BertPretrainingTask(BertPretrainingModel(encoder))
    >>> task.results(dict.fromkeys(task.sum_names, 0.0))["mlm_accuracy"]
    0.0

    References:
        - [Devlin et al., 2019. BERT: Pre-training of Deep Bidirectional
          Transformers for Language Understanding](https://arxiv.org/abs/1810.04805)
    """

    sum_names = (
        "mlm_loss_sum", "mlm_weight_sum", "mlm_correct", "nsp_loss_sum",
        "nsp_correct", "examples", "tokens",
    )

    def __init__(self, model):
        self.model = model

    def forward(self, batch, training=None):
        """The model's outputs on a pretraining batch."""
        return self.model(batch, training=training)

    def batch_totals(self, batch):
        """The counts whose global sums normalise the loss."""
        return {
            "mlm_weight": tf.reduce_sum(tf.cast(batch["masked_lm_weights"], tf.float32)),
            "examples": tf.cast(tf.shape(batch["input_ids"])[0], tf.float32),
        }

    def loss(self, batch, outputs, totals):
        """This replica's share of the global batch's loss."""
        return pretraining_loss(
            batch,
            outputs,
            global_batch_size=totals["examples"],
            masked_lm_denominator=totals["mlm_weight"] + MASKED_LM_DENOMINATOR_EPSILON,
        )["loss"]

    def sums(self, batch, outputs):
        """The summed losses and counts of one (micro-)batch, in float32:
        `mlm_loss_sum` (sum of weight * cross-entropy), `mlm_weight_sum`,
        `mlm_correct` (weighted correct predictions), `nsp_loss_sum`,
        `nsp_correct`, `examples` and `tokens` (the sum of `input_mask`)."""
        mlm_logits = tf.cast(outputs["mlm_logits"], tf.float32)
        nsp_logits = tf.cast(outputs["nsp_logits"], tf.float32)
        labels = tf.cast(batch["masked_lm_ids"], tf.int32)
        weights = tf.cast(batch["masked_lm_weights"], tf.float32)
        mlm_cross_entropy = tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=mlm_logits
        )
        mlm_predictions = tf.argmax(mlm_logits, axis=-1, output_type=tf.int32)
        nsp_labels = tf.reshape(tf.cast(batch["next_sentence_labels"], tf.int32), [-1])
        nsp_cross_entropy = tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=nsp_labels, logits=nsp_logits
        )
        nsp_predictions = tf.argmax(nsp_logits, axis=-1, output_type=tf.int32)
        return {
            "mlm_loss_sum": tf.reduce_sum(weights * mlm_cross_entropy),
            "mlm_weight_sum": tf.reduce_sum(weights),
            "mlm_correct": tf.reduce_sum(
                weights * tf.cast(tf.equal(mlm_predictions, labels), tf.float32)
            ),
            "nsp_loss_sum": tf.reduce_sum(nsp_cross_entropy),
            "nsp_correct": tf.reduce_sum(
                tf.cast(tf.equal(nsp_predictions, nsp_labels), tf.float32)
            ),
            "examples": tf.cast(tf.shape(nsp_labels)[0], tf.float32),
            "tokens": tf.reduce_sum(tf.cast(batch["input_mask"], tf.float32)),
        }

    @staticmethod
    def results(totals):
        """`loss`, `mlm_loss`, `nsp_loss`, `mlm_accuracy`, `nsp_accuracy` and
        `mlm_perplexity` (`exp(mlm_loss)`) of sums added up over steps."""
        mlm_loss = totals["mlm_loss_sum"] / (
            totals["mlm_weight_sum"] + MASKED_LM_DENOMINATOR_EPSILON)
        nsp_loss = totals["nsp_loss_sum"] / max(totals["examples"], 1.0)
        return {
            "loss": mlm_loss + nsp_loss,
            "mlm_loss": mlm_loss,
            "nsp_loss": nsp_loss,
            "mlm_accuracy": totals["mlm_correct"] / max(totals["mlm_weight_sum"], 1e-9),
            "nsp_accuracy": totals["nsp_correct"] / max(totals["examples"], 1.0),
            "mlm_perplexity": math.exp(min(mlm_loss, 80.0)),
        }

    @staticmethod
    def step_record(sums):
        """The per-step losses of `train_log.jsonl`."""
        return {
            "mlm_loss": sums["mlm_loss_sum"] / (
                sums["mlm_weight_sum"] + MASKED_LM_DENOMINATOR_EPSILON),
            "nsp_loss": sums["nsp_loss_sum"] / max(sums["examples"], 1.0),
        }


def run(flags):
    """Trains as the flags say; returns the final step's loss.

        python -m trainer.pretrain --train_data='DATA/pretraining-*' \\
            --model_dir=RUN --config=base --global_batch_size=256 \\
            --train_steps=1000000 --learning_rate=1e-4 --warmup_steps=10000

    (= `python -m trainer.train --task=pretraining ...`) trains
    `tfnlp.models.BertPretrainingModel` on the TFRecords of `python -m
    pipelines.pretraining_data`. It reads the data with
    `tfnlp.data.pretraining_dataset` and trains with the custom loop of
    `trainer.training_loop` (see there why not `keras.Model.fit`). The
    inputs decide the flags they can: `--max_seq_length` and
    `--max_predictions_per_seq` are the lengths of the records,
    `--vocab_size` the tokens of `--vocab_file`, `--do_lower_case` what the
    data's stats.json records; a flag given with another value is refused
    before anything is written (`set_flags_from_inputs`). A NaN or infinite
    loss stops the run with `FloatingPointError` naming the step (the last
    checkpoint is kept).

    Writes into `--model_dir`:

    - `ckpt-STEP.*` checkpoints (model, optimizer, step and, on one device,
      the input iterator's position) every `--checkpoint_every_steps` and at
      the end. A run started again with the same command restores the
      latest one and goes on to `--train_steps`, so a killed job is resumed
      by re-running it.
    - `tensorboard/train/` and `tensorboard/eval/` TensorBoard logs: losses,
      accuracies, perplexity, learning rate, gradient norm, examples/s and
      tokens/s (real tokens, the sum of `input_mask`); every
      `--attention_images_every_steps`, the attention of one fixed example
      (an image a layer, a panel a head, its tokens on the axes: WordPieces
      given `--vocab_file`, ids otherwise) and the masked-LM predictions
      for it (text); with `--profile_steps`, a profiler trace
      (`tensorboard/train/plugins/profile/`). The hyperparameters (every
      flag and the model config) go into `tensorboard/` itself, for the
      HParams tab (`trainer.summaries.write_hparams`).
    - `train_log.jsonl`: one JSON line per step (`step`, `loss`,
      `mlm_loss`, `nsp_loss`, `learning_rate`, `gradient_norm`), and
      `eval_log.jsonl`.
    - `config.json`: the `BertConfig`; `serving.json` (`serving_record`):
      what `python -m trainer.export` needs besides the checkpoints
      (`--vocab_file`, `--do_lower_case`, `--max_seq_length`).
    - with `--export_dir`, the next version `EXPORT_DIR/<N>/` of a
      SavedModel (`tfnlp.export`): the encoder (`serving_default` on text,
      `encode_ids`) and, given `--vocab_file`, fill-mask (`fill_mask`,
      `fill_mask_ids`). Without `--vocab_file` only `encode_ids` (also as
      `serving_default`).
    """
    return runtime.train_run(flags, lambda run: build_training(flags, run), "Pretraining")


def build_training(flags, run):
    """The model, optimizer, task, data, evaluation and export of a
    pretraining run (`runtime.TrainingParts`), in the strategy's scope."""
    runtime.check_global_batch_size(flags.global_batch_size, run.replicas,
                                    flags.gradient_accumulation_steps)
    config = bert_config(flags)
    model = build_model("pretraining", BertEncoder(config))
    optimizer = optimizer_from_flags(flags)
    _build(model, optimizer, flags)  # Every variable exists before restoring.
    evaluator = None
    if flags.eval_data:
        eval_dataset = run.strategy.distribute_datasets_from_function(
            dataset_function(flags, flags.global_batch_size, training=False))
        evaluator = lambda loop, writers, step: (  # noqa: E731
            lambda: evaluate(loop, iter(eval_dataset), flags.eval_steps))
    return runtime.TrainingParts(
        model=model,
        optimizer=optimizer,
        task=BertPretrainingTask(model),
        dataset_function=lambda seed: dataset_function(
            flags, flags.global_batch_size, training=True, seed=seed),
        config=config.to_dict(),
        serving_record=serving_record(flags),
        model_settings=config.to_dict(),
        hparams_metrics=HPARAMS_METRICS,
        evaluator=evaluator,
        samples=sample_writer(flags, model, run),
        images_every_steps=flags.attention_images_every_steps,
        export=lambda run: runtime.export_at_end(
            run, export_trained_model, model, flags.export_dir,
            vocab_file=flags.vocab_file or None, lower_case=flags.do_lower_case,
            sequence_length=flags.max_seq_length),
    )


TASK = register_task(TaskEntry(
    names=TASK_NAMES,
    summary="BERT masked-LM and next-sentence pretraining.",
    parse_flags=parse_flags, check_paths=check_paths, run=run,
    export_run=export_bert_run,
    command="pretrain",
))
