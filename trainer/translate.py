"""Translation training on `tf.distribute`: the Transformer or the LSTM
encoder-decoder.

    python -m trainer.translate --train_data='DATA/translation-*' \\
        --eval_data='VAL/translation-*' --model_dir=RUN --config=tiny \\
        --train_steps=20000 [--max_tokens_per_batch=4096] [--label_smoothing=0.1]

reads the shards of `python -m pipelines.translation_data` with
`tfnlp.data.translation_dataset` (batches of about `--max_tokens_per_batch`
tokens, bucketed by length), trains `tfnlp.models.TransformerSeq2Seq` (or,
with `--model=rnn --attention=...`, `tfnlp.models.RNNSeq2Seq`) with
the shared loop of `trainer.training_loop` (the label-smoothed
cross-entropy per target token of the global batch: `trainer.tasks.
TranslationTask`), and writes into `--model_dir`:

- `ckpt-STEP.*` checkpoints (model, optimizer, step and, on one device, the
  input iterator's position); a run started again with the same command
  resumes from the latest one.
- `train/` and `eval/` TensorBoard logs: loss, NLL, perplexity, token
  accuracy, learning rate, gradient norm, tokens/s; validation loss, BLEU,
  lower-cased BLEU and chrF; at each evaluation, a table of the first
  `--sample_sentences` validation sentences with their references and
  translations (Text tab) and their alignments (Images tab, source pieces
  against the translation's pieces: the Transformer's last cross-attention
  averaged over heads, or one image a head with `--alignment_heads=each`;
  the LSTM's attention). The hyperparameters (every flag and the model's
  settings) go into `--model_dir` itself, for the HParams tab.
- `train_log.jsonl`, `eval_log.jsonl`; `config.json` (the model, serialized
  by Keras: class and config)
  and `serving.json` (the SentencePiece model and decoding settings for
  `trainer.export`).
- `best/`: the checkpoint of the best validation BLEU so far and
  `best/best.json` (its step and scores).
- with `--export_dir`, the next version `EXPORT_DIR/<N>/` of a
  text-in/text-out SavedModel of the best checkpoint (or the last model
  without evaluation).

Replicas. Each input pipeline reads batches of its share of the token
budget and splits every batch row-wise over its replicas (padding it with
empty rows, which count for nothing, to a multiple of them), so the global
batch of R replicas is the batch one replica would see and the loss is the
same.
"""

import logging
import os

import tensorflow as tf

from tfnlp.command_line import run_main
from tfnlp.data import count_long_pairs, translation_dataset
from tfnlp.data.file_names import SENTENCEPIECE_MODEL, STATS_FILE
from tfnlp.data.translation_schema import INPUTS
from tfnlp.text import SentencePieceTokenizer
from trainer import optimization, runtime, summaries
from trainer.run_flags import match_data_files
from trainer.run_files import (
    CONFIG_FILE,
    read_json,
    write_flags,
    write_json,
    write_serving_record,
)
from trainer.tasks import TranslationTask
from trainer.training_loop import LoopSchedule, TrainingLoop, evaluate, train
from trainer.translate_flags import check_paths, parse_flags
from trainer.translation_eval import TranslationEvaluator, Translator
from trainer.translation_models import (
    build_translation_model,
    export_translation_model,
    run_config,
    serving_record,
    translation_signatures,
)

LOGGER = logging.getLogger("trainer.translate")

DATA_WRITER = "pipelines.translation_data"


def find_vocab_file(flags, train_files):
    """`--vocab_file`, or the pipeline's model beside the first shard."""
    path = flags.vocab_file or os.path.join(os.path.dirname(train_files[0]),
                                            SENTENCEPIECE_MODEL)
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(
            f"No SentencePiece model at {path}. Pass --vocab_file=PATH, the joint model "
            "that `python -m pipelines.translation_data --shared_vocab` wrote."
        )
    return path


def report_long_pairs(train_files, max_length):
    """Logs how many training pairs are longer than `--max_length` (training
    skips them) and returns that count; 0 without reading the shards when
    the stats.json beside each of them says the job wrote none that long."""
    recorded = [
        read_json(os.path.join(directory, STATS_FILE), {}).get("parameters", {}).get("max_length")
        for directory in sorted({os.path.dirname(path) for path in train_files})
    ]
    if all(length is not None and length <= max_length for length in recorded):
        return 0
    long_pairs, pairs = count_long_pairs(train_files, max_length)
    if long_pairs:
        LOGGER.warning(
            "%d of the %d training pairs are longer than --max_length=%d ids (the longer "
            "side, EOS included): training skips them. Pass a larger --max_length, or "
            "write the shards with pipelines.translation_data --max_length=%d to drop "
            "them there (counted in its stats.json).",
            long_pairs, pairs, max_length, max_length)
    return long_pairs


