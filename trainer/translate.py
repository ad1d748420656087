"""Translation training on `tf.distribute`: the Transformer or the LSTM
encoder-decoder.

    python -m trainer.translate --train_data='DATA/translation-*' \\
        --eval_data='VAL/translation-*' --model_dir=RUN --config=tiny \\
        --train_steps=20000 [--max_tokens_per_batch=4096] [--label_smoothing=0.1]

It reads the shards of `python -m pipelines.translation_data` and trains on
the shared loop of `trainer.training_loop`; `run` says what it writes.
"""

import logging
import os

import tensorflow as tf

from tfnlp.command_line import run_main
from tfnlp.data import count_long_pairs, translation_dataset
from tfnlp.data.file_names import SENTENCEPIECE_MODEL
from tfnlp.data.translation_schema import INPUTS
from tfnlp.text import SentencePieceTokenizer
from trainer import optimization, runtime
from trainer.run_flags import match_data_files
from trainer.tasks import TranslationTask
from trainer.training_loop import evaluate
from trainer.translate_flags import (
    DATA_WRITER,
    check_paths,
    parse_flags,
    recorded_max_lengths,
)
from trainer.translation_eval import TranslationEvaluator, Translator
from trainer.translation_models import (
    build_translation_model,
    export_translation_model,
    run_config,
    serving_record,
    translation_signatures,
)

LOGGER = logging.getLogger("trainer.translate")


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
    recorded = recorded_max_lengths(train_files)
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
    """The `distribute_datasets_from_function` input function.

    Each input pipeline reads batches of its share of the token budget and
    splits every batch row-wise over its replicas (`split_over_replicas`,
    padding it with empty rows, which count for nothing, to a multiple of
    them), so the global batch of R replicas is the batch one replica would
    see and the loss is the same.
    """

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


# The metrics the HParams tab compares runs by: (run, scalar name).
HPARAMS_METRICS = (
    ("eval", "bleu"), ("eval", "chrf"), ("eval", "loss"), ("train", "loss"),
    ("eval", "perplexity"), ("eval", "bleu_lowercase"), ("train", "perplexity"),
    ("train", "token_accuracy"),
)


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
    """Trains as the flags say; returns the final step's loss.

    It reads the data with `tfnlp.data.translation_dataset` (batches of
    about `--max_tokens_per_batch` tokens, bucketed by length), trains
    `tfnlp.models.TransformerSeq2Seq` (or, with `--model=rnn
    --attention=...`, `tfnlp.models.RNNSeq2Seq`) on the label-smoothed
    cross-entropy per target token of the global batch
    (`trainer.tasks.TranslationTask`), and writes into `--model_dir`:

    - `ckpt-STEP.*` checkpoints (model, optimizer, step and, on one device,
      the input iterator's position); a run started again with the same
      command resumes from the latest one.
    - `tensorboard/train/` and `tensorboard/eval/` TensorBoard logs: loss,
      NLL, perplexity, token accuracy, learning rate, gradient norm,
      tokens/s; validation loss, BLEU, lower-cased BLEU and chrF; at each
      evaluation, a table of the first `--sample_sentences` validation
      sentences with their references and translations (Text tab) and their
      alignments (Images tab, source pieces against the translation's
      pieces: the Transformer's last cross-attention averaged over heads,
      or one image a head with `--alignment_heads=each`; the LSTM's
      attention). The hyperparameters (every flag and the model's settings)
      go into `tensorboard/` itself, for the HParams tab.
    - `train_log.jsonl`, `eval_log.jsonl`; `config.json` (the model,
      serialized by Keras: class and config) and `serving.json` (the
      SentencePiece model and decoding settings for `trainer.export`).
    - `best/`: the checkpoint of the best validation BLEU so far and
      `best/best.json` (its step and scores).
    - with `--export_dir`, the next version `EXPORT_DIR/<N>/` of a
      text-in/text-out SavedModel of the best checkpoint (or the last model
      without evaluation).
    """
    return runtime.train_run(flags, lambda run: build_training(flags, run),
                             "Translation training")


def build_training(flags, run):
    """The model, optimizer, task, data, evaluation and export of a
    translation run (`runtime.TrainingParts`), in the strategy's scope."""
    train_files = match_data_files("--train_data", flags.train_data, DATA_WRITER)
    eval_files = (match_data_files("--eval_data", flags.eval_data, DATA_WRITER)
                  if flags.eval_data else [])
    vocab_file = find_vocab_file(flags, train_files)
    tokenizer = SentencePieceTokenizer(model_file=vocab_file)
    if run.chief:
        report_long_pairs(train_files, flags.max_length)
    model = build_translation_model(flags, tokenizer.vocabulary_size)
    optimizer = optimization.optimizer_from_flags(
        flags, model, beta_2=flags.adam_beta_2, epsilon=1e-9,
        schedule=flags.learning_rate_schedule)
    optimizer.build(model.trainable_variables)
    record = serving_record(flags, vocab_file)
    best_model = tf.train.Checkpoint(model=model)
    scorer = None
    if eval_files:
        scorer = TranslationEvaluator(
            Translator(translation_signatures(model, record)), tokenizer, eval_files,
            flags.model_dir, flags.sample_sentences, chief=run.chief,
            alignment_heads=flags.alignment_heads)

    def evaluator(loop, writers, step):
        return make_evaluator(loop, run.strategy, eval_files, flags, scorer, step, writers,
                              best_model)

    def export(run):
        if scorer is not None and scorer.best.path():
            best_model.read(scorer.best.path()).assert_consumed()
        runtime.export_at_end(run, export_translation_model, model, flags.export_dir,
                              record=record)

    return runtime.TrainingParts(
        model=model,
        optimizer=optimizer,
        task=TranslationTask(model, label_smoothing=flags.label_smoothing),
        dataset_function=lambda seed: dataset_function(train_files, flags, training=True,
                                                       seed=seed),
        config=run_config(model),
        serving_record=record,
        model_settings=model.get_config(),
        hparams_metrics=HPARAMS_METRICS,
        evaluator=evaluator if scorer is not None else None,
        export=export,
    )


main = runtime.main_function(__name__, parse_flags, check_paths, run)


if __name__ == "__main__":
    run_main(main)
