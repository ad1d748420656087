"""BERT pretraining (masked LM and next sentence) on `tf.distribute`.

    python -m trainer.pretrain --train_data='DATA/pretraining-*' \\
        --model_dir=RUN --config=base --global_batch_size=256 \\
        --train_steps=1000000 --learning_rate=1e-4 --warmup_steps=10000

It reads the TFRecords of `python -m pipelines.pretraining_data` and
trains `tfnlp.models.BertPretrainingModel`; `run` says what it writes.
"""

import logging
import os

import tensorflow as tf

from tfnlp.command_line import run_main
from tfnlp.data import pretraining_dataset
from tfnlp.models import BertEncoder
from tfnlp.text import load_vocabulary
from trainer import optimization, runtime, summaries
from trainer.bert_models import build_model
from trainer.export import export_trained_model
from trainer.pretrain_flags import bert_config, check_paths, masking_ids, parse_flags
from trainer.run_flags import match_data_files
from trainer.tasks import BertPretrainingTask
from trainer.training_loop import evaluate

LOGGER = logging.getLogger("trainer.pretrain")


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


# Records read to find a short fixed example for the attention pictures.
FIXED_EXAMPLE_CANDIDATES = 256
# The metrics the HParams tab compares runs by: (summary folder, tag).
HPARAMS_METRICS = tuple(
    (group, tag) for group in ("eval", "train")
    for tag in ("loss", "mlm_accuracy", "nsp_accuracy", "mlm_perplexity"))


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


def run(flags):
    """Trains as the flags say; returns the final step's loss.

    It reads the data with `tfnlp.data.pretraining_dataset` and trains with
    the custom loop of `trainer.training_loop` (see there why not
    `keras.Model.fit`). The inputs decide the flags they can:
    `--max_seq_length` and `--max_predictions_per_seq` are the lengths of
    the records, `--vocab_size` the tokens of `--vocab_file`,
    `--do_lower_case` what the data's stats.json records; a flag given with
    another value is refused before anything is written
    (`trainer.pretrain_flags.set_flags_from_inputs`). A NaN or infinite
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
    optimizer = optimization.optimizer_from_flags(flags)
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


main = runtime.main_function(__name__, parse_flags, check_paths, run)


if __name__ == "__main__":
    run_main(main)