def split_over_replicas(batch, replicas):
    """The rows of a batch in `replicas` equal parts (empty rows added)."""
    size = tf.shape(batch[INPUTS])[0]
    padded = -(-size // replicas) * replicas

    def parts(tensor):
        tensor = tf.pad(tensor, [[0, padded - size], [0, 0]])
        return tf.reshape(tensor, [replicas, padded // replicas, tf.shape(tensor)[1]])

    return tf.data.Dataset.from_tensor_slices({name: parts(batch[name]) for name in batch})


def dataset_function(files, flags, training, seed=None):
    """The `distribute_datasets_from_function` input function."""

    def dataset_fn(input_context):
        replicas = input_context.num_replicas_in_sync // input_context.num_input_pipelines
        dataset = translation_dataset(
            files,
            max_tokens_per_batch=flags.max_tokens_per_batch // input_context.num_input_pipelines,
            max_length=flags.max_length,
            evaluation=not training,
            shuffle=training,
            shuffle_buffer=flags.shuffle_buffer,
            seed=flags.seed if seed is None else seed,
            repeat=training,
            input_context=input_context,
        )
        if replicas > 1:
            dataset = dataset.flat_map(lambda batch: split_over_replicas(batch, replicas))
        return dataset

    return dataset_fn


# The metrics the HParams tab compares runs by: (summary folder, tag).
HPARAMS_METRICS = (
    ("eval", "bleu"), ("eval", "chrf"), ("eval", "loss"), ("train", "loss"),
    ("eval", "perplexity"), ("eval", "bleu_lowercase"), ("train", "perplexity"),
    ("train", "token_accuracy"),
)


def _hparams(flags, model, strategy):
    """The HParams tab's values: every flag, the model's settings
    (`model/...`) and the number of replicas."""
    values = {f"model/{name}": value for name, value in model.get_config().items()
              if isinstance(value, (bool, int, float, str))}
    values.update(vars(flags))
    values["replicas"] = strategy.num_replicas_in_sync
    return values


def make_evaluator(loop, strategy, eval_files, flags, scorer, step, writers, best_model):
    """The evaluation of the host loop: the loss over every validation
    batch (on every replica), then decoding and scoring with `scorer`."""
    eval_dataset = strategy.distribute_datasets_from_function(
        dataset_function(eval_files, flags, training=False))
    eval_steps = sum(1 for _ in translation_dataset(
        eval_files, flags.max_tokens_per_batch, max_length=flags.max_length,
        evaluation=True))

    def evaluator():
        values = evaluate(loop, iter(eval_dataset), eval_steps)
        values.update(scorer(int(step.numpy()), writers, best_model))
        return values

    return evaluator


def run(flags):
    """Trains as the flags say; returns the final step's loss."""
    run = runtime.start_run(flags.model_dir, flags.strategy, flags.tpu,
                            flags.mixed_precision, flags.seed)
    train_files = match_data_files("--train_data", flags.train_data, DATA_WRITER)
    eval_files = (match_data_files("--eval_data", flags.eval_data, DATA_WRITER)
                  if flags.eval_data else [])
    vocab_file = find_vocab_file(flags, train_files)
    tokenizer = SentencePieceTokenizer(model_file=vocab_file)
    if run.chief:
        report_long_pairs(train_files, flags.max_length)
    strategy = run.strategy
    with strategy.scope():
        model = build_translation_model(flags, tokenizer.vocabulary_size)
        optimizer = optimization.create_optimizer(
            flags.optimizer,
            learning_rate=flags.learning_rate,
            train_steps=flags.train_steps,
            warmup_steps=flags.warmup_steps,
            weight_decay=flags.weight_decay,
            model=model,
            mixed_precision=flags.mixed_precision,
            beta_2=flags.adam_beta_2,
            epsilon=1e-9,
            schedule=flags.learning_rate_schedule,
        )
        optimizer.build(model.trainable_variables)
        step = runtime.step_variable()
    if run.chief:
        write_flags(flags.model_dir, flags)
        write_json(os.path.join(flags.model_dir, CONFIG_FILE), run_config(model))
        write_serving_record(flags.model_dir, serving_record(flags, vocab_file))
    LOGGER.info("Translation training with %s on %d replica(s): %s (%d parameters)",
                type(strategy).__name__, run.replicas, flags.config, model.count_params())

    task = TranslationTask(model, label_smoothing=flags.label_smoothing)
    train_iterator, checkpoints, current_step = runtime.training_state(
        run, lambda seed: dataset_function(train_files, flags, training=True, seed=seed),
        flags.seed, flags.keep_checkpoints, model=model, optimizer=optimizer, step=step,
    )
    loop = TrainingLoop(
        strategy, task, optimizer,
        gradient_accumulation_steps=flags.gradient_accumulation_steps,
        clip_norm=flags.clip_norm, jit_compile=flags.jit_compile,
    )

    logs = summaries.RunLogs(flags.model_dir, run.chief, flags.profile_steps)
    logs.writers.hparams(_hparams(flags, model, strategy), HPARAMS_METRICS)
    record = serving_record(flags, vocab_file)
    translator = Translator(translation_signatures(model, record))
    evaluator = scorer = None
    best_model = tf.train.Checkpoint(model=model)
    if eval_files:
        scorer = TranslationEvaluator(translator, tokenizer, eval_files, flags.model_dir,
                                      flags.sample_sentences, chief=run.chief,
                                      alignment_heads=flags.alignment_heads)
        evaluator = make_evaluator(loop, strategy, eval_files, flags, scorer, step,
                                   logs.writers, best_model)
    schedule = LoopSchedule(
        train_steps=flags.train_steps,
        log_every_steps=flags.log_every_steps,
        checkpoint_every_steps=flags.checkpoint_every_steps,
        eval_every_steps=flags.eval_every_steps,
        stop_time_seconds=flags.stop_time_hours * 3600,
        progress_every_seconds=flags.progress_every_seconds,
    )
    try:
        loss = train(loop, train_iterator, checkpoints, logs, schedule,
                     optimization.learning_rate_schedule(optimizer), current_step,
                     evaluator=evaluator)
        if flags.export_dir:
            if scorer is not None and scorer.best:
                best_model.read(os.path.join(scorer.best_path, scorer.best["checkpoint"])
                                ).assert_consumed()
            runtime.export_at_end(run, export_translation_model, model, flags.export_dir,
                                  record=record)
    finally:
        logs.close()
        checkpoints.close()
    LOGGER.info("Training finished at step %d.", int(step.numpy()))
    return loss


def main(argv=None):
    runtime.configure_logging()
    flags = parse_flags(argv)
    check_paths(flags)
    return run(flags)


if __name__ == "__main__":
    run_main(main)
