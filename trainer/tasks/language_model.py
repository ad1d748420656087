"""The language-model task: a GPT-style decoder trained to predict each
next token (`python -m trainer.lm`, `tfnlp train --task=language_model`).

Its flags, model, data and evaluation, the loop-level `LanguageModelTask`,
the training run, and how a run is recorded, loaded and exported.
"""

import logging
import math
import os

import keras
import tensorflow as tf

from tfnlp.command_line import ArgumentParser, add_boolean_flag
from tfnlp.data import language_model_dataset, tfrecord_files
from tfnlp.data.language_model_schema import record_sequence_length
from tfnlp.export.language_model_signatures import LanguageModelSignatures
from tfnlp.export.saved_model import write_next_version
from tfnlp.layers import get_activation
from tfnlp.models.gpt import GPTCausalLM
from tfnlp.models.gpt.gpt_backbone import POSITION_ENCODINGS
from tfnlp.text import load_language_model_tokenizer
from tfnlp.visualization import markdown_table
from trainer import run_files, runtime
from trainer.checkpoints import BestCheckpoint, read_run_config, restore_run_model
from trainer.run_flags import (
    add_adam_beta_2_flag,
    add_export_dir_flag,
    add_global_batch_size_flag,
    add_loop_output_flags,
    add_loop_training_flags,
    add_model_dir_flag,
    add_preset_config_flag,
    add_schedule_flag,
    add_seed_flag,
    add_shard_data_flags,
    add_shuffle_buffer_flag,
    add_task_flag,
    add_train_steps_flag,
    check_config_flag,
    check_counts,
    check_rates,
    check_run_flags,
    match_data_files,
    model_from_config_flag,
    optimizer_from_flags,
)
from trainer.tasks.registry import TaskEntry, register_task
from trainer.training_loop import evaluate

LOGGER = logging.getLogger("trainer.lm")

# The task's names (`--task`); the first is what a run's serving record says.
NAMES = ("language_model",)
RUN_KIND = NAMES[0]
# The decoder families of `--model`.
MODELS = {"gpt": GPTCausalLM}
DATA_WRITER = "pipelines.lm_data"
# The model's constructor arguments that flags of the same names set.
MODEL_OPTIONS = ("position_encoding", "activation", "query_key_norm", "zero_output_projections",
                 "embedding_shortcuts", "tie_word_embeddings", "logit_soft_cap")
# The prompts whose continuations are logged at each evaluation.
DEFAULT_SAMPLE_PROMPTS = ("\n", "The ", "ROMEO:")
# The metrics the HParams tab compares runs by: (run, scalar name).
HPARAMS_METRICS = (
    ("eval", "loss"), ("eval", "bits_per_character"), ("eval", "perplexity"),
    ("train", "loss"), ("eval", "token_accuracy"),
)
SAMPLE_COLUMNS = ("prompt", "continuation")
TOKEN_IDS = "token_ids"
CHARACTER_COUNT = "character_count"
# What an export's `generate` signature does when a request leaves an option
# out.
GENERATION_DEFAULTS = {"temperature": 0.8, "top_k": 0, "top_p": 0.9, "max_new_tokens": 256}
# The most new tokens a request may ask for, as a share of the model's
# context (the rest holds the prompt), and at most.
NEW_TOKENS_SHARE = 0.75
MAX_NEW_TOKENS = 1024

# ---------------------------------------------------------------------------
# The command line


def _preset_names(models):
    """`"gpt: nano, small, ..."`, the presets of each model."""
    return "; ".join(f"{name}: {', '.join(sorted(model_class.presets))}"
                     for name, model_class in models.items())


