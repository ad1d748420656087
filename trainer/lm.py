"""Language-model training (a GPT-style decoder) on `tf.distribute`.

    python -m trainer.lm --train_data='DATA/train-*' --eval_data='DATA/validation-*' \\
        --model_dir=RUN --config=tiny --global_batch_size=64 --train_steps=5000

reads the windows of `python -m pipelines.lm_data` with
`tfnlp.data.language_model_dataset`, trains a decoder-only model of
`tfnlp.models` (`--model`, `--config`) with the shared loop of
`trainer.training_loop` (the next-token cross-entropy per predicted token
of the global batch: `trainer.tasks.LanguageModelTask`), and writes into
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

import logging
import os

import tensorflow as tf

from tfnlp.command_line import run_main
from tfnlp.data import language_model_dataset, tfrecord_files
from tfnlp.data.language_model_schema import record_sequence_length
from tfnlp.text import load_language_model_tokenizer
from tfnlp.visualization import markdown_table
from trainer import optimization, runtime
from trainer.checkpoints import BestCheckpoint
from trainer.language_models import (
    export_language_model,
    language_model_signatures,
    run_config,
    serving_record,
)
from trainer.lm_flags import DATA_WRITER, check_paths, parse_flags
from trainer.model_registry import model_family
from trainer.run_flags import match_data_files
from trainer.tasks.language_model import LanguageModelTask
from trainer.training_loop import evaluate

LOGGER = logging.getLogger("trainer.lm")

# The metrics the HParams tab compares runs by: (run, scalar name).
HPARAMS_METRICS = (
    ("eval", "loss"), ("eval", "bits_per_character"), ("eval", "perplexity"),
    ("train", "loss"), ("eval", "token_accuracy"),
)
SAMPLE_COLUMNS = ("prompt", "continuation")


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


def run(flags):
    """Trains as the flags say; returns the final step's loss."""
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
    model = model_family(flags.model).build_from_flags(
        flags, vocabulary_size=tokenizer.vocabulary_size)
    model.check_positions(sequence_length, "The data's sequence_length")
    model(tf.zeros([1, sequence_length], tf.int32))  # Every variable exists before restoring.
    optimizer = optimization.optimizer_from_flags(
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


main = runtime.main_function(__name__, parse_flags, check_paths, run)


if __name__ == "__main__":
    run_main(main)
