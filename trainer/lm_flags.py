"""The command line of `python -m trainer.lm`."""

from tfnlp.command_line import ArgumentParser
from trainer.model_registry import families_of, model_family
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
    add_train_steps_flag,
    check_config_flag,
    check_counts,
    check_run_flags,
)
from trainer.translate_flags import preset_names

MODELS = families_of("language_model")
DATA_WRITER = "pipelines.lm_data"
# The prompts whose continuations are logged at each evaluation.
DEFAULT_SAMPLE_PROMPTS = ("\n", "The ", "ROMEO:")


def language_model_parser():
    """The `argparse` parser of the language-model trainer's flags."""
    parser = ArgumentParser(
        prog="python -m trainer.lm",
        description="Trains a decoder-only (GPT-style) language model on tf.distribute.",
        allow_abbrev=False,
    )
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
    model.add_argument("--model", choices=MODELS, default=MODELS[0],
                       help="The decoder family.")
    add_preset_config_flag(model, preset_names(MODELS), "the model's constructor arguments")
    model.add_argument("--dropout", type=float, default=0.1,
                       help="Dropout of the embeddings, the attention weights and each "
                            "sublayer's output.")

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
    if not 0 <= flags.dropout < 1:
        parser.error(f"--dropout must be in [0, 1), got {flags.dropout}.")
    if not 0 < flags.sample_top_p <= 1:
        parser.error(f"--sample_top_p must be in (0, 1], got {flags.sample_top_p}.")
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
    check_config_flag(flags.config, sorted(model_family(flags.model).presets),
                      f"a JSON file of the {flags.model} model's arguments")