def language_model_parser():
    """The `argparse` parser of the language-model trainer's flags."""
    parser = ArgumentParser(
        prog="python -m trainer.lm",
        description="Trains a decoder-only (GPT-style) language model on tf.distribute.",
        allow_abbrev=False,
    )
    add_task_flag(parser, NAMES)
    data = parser.add_argument_group("data")
    add_shard_data_flags(data, DATA_WRITER,
                         "all of them are evaluated (loss, perplexity, bits per character) "
                         "at every evaluation")
    data.add_argument("--tokenizer_dir", default="",
                      help="Where the data job wrote its tokenizer (default: the folder "
                           "of the first training shard).")
    add_global_batch_size_flag(data, "Windows of sequence_length + 1 tokens", default=64)
    add_shuffle_buffer_flag(data, "Windows")
    add_seed_flag(data)

    model = parser.add_argument_group("model")
    add_model_dir_flag(model)
    model.add_argument("--model", choices=MODELS, default=next(iter(MODELS)),
                       help="The decoder family.")
    add_preset_config_flag(model, _preset_names(MODELS), "the model's constructor arguments")
    model.add_argument("--dropout", type=float, default=0.1,
                       help="Dropout of the embeddings, the attention weights and each "
                            "sublayer's output.")
    model.add_argument("--position_encoding", choices=POSITION_ENCODINGS, default=None,
                       help="learned (a table of positions added to the embeddings, "
                            "GPT-2's) or rotary (queries and keys turned by their "
                            "positions); default: the --config's.")
    model.add_argument("--activation", default=None,
                       help="The feed-forward activation (gelu_approximate, GPT-2's; "
                            "relu_squared; gelu; relu); default: the --config's.")
    add_boolean_flag(model, "query_key_norm", None,
                     "RMS-normalize each head's queries and keys (QK-norm); default: "
                     "the --config's.")
    add_boolean_flag(model, "zero_output_projections", None,
                     "Start the kernels that write into the residual stream at zero; "
                     "default: the --config's.")
    add_boolean_flag(model, "embedding_shortcuts", None,
                     "Feed every block a learned mix of its input and the embeddings; "
                     "default: the --config's.")
    add_boolean_flag(model, "tie_word_embeddings", None,
                     "Project to the vocabulary with the token embedding "
                     "(--notie_word_embeddings: an output embedding of its own); "
                     "default: the --config's (tied).")
    model.add_argument("--logit_soft_cap", type=float, default=None,
                       help="Squash the logits into (-cap, cap) with cap * tanh(logits / "
                            "cap); default: the --config's (none).")

    training = parser.add_argument_group("training")
    add_train_steps_flag(training, "Training steps, of --global_batch_size windows each.")
    add_schedule_flag(training, "cosine")
    add_adam_beta_2_flag(training, 0.99)
    add_loop_training_flags(training)

    outputs = parser.add_argument_group("checkpoints, evaluation, samples, logs and export")
    add_loop_output_flags(outputs)
    outputs.add_argument("--sample_prompts", nargs="*", default=list(DEFAULT_SAMPLE_PROMPTS),
                         help="Prompts whose sampled continuations are logged (Text tab) "
                              "at each evaluation; none: no samples (default: a line "
                              "break, 'The ' and 'ROMEO:').")
    outputs.add_argument("--sample_tokens", type=int, default=200,
                         help="New tokens sampled for each prompt.")
    outputs.add_argument("--sample_temperature", type=float, default=0.8,
                         help="The samples' softmax temperature (lower: more likely tokens).")
    outputs.add_argument("--sample_top_p", type=float, default=0.9,
                         help="The samples draw from the smallest set of tokens whose "
                              "probability reaches this (nucleus sampling; 1: all).")
    add_export_dir_flag(outputs, "the model (the best checkpoint by validation loss when "
                                 "there is one)",
                        "SavedModel with `generate` and `score` signatures")
    # nanoGPT's recipe for small models: AdamW, weight decay 0.1, beta2 0.99,
    # cosine decay after a short warmup, gradients clipped at 1.
    parser.set_defaults(learning_rate=1e-3, warmup_steps=100, weight_decay=0.1,
                        clip_norm=1.0, eval_every_steps=500)
    return parser


