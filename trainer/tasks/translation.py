"""The translation task: the Transformer or the LSTM encoder-decoder on the
shards of `pipelines.translation_data`, trained on `tf.distribute` by
`python -m trainer.translate` (= `trainer.train --task=translation`): its
flags, model, data, evaluation and loop task, the run (`run` says what it
writes), and loading and exporting a run (`trainer.export`).
"""

import logging
import math
import os

import keras
import tensorflow as tf

from tfnlp import decoding
from tfnlp.command_line import (
    ArgumentParser,
    UsageError,
    add_boolean_flag,
    check_input_file,
)
from tfnlp.data import count_long_pairs, translation_dataset
from tfnlp.data.file_names import SENTENCEPIECE_MODEL, STATS_FILE
from tfnlp.data.translation_schema import INPUTS, PAD_ID, TARGETS
from tfnlp.export.saved_model import write_next_version
from tfnlp.export.translation_signatures import TranslationSignatures
from tfnlp.losses.translation_losses import label_smoothed_cross_entropy
from tfnlp.models.seq2seq import (
    ATTENTIONS,
    DECODER_TOKEN_IDS,
    ENCODER_TOKEN_IDS,
    RNNSeq2Seq,
    TransformerSeq2Seq,
    decoder_inputs,
)
from tfnlp.text import SentencePieceTokenizer
from trainer import runtime
from trainer.checkpoints import read_run_config, restore_run_model
from trainer.run_files import read_json
from trainer.run_flags import (
    add_adam_beta_2_flag,
    add_export_dir_flag,
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
from trainer.translation_eval import TranslationEvaluator, Translator

LOGGER = logging.getLogger("trainer.translate")

LENGTH_PENALTIES = ("gnmt", "average", "none")
# The models of --model.
MODELS = {"transformer": TransformerSeq2Seq, "rnn": RNNSeq2Seq}
DATA_WRITER = "pipelines.translation_data"
# --max_length when the data's stats.json does not record one.
DEFAULT_MAX_LENGTH = 128
# The decoding settings of a serving record, with their command-line flags.
DECODING_SETTINGS = ("beam_size", "length_penalty", "length_penalty_alpha",
                     "max_length_a", "max_length_b")
# The metrics the HParams tab compares runs by: (run, scalar name).
HPARAMS_METRICS = (
    ("eval", "bleu"), ("eval", "chrf"), ("eval", "loss"), ("train", "loss"),
    ("eval", "perplexity"), ("eval", "bleu_lowercase"), ("train", "perplexity"),
    ("train", "token_accuracy"),
)

# ---------------------------------------------------------------------------
# The command line


def preset_names(models):
    """`"transformer: base, small; rnn: ..."`, the presets of each model of
    `models` (name -> model class)."""
    return "; ".join(f"{name}: {', '.join(sorted(model_class.presets))}"
                     for name, model_class in models.items())


def add_decoding_flags(group, recorded=False):
    """The decoding flags shared by evaluation, export and `translate_text`.

    With `recorded`, every default is None: "as the run recorded"."""
    defaults = dict(beam_size=4, length_penalty="gnmt", length_penalty_alpha=0.6,
                    max_length_a=1.5, max_length_b=10)
    recorded_default = ""
    if recorded:
        defaults = dict.fromkeys(defaults)
        recorded_default = " (default: as the run recorded)"
    group.add_argument("--beam_size", type=int, default=defaults["beam_size"],
                       help=f"Beam width; 1 decodes greedily{recorded_default}.")
    group.add_argument("--length_penalty", choices=LENGTH_PENALTIES,
                       default=defaults["length_penalty"],
                       help="Beam scores: gnmt divides the log-probability by "
                            "((5+length)/6)^alpha, average by length^alpha, none by "
                            f"1{recorded_default}.")
    group.add_argument("--length_penalty_alpha", type=float,
                       default=defaults["length_penalty_alpha"],
                       help=f"The alpha of --length_penalty{recorded_default}.")
    group.add_argument("--max_length_a", type=float, default=defaults["max_length_a"],
                       help="Generate at most a * source_length + b "
                            f"tokens{recorded_default}.")
    group.add_argument("--max_length_b", type=int, default=defaults["max_length_b"],
                       help=f"The b of --max_length_a, in tokens{recorded_default}.")


def check_decoding_flags(parser, flags):
    """Exits through `parser.error` unless `--beam_size` is at least 1 and
    `--max_length_a` and `--max_length_b` are not negative (those given: None
    is "as the run recorded")."""
    given = [name for name in ("beam_size", "max_length_a", "max_length_b")
             if getattr(flags, name) is not None]
    check_counts(parser, flags, positive=[name for name in given if name == "beam_size"],
                 non_negative=[name for name in given if name != "beam_size"])


def translation_parser():
    """The `argparse` parser of the translation trainer's flags."""
    parser = ArgumentParser(
        prog="python -m trainer.translate",
        description="Trains a translation model (the Transformer, or the LSTM encoder-decoder "
                    "with --model=rnn) on tf.distribute.",
        allow_abbrev=False,
    )
    add_task_flag(parser, ("translation",))
    data = parser.add_argument_group("data")
    add_shard_data_flags(data, DATA_WRITER,
                         "decoded and scored with BLEU and chrF at every evaluation")
    data.add_argument("--vocab_file", default="",
                      help="The job's SentencePiece model (default: sentencepiece.model "
                           "beside the first training shard).")
    data.add_argument("--max_tokens_per_batch", type=int, default=4096,
                      help="Tokens (padded, the longer side) per global batch.")
    data.add_argument("--max_length", type=int, default=None,
                      help="The longest source or target sequence, in subword ids; "
                           "longer training pairs are skipped (default: the --max_length "
                           "the data job recorded in the stats.json beside the shards, "
                           f"else {DEFAULT_MAX_LENGTH}).")
    add_shuffle_buffer_flag(data, "Sentence pairs", 100_000)
    add_seed_flag(data)

    model = parser.add_argument_group("model")
    add_model_dir_flag(model)
    model.add_argument("--model", choices=MODELS, default="transformer",
                       help="TransformerSeq2Seq, or RNNSeq2Seq (the LSTM encoder-decoder).")
    add_preset_config_flag(model, preset_names(MODELS),
                           "the model's constructor arguments (sizes)")
    model.add_argument("--dropout", type=float, default=0.3,
                       help="Dropout of embeddings, attention and sublayers (rnn: "
                            "embeddings, between layers and the attentional state).")
    model.add_argument("--attention_dropout", type=float, default=None,
                       help="Dropout of the Transformer's attention weights (default: "
                            "--dropout; fairseq's --attention-dropout, 0 by default there).")
    add_boolean_flag(model, "norm_first", False,
                     "Pre-LN blocks instead of post-LN (transformer only).")
    model.add_argument("--position_encoding", choices=("sinusoidal", "learned"),
                       default="sinusoidal", help="Transformer only.")
    model.add_argument("--attention", choices=(*ATTENTIONS, "none"), default="luong_general",
                       help="The rnn model's attention; none sees the source only through "
                            "the encoder's final states.")

    training = parser.add_argument_group("training")
    add_train_steps_flag(training, "Training steps, of about --max_tokens_per_batch tokens "
                                   "each.")
    training.add_argument("--label_smoothing", type=float, default=0.1,
                          help="The label-smoothing epsilon of the cross-entropy (0: none).")
    add_schedule_flag(training, "inverse_sqrt")
    add_adam_beta_2_flag(training, 0.98)
    add_loop_training_flags(training)

    outputs = parser.add_argument_group("checkpoints, evaluation, logs and export")
    add_loop_output_flags(outputs)
    outputs.add_argument("--sample_sentences", type=int, default=3,
                         help="Validation sentences whose translations and "
                              "cross-attention are logged at each evaluation.")
    outputs.add_argument("--alignment_heads", choices=("mean", "each"), default="mean",
                         help="The Transformer's heatmaps: its last block's cross-attention "
                              "averaged over the heads (one image a sentence), or one image "
                              "a head.")
    add_export_dir_flag(outputs, "the model (the best checkpoint by validation BLEU when "
                                 "there is one)", "text-in/text-out SavedModel")
    decoding = parser.add_argument_group("decoding (evaluation and export)")
    add_decoding_flags(decoding)
    # Translation's own defaults; add_loop_training_flags' are BERT pretraining's.
    parser.set_defaults(learning_rate=1e-3, warmup_steps=4000, weight_decay=0.0001,
                        clip_norm=0.0, eval_every_steps=1000)
    return parser


def parse_flags(argv=None):
    """Parses and checks the flags; exits with a usage message on errors."""
    parser = translation_parser()
    flags = parser.parse_args(argv)
    check_counts(
        parser, flags,
        positive=("train_steps", "max_tokens_per_batch", "gradient_accumulation_steps",
                  "keep_checkpoints", "log_every_steps"),
        non_negative=("warmup_steps", "checkpoint_every_steps", "eval_every_steps",
                      "sample_sentences", "stop_time_hours"),
    )
    if flags.max_length is not None:
        check_counts(parser, flags, positive=("max_length",))
    check_decoding_flags(parser, flags)
    if flags.learning_rate <= 0:
        parser.error(f"--learning_rate must be positive, got {flags.learning_rate}.")
    check_rates(parser, flags, ("label_smoothing", "dropout", "attention_dropout"))
    if flags.model == "rnn" and (flags.norm_first or flags.position_encoding != "sinusoidal"
                                 or flags.alignment_heads != "mean"
                                 or flags.attention_dropout is not None):
        parser.error("--norm_first, --position_encoding, --attention_dropout and "
                     "--alignment_heads are Transformer flags: leave them out, or use "
                     "--model=transformer.")
    return flags


def recorded_max_lengths(train_files):
    """The `--max_length` that the stats.json beside each directory of
    `train_files` records (None where there is none), one a directory."""
    return [
        read_json(os.path.join(directory, STATS_FILE), {}).get("parameters", {}).get("max_length")
        for directory in sorted({os.path.dirname(path) for path in train_files})
    ]


def set_flags_from_inputs(flags):
    """Sets `--max_length`, when not given, to the longest that the data
    job recorded for the training shards (their stats.json), else 128; a
    given one stays (shorter: longer pairs are skipped). Then checks that
    the longest pair fits a batch.

    Raises:
        UsageError: `--max_tokens_per_batch` is shorter than `--max_length`.
    """
    if flags.max_length is None:
        recorded = [length for length in recorded_max_lengths(
            match_data_files("--train_data", flags.train_data, DATA_WRITER))
            if length is not None]
        flags.max_length = max(recorded, default=DEFAULT_MAX_LENGTH)
    if flags.max_tokens_per_batch < flags.max_length:
        raise UsageError(
            f"--max_tokens_per_batch ({flags.max_tokens_per_batch}) must be at least "
            f"--max_length ({flags.max_length}), so that the longest pair fits a batch."
        )


def check_paths(flags):
    """Checks the files and directories that the flags name, before training.

    Raises:
        UsageError: a data flag matches no TFRecord file, an input file
            cannot be read, or an output directory cannot be written.
    """
    check_run_flags(flags, DATA_WRITER)
    if flags.vocab_file:
        check_input_file("--vocab_file", flags.vocab_file,
                         "the SentencePiece model (.model) of the data")
    check_config_flag(flags.config, sorted(MODELS[flags.model].presets),
                      f"a JSON file of the {flags.model} model's sizes")
    set_flags_from_inputs(flags)


# ---------------------------------------------------------------------------
# The model, data and evaluation


def _transformer_arguments(flags):
    return dict(dropout=flags.dropout, attention_dropout=flags.attention_dropout,
                norm_first=flags.norm_first,
                position_encoding=flags.position_encoding,
                max_sequence_length=max(flags.max_length, 256))


def _rnn_arguments(flags):
    return dict(dropout=flags.dropout, attention=flags.attention)


# The constructor arguments that the flags set, by --model.
_MODEL_ARGUMENTS = {"transformer": _transformer_arguments, "rnn": _rnn_arguments}


def build_translation_model(flags, vocabulary_size):
    """The model of `--model` and `--config` (a preset of that model or a
    JSON file of its constructor arguments) with the model flags."""
    return model_from_config_flag(MODELS[flags.model], flags.config,
                                  **_MODEL_ARGUMENTS[flags.model](flags),
                                  vocabulary_size=vocabulary_size)


def run_config(model):
    """What a run's `config.json` holds: the model serialized by Keras."""
    return keras.saving.serialize_keras_object(model)


def make_decoder(beam_size, length_penalty="gnmt", length_penalty_alpha=0.6):
    """The decoder of the decoding flags: greedy search for a beam of 1."""
    if beam_size == 1:
        return decoding.GreedySearch()
    return decoding.BeamSearch(beam_size=beam_size, length_penalty=length_penalty,
                               alpha=length_penalty_alpha)


def serving_record(flags, vocab_file):
    """What export and translation need besides the checkpoints."""
    record = {"model": "translation", "vocab_file": os.path.abspath(vocab_file),
              "max_length": flags.max_length}
    record.update({name: getattr(flags, name) for name in DECODING_SETTINGS})
    return record


def translation_signatures(model, record):
    """The `TranslationSignatures` of a model and a serving record."""
    return TranslationSignatures(
        model,
        SentencePieceTokenizer(model_file=record["vocab_file"]),
        make_decoder(record["beam_size"], record["length_penalty"],
                     record["length_penalty_alpha"]),
        max_length=record["max_length"],
        max_length_a=record["max_length_a"],
        max_length_b=record["max_length_b"],
    )


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


# ---------------------------------------------------------------------------
# The training-loop task


class TranslationTask:
    """The loss, step sums and metrics of a translation model.

    The loss is the label-smoothed cross-entropy summed over the non-padding
    target tokens of the whole global batch, divided by their number (fairseq
    and the Model Garden normalise by tokens as well). `batch_totals` gives the
    target tokens of a replica's share; the loop sums them over the replicas,
    so each replica's loss is its token sum over the global count and the
    replicas' losses add up to the loss of one replica on the global batch.

    Args:
        model: a `tfnlp.models.seq2seq` model called on
            `{"encoder_token_ids", "decoder_token_ids"}` and returning the
            logits `(batch, target_length, vocabulary)`.
        label_smoothing: ε of the label-smoothed cross-entropy.

    The batches are those of `tfnlp.data.translation_dataset`: `inputs` and
    `targets`, int `(batch, length)`, 0-padded, each ending with `EOS_ID`.

    Example:

    >>> from tfnlp.models import TransformerSeq2Seq
    >>> model = TransformerSeq2Seq.from_preset(
    ...     "tiny", vocabulary_size=50, num_encoder_layers=1, num_decoder_layers=1)
    >>> task = TranslationTask(model, label_smoothing=0.1)
    >>> task.results(dict.fromkeys(task.sum_names, 0.0))["token_accuracy"]
    0.0

    References:
        - [Vaswani et al., 2017. Attention Is All You Need](
          https://arxiv.org/abs/1706.03762)
    """

    sum_names = ("loss_sum", "nll_sum", "target_tokens", "correct", "examples", "tokens")

    def __init__(self, model, label_smoothing=0.1):
        self.model = model
        self.label_smoothing = label_smoothing

    def forward(self, batch, training=None):
        """The logits of the targets, teacher-forced."""
        return self.model(
            {ENCODER_TOKEN_IDS: batch[INPUTS], DECODER_TOKEN_IDS: decoder_inputs(batch[TARGETS])},
            training=training,
        )

    def batch_totals(self, batch):
        """The counts whose global sums normalise the loss."""
        return {"target_tokens": _real_tokens(batch[TARGETS])}

    def loss(self, batch, outputs, totals):
        """This replica's share of the global batch's loss per target token."""
        loss, _ = label_smoothed_cross_entropy(batch[TARGETS], outputs, self.label_smoothing)
        return tf.reduce_sum(loss) / tf.maximum(totals["target_tokens"], 1.0)

    def sums(self, batch, outputs):
        """The summed losses and counts of one (micro-)batch, in float32:
        `loss_sum` (label-smoothed), `nll_sum`, `target_tokens`, `correct`
        (argmax = target), `examples`, and `tokens` (real source plus target
        tokens, for the throughput)."""
        targets = tf.cast(batch[TARGETS], tf.int32)
        loss, nll = label_smoothed_cross_entropy(targets, outputs, self.label_smoothing)
        weights = tf.cast(tf.not_equal(targets, PAD_ID), tf.float32)
        predictions = tf.argmax(outputs, axis=-1, output_type=tf.int32)
        target_tokens = tf.reduce_sum(weights)
        return {
            "loss_sum": tf.reduce_sum(loss),
            "nll_sum": tf.reduce_sum(nll),
            "target_tokens": target_tokens,
            "correct": tf.reduce_sum(weights * tf.cast(tf.equal(predictions, targets),
                                                       tf.float32)),
            "examples": tf.cast(tf.shape(targets)[0], tf.float32),
            "tokens": target_tokens + _real_tokens(batch[INPUTS]),
        }

    @staticmethod
    def results(totals):
        """`loss` (label-smoothed, per target token), `nll_loss`,
        `perplexity` (`exp(nll_loss)`) and `token_accuracy` of sums added up
        over steps."""
        tokens = max(totals["target_tokens"], 1.0)
        nll_loss = totals["nll_sum"] / tokens
        return {
            "loss": totals["loss_sum"] / tokens,
            "nll_loss": nll_loss,
            "perplexity": math.exp(min(nll_loss, 80.0)),
            "token_accuracy": totals["correct"] / tokens,
        }

    @staticmethod
    def step_record(sums):
        """The per-step figures of `train_log.jsonl` besides the loss."""
        return {
            "nll_loss": sums["nll_sum"] / max(sums["target_tokens"], 1.0),
            "target_tokens": sums["target_tokens"],
        }


def _real_tokens(ids):
    return tf.reduce_sum(tf.cast(tf.not_equal(ids, PAD_ID), tf.float32))


# ---------------------------------------------------------------------------
# The run


def run(flags):
    """Trains as the flags say; returns the final step's loss.

    It reads the data with `tfnlp.data.translation_dataset` (batches of
    about `--max_tokens_per_batch` tokens, bucketed by length), trains
    `tfnlp.models.TransformerSeq2Seq` (or, with `--model=rnn
    --attention=...`, `tfnlp.models.RNNSeq2Seq`) on the label-smoothed
    cross-entropy per target token of the global batch
    (`TranslationTask`), and writes into `--model_dir`:

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
    optimizer = optimizer_from_flags(
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


# ---------------------------------------------------------------------------
# Loading and exporting a run


def export_translation_model(model, export_dir, record, text_signatures=True):
    """Exports `model` as the next version of `export_dir`; returns its path.

    Args:
        model: the trained seq2seq model.
        export_dir: the base directory of the versioned exports.
        record: the run's serving record (vocabulary, decoding settings).
        text_signatures: include `serving_default` on text (it needs the
            tensorflow-text ops to load); otherwise `serving_default` is
            `translate_ids`.
    """
    translation = translation_signatures(model, record)
    signatures = translation.signatures(text_signatures)
    assets = {"tokenizer": translation.tokenizer.resource} if text_signatures else {}
    return write_next_version(export_dir, signatures, assets)


def load_translation_model(model_dir, checkpoint=""):
    """The model of a run (`TransformerSeq2Seq` or `RNNSeq2Seq`) with its
    trained weights.

    Args:
        model_dir: a `trainer.translate` run.
        checkpoint: a checkpoint prefix; by default the best one by
            validation BLEU (`best/`), else the latest.
    """
    config = read_run_config(model_dir, "trainer.translate")
    if "class_name" in config:
        model = keras.saving.deserialize_keras_object(config)
    else:  # A run from before config.json named the class: a Transformer.
        model = TransformerSeq2Seq.from_config(config)
    return restore_run_model(model, model_dir, checkpoint)


def export_translation_run(flags, record):
    """Exports a `trainer.translate` run with the decoding flags' overrides."""
    record = dict(record)
    record.update({name: getattr(flags, name) for name in DECODING_SETTINGS
                   if getattr(flags, name) is not None})
    if flags.vocab_file:
        record["vocab_file"] = flags.vocab_file
    model = load_translation_model(flags.model_dir, flags.checkpoint)
    return export_translation_model(model, flags.export_dir, record,
                                    text_signatures=flags.text_signatures)


def add_export_flags(parser):
    """The decoding flags of `trainer.export`, "as the run recorded" unless
    given."""
    add_decoding_flags(parser.add_argument_group("translation (default: as the run recorded)"),
                       recorded=True)


TASK = register_task(TaskEntry(
    names=("translation",),
    summary="A Transformer or LSTM encoder-decoder translating sentence pairs.",
    parse_flags=parse_flags, check_paths=check_paths, run=run,
    export_run=export_translation_run,
    command="translate",
    add_export_flags=add_export_flags,
    check_export_flags=check_decoding_flags,
))
