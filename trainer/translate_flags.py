"""The command line of `python -m trainer.translate`."""

import os

from tfnlp.command_line import (
    ArgumentParser,
    UsageError,
    add_boolean_flag,
    check_input_file,
)
from tfnlp.data.file_names import STATS_FILE
from tfnlp.models.seq2seq import ATTENTIONS
from trainer.model_registry import families_of, model_family
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
    add_train_steps_flag,
    check_config_flag,
    check_counts,
    check_run_flags,
    match_data_files,
)
from trainer.run_files import read_json

LENGTH_PENALTIES = ("gnmt", "average", "none")
MODELS = families_of("translation")
DATA_WRITER = "pipelines.translation_data"
# --max_length when the data's stats.json does not record one.
DEFAULT_MAX_LENGTH = 128


def preset_names(models):
    """`"transformer: base, small; rnn: ..."`, the presets of each model."""
    return "; ".join(f"{name}: {', '.join(sorted(model_family(name).presets))}"
                     for name in models)


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
    if not 0 <= flags.label_smoothing < 1:
        parser.error(f"--label_smoothing must be in [0, 1), got {flags.label_smoothing}.")
    if flags.model == "rnn" and (flags.norm_first or flags.position_encoding != "sinusoidal"
                                 or flags.alignment_heads != "mean"):
        parser.error("--norm_first, --position_encoding and --alignment_heads are "
                     "Transformer flags; the rnn model has one attention and neither of the "
                     "others. Leave them out, or use --model=transformer.")
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
    check_config_flag(flags.config, sorted(model_family(flags.model).presets),
                      f"a JSON file of the {flags.model} model's sizes")
    set_flags_from_inputs(flags)