def parse_flags(argv=None):
    """Parses and checks the flags; exits with a usage message on errors."""
    parser = language_model_parser()
    flags = parser.parse_args(argv)
    check_counts(
        parser, flags,
        positive=("train_steps", "global_batch_size", "gradient_accumulation_steps",
                  "keep_checkpoints", "log_every_steps", "shuffle_buffer"),
        non_negative=("warmup_steps", "checkpoint_every_steps", "eval_every_steps",
                      "sample_tokens", "stop_time_hours"),
    )
    if flags.learning_rate <= 0:
        parser.error(f"--learning_rate must be positive, got {flags.learning_rate}.")
    check_rates(parser, flags, ("dropout",))
    if not 0 < flags.sample_top_p <= 1:
        parser.error(f"--sample_top_p must be in (0, 1], got {flags.sample_top_p}.")
    if flags.logit_soft_cap is not None and flags.logit_soft_cap <= 0:
        parser.error(f"--logit_soft_cap must be positive, got {flags.logit_soft_cap}.")
    if flags.activation is not None:
        try:
            get_activation(flags.activation)
        except ValueError as error:
            parser.error(f"--activation={flags.activation}: {error}")
    if flags.sample_temperature <= 0:
        parser.error(f"--sample_temperature must be positive, got {flags.sample_temperature}.")
    return flags


def check_paths(flags):
    """Checks the files and directories that the flags name, before training.

    Raises:
        UsageError: a data flag matches no TFRecord file, or an output
            directory cannot be written.
    """
    check_run_flags(flags, DATA_WRITER)
    check_config_flag(flags.config, sorted(MODELS[flags.model].presets),
                      f"a JSON file of the {flags.model} model's arguments")


# ---------------------------------------------------------------------------
# The model, data and evaluation


def _gpt_arguments(flags):
    """The constructor arguments of the model that the flags set (the
    --config's where a flag is not given)."""
    options = {name: getattr(flags, name) for name in MODEL_OPTIONS
               if getattr(flags, name) is not None}
    return dict(dropout=flags.dropout, **options)


def data_sequence_length(files):
    """The sequence length the shards were written with (their first
    record's)."""
    compressions = tfrecord_files.file_compressions(files, "auto")
    first = tfrecord_files.first_record(files, compressions)
    if first is None:
        raise ValueError(f"The shards {files[:3]}... hold no record: the data job wrote "
                         "nothing. Check its stats.json.")
    return record_sequence_length(first[1])


def dataset_function(files, flags, sequence_length, training, seed=None):
    """The `distribute_datasets_from_function` input function: training
    batches repeat forever, shuffled; evaluation batches read each window
    once, in order (the last batch may be short on one replica)."""

    def dataset_fn(input_context):
        return language_model_dataset(
            files,
            batch_size=input_context.get_per_replica_batch_size(flags.global_batch_size),
            sequence_length=sequence_length,
            shuffle=training,
            shuffle_buffer=flags.shuffle_buffer,
            seed=flags.seed if seed is None else seed,
            repeat=training,
            drop_remainder=training or input_context.num_replicas_in_sync > 1,
            input_context=input_context,
        )

    return dataset_fn


def evaluation_steps(files, flags, replicas):
    """The global batches of one pass over the validation windows."""
    compressions = tfrecord_files.file_compressions(files, "auto")
    windows = sum(1 for path in files for _ in tf.data.TFRecordDataset(
        path, compression_type=compressions[path]))
    if replicas > 1 and windows % flags.global_batch_size:
        LOGGER.warning("Evaluation on %d replicas reads whole global batches: %d of the %d "
                       "validation windows are left out.", replicas,
                       windows % flags.global_batch_size, windows)
        return max(windows // flags.global_batch_size, 1)
    return -(-windows // flags.global_batch_size)


class SampleWriter:
    """Continuations of fixed prompts, sampled with the export's own
    `generate` function and logged as a Markdown table (`samples`)."""

    def __init__(self, signatures, prompts, max_new_tokens, temperature, top_p, seed):
        self.signatures = signatures
        self.prompts = list(prompts)
        self.options = dict(max_new_tokens=max_new_tokens, temperature=temperature,
                            top_p=top_p, seed=seed)

    def __call__(self, writers, step):
        completions = self.signatures.complete(self.prompts, **self.options)
        rows = [[repr(prompt)[1:-1], completion]
                for prompt, completion in zip(self.prompts, completions)]
        writers.text(writers.eval, {"samples": markdown_table(SAMPLE_COLUMNS, rows)}, step)


def make_evaluator(loop, run, eval_files, flags, sequence_length, step, writers, best,
                   best_model, samples):
    """The evaluation of the host loop: the task's figures over every
    validation window, the best checkpoint kept, sampled text logged."""
    eval_dataset = run.strategy.distribute_datasets_from_function(
        dataset_function(eval_files, flags, sequence_length, training=False))
    steps = evaluation_steps(eval_files, flags, run.replicas)

    def evaluator():
        values = evaluate(loop, iter(eval_dataset), steps)
        best.update(int(step.numpy()), values, best_model)
        if samples is not None:
            samples(writers, int(step.numpy()))
        return values

    return evaluator


# ---------------------------------------------------------------------------
# The loop-level task


class LanguageModelTask:
    """The loss, step sums and metrics of a causal language model.

    A batch holds windows of `sequence_length + 1` token ids
    (`tfnlp.data.language_model_dataset`); the model reads the first
    `sequence_length` and predicts the last `sequence_length`. The loss is the
    cross-entropy summed over the predicted tokens of the whole global batch,
    divided by their number (nanoGPT's and Hugging Face's mean over tokens,
    exact across replicas: `batch_totals` gives the predicted tokens of a
    replica's share and the loop sums them over the replicas).

    Besides the loss per token and the perplexity, the evaluation reports bits
    per character: the summed negative log-likelihood over the number of
    characters the predicted tokens stand for (each record's
    `character_count`), in bits. Unlike the loss per token it does not depend
    on the tokenization, so a character model and a subword model of the same
    text compare.

    Args:
        model: a decoder-only language model called on token ids
            `(batch, length)` and returning logits `(batch, length,
            vocabulary)` (`tfnlp.models.GPTCausalLM`).

    The batches are dicts with `token_ids`, int `(batch, sequence_length
    + 1)`, and optionally `character_count`, `(batch,)` (the characters of
    each window's predicted tokens).

    Example:

    >>> task = LanguageModelTask(model=None)
    >>> totals = {"nll_sum": 2 * math.log(2.0), "target_tokens": 2.0, "characters": 4.0,
    ...           "correct": 1.0, "examples": 1.0, "tokens": 3.0}
    >>> results = task.results(totals)
    >>> round(results["perplexity"], 6), round(results["bits_per_character"], 6)
    (2.0, 0.5)

    References:
        - [Radford et al., 2019. Language Models are Unsupervised Multitask
          Learners](https://cdn.openai.com/better-language-models/language_models_are_unsupervised_multitask_learners.pdf)
    """

    sum_names = ("nll_sum", "target_tokens", "characters", "correct", "examples", "tokens")

    def __init__(self, model):
        self.model = model

    def forward(self, batch, training=None):
        """The logits of every predicted position."""
        return self.model(batch[TOKEN_IDS][:, :-1], training=training)

    def batch_totals(self, batch):
        """The counts whose global sums normalise the loss."""
        return {"target_tokens": _target_tokens(batch)}

    def loss(self, batch, outputs, totals):
        """This replica's share of the global batch's loss per predicted token."""
        return tf.reduce_sum(_cross_entropy(batch, outputs)) / tf.maximum(
            totals["target_tokens"], 1.0)

    def sums(self, batch, outputs):
        """The summed figures of one (micro-)batch, in float32: `nll_sum`,
        `target_tokens`, `characters` (of the predicted tokens; the target
        tokens when the batch has no `character_count`), `correct` (argmax
        = target), `examples` and `tokens` (the tokens read, for the
        throughput)."""
        targets = tf.cast(batch[TOKEN_IDS][:, 1:], tf.int32)
        predictions = tf.argmax(outputs, axis=-1, output_type=tf.int32)
        target_tokens = _target_tokens(batch)
        if CHARACTER_COUNT in batch:
            characters = tf.reduce_sum(tf.cast(batch[CHARACTER_COUNT], tf.float32))
        else:
            characters = target_tokens
        return {
            "nll_sum": tf.reduce_sum(_cross_entropy(batch, outputs)),
            "target_tokens": target_tokens,
            "characters": characters,
            "correct": tf.reduce_sum(tf.cast(tf.equal(predictions, targets), tf.float32)),
            "examples": tf.cast(tf.shape(targets)[0], tf.float32),
            "tokens": target_tokens,
        }

    @staticmethod
    def results(totals):
        """`loss` (nats per token), `perplexity` (`exp(loss)`),
        `bits_per_character`, `loss_per_character` (nats) and
        `token_accuracy` of sums added up over steps."""
        tokens = max(totals["target_tokens"], 1.0)
        characters = max(totals["characters"], 1.0)
        loss = totals["nll_sum"] / tokens
        return {
            "loss": loss,
            "perplexity": math.exp(min(loss, 80.0)),
            "bits_per_character": totals["nll_sum"] / characters / math.log(2.0),
            "loss_per_character": totals["nll_sum"] / characters,
            "token_accuracy": totals["correct"] / tokens,
        }

    @staticmethod
    def step_record(sums):
        """The per-step figures of `train_log.jsonl` besides the loss."""
        return {"target_tokens": sums["target_tokens"]}


def _target_tokens(batch):
    shape = tf.shape(batch[TOKEN_IDS])
    return tf.cast(shape[0] * (shape[1] - 1), tf.float32)


def _cross_entropy(batch, logits):
    targets = tf.cast(batch[TOKEN_IDS][:, 1:], tf.int32)
    return tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=targets, logits=tf.cast(logits, tf.float32))


# ---------------------------------------------------------------------------
# The training run


def run(flags):
    """Trains as the flags say; returns the final step's loss.

        python -m trainer.lm --train_data='DATA/train-*' --eval_data='DATA/validation-*' \\
            --model_dir=RUN --config=tiny --global_batch_size=64 --train_steps=5000

    reads the windows of `python -m pipelines.lm_data` with
    `tfnlp.data.language_model_dataset`, trains a decoder-only model of
    `tfnlp.models` (`--model`, `--config`) with the shared loop of
    `trainer.training_loop` (the next-token cross-entropy per predicted token
    of the global batch: `LanguageModelTask`), and writes into
    `--model_dir`:

    - `ckpt-STEP.*` checkpoints (model, optimizer, step and, on one device, the
      input iterator's position); a run started again with the same command
      resumes from the latest one.
    - `tensorboard/train/` and `tensorboard/eval/` TensorBoard logs: loss,
      perplexity, bits per character, token accuracy, learning rate, gradient
      norm, tokens/s; at each evaluation (every `--eval_every_steps` and at
      the end) the same figures over the whole validation set and a table of
      continuations sampled from `--sample_prompts` (Text tab). The
      hyperparameters go into `tensorboard/` itself, for the HParams tab.
    - `train_log.jsonl`, `eval_log.jsonl`; `config.json` (the model, serialized
      by Keras) and `serving.json` (the data directory of the tokenizer, for
      `trainer.export`).
    - `best/`: the checkpoint of the lowest validation loss so far and
      `best/best.json`.
    - with `--export_dir`, the next version `EXPORT_DIR/<N>/` of a SavedModel
      with `generate` and `score` signatures (`tfnlp.export.
      LanguageModelSignatures`), from the best checkpoint when there is one.
    """
    return runtime.train_run(flags, lambda run: build_training(flags, run),
                             "Language-model training")


def build_training(flags, run):
    """The model, optimizer, task, data, evaluation and export of a
    language-model run (`runtime.TrainingParts`), in the strategy's scope."""
    runtime.check_global_batch_size(flags.global_batch_size, run.replicas,
                                    flags.gradient_accumulation_steps)
    train_files = match_data_files("--train_data", flags.train_data, DATA_WRITER)
    eval_files = (match_data_files("--eval_data", flags.eval_data, DATA_WRITER)
                  if flags.eval_data else [])
    sequence_length = data_sequence_length(train_files)
    tokenizer_dir = flags.tokenizer_dir or os.path.dirname(train_files[0])
    tokenizer = load_language_model_tokenizer(tokenizer_dir)
    model = model_from_config_flag(MODELS[flags.model], flags.config, **_gpt_arguments(flags),
                                   vocabulary_size=tokenizer.vocabulary_size)
    model.check_positions(sequence_length, "The data's sequence_length")
    model(tf.zeros([1, sequence_length], tf.int32))  # Every variable exists before restoring.
    optimizer = optimizer_from_flags(
        flags, model, beta_2=flags.adam_beta_2, schedule=flags.learning_rate_schedule)
    optimizer.build(model.trainable_variables)
    record = serving_record(tokenizer_dir, sequence_length, model.max_sequence_length)
    best = BestCheckpoint(flags.model_dir, "loss", higher_is_better=False, chief=run.chief)
    best_model = tf.train.Checkpoint(model=model)
    samples = None
    if run.chief and flags.sample_prompts and flags.sample_tokens:
        samples = SampleWriter(language_model_signatures(model, tokenizer, record),
                               flags.sample_prompts, flags.sample_tokens,
                               flags.sample_temperature, flags.sample_top_p, flags.seed)

    def evaluator(loop, writers, step):
        return make_evaluator(loop, run, eval_files, flags, sequence_length, step, writers,
                              best, best_model, samples)

    def export(run):
        if best.path():
            best_model.read(best.path()).assert_consumed()
        runtime.export_at_end(run, export_language_model, model, flags.export_dir,
                              record=record)

    return runtime.TrainingParts(
        model=model,
        optimizer=optimizer,
        task=LanguageModelTask(model),
        dataset_function=lambda seed: dataset_function(train_files, flags, sequence_length,
                                                       training=True, seed=seed),
        config=run_config(model),
        serving_record=record,
        model_settings=model.get_config(),
        hparams_metrics=HPARAMS_METRICS,
        evaluator=evaluator if eval_files else None,
        export=export,
    )


# ---------------------------------------------------------------------------
# Recording, loading and exporting a run
#
# A run's `config.json` holds the model serialized by Keras (`run_config`)
# and its `serving.json` the data directory whose tokenizer the model reads,
# the sequence length it trained on and the generation defaults of its
# export (`serving_record`).


def run_config(model):
    """What a run's `config.json` holds: the model serialized by Keras."""
    return keras.saving.serialize_keras_object(model)


def serving_record(tokenizer_dir, sequence_length, max_sequence_length):
    """What export needs besides the checkpoints: the tokenizer's data
    directory, the training sequence length and the generation settings
    (a request's defaults and its limit on new tokens, which leaves a
    quarter of the model's `max_sequence_length` to the prompt)."""
    limit = max(1, min(MAX_NEW_TOKENS, int(max_sequence_length * NEW_TOKENS_SHARE)))
    defaults = {**GENERATION_DEFAULTS,
                "max_new_tokens": min(GENERATION_DEFAULTS["max_new_tokens"], limit)}
    return {"model": RUN_KIND, "tokenizer_dir": os.path.abspath(tokenizer_dir),
            "sequence_length": sequence_length, **defaults, "max_new_tokens_limit": limit}


def language_model_signatures(model, tokenizer, record):
    """The `LanguageModelSignatures` of a model, its tokenizer and a run's
    serving record."""
    return LanguageModelSignatures(
        model, tokenizer,
        max_new_tokens=record["max_new_tokens_limit"],
        defaults={name: record[name] for name in GENERATION_DEFAULTS},
    )


def export_language_model(model, export_dir, record):
    """Exports `model` as the next version of `export_dir`; returns its path."""
    tokenizer = load_language_model_tokenizer(record["tokenizer_dir"])
    signatures = language_model_signatures(model, tokenizer, record)
    return write_next_version(export_dir, signatures.signatures(),
                              {"tokenizer": signatures.tokenizer},
                              extra_files=signatures.extra_files())


def load_language_model(model_dir, checkpoint=""):
    """The model of a `trainer.lm` run with its trained weights.

    Args:
        model_dir: the run's directory.
        checkpoint: a checkpoint prefix; by default the best one by
            validation loss (`best/`), else the latest.
    """
    model = keras.saving.deserialize_keras_object(read_run_config(model_dir, "trainer.lm"))
    record = run_files.read_serving_record(model_dir)
    model(tf.zeros([1, record.get("sequence_length", 8)], tf.int32))
    return restore_run_model(model, model_dir, checkpoint)


def export_language_model_run(flags, record):
    """Exports a `trainer.lm` run (`trainer.export`'s exporter of the kind)."""
    model = load_language_model(flags.model_dir, flags.checkpoint)
    return export_language_model(model, flags.export_dir, record)


TASK = register_task(TaskEntry(
    names=NAMES,
    summary="A GPT-style decoder predicting each next token.",
    parse_flags=parse_flags, check_paths=check_paths, run=run,
    export_run=export_language_model_run,
    command="lm",
))
