"""Translates a text file, one sentence per line.

    python -m trainer.translate_text --model_dir=RUN < input.txt > output.txt
    python -m trainer.translate_text --export_dir=EXPORT_DIR \\
        --input_file=val.en --output_file=val.hyp.de

With `--model_dir` (a `trainer.translate` run) the model of its best
checkpoint by validation BLEU (else the latest, or `--checkpoint`) decodes
as the run recorded, or as the decoding flags say; with `--export_dir` (a
directory of versioned SavedModels, or one version) the newest version's
`serving_default` translates, with the decoding fixed at export. Either
way, line N of the output is the translation of line N of the input (a
blank line stays blank), detokenized, ready for `sacrebleu REF < output`.
Lines are translated in batches of `--batch_size`, sorted by length so
that a batch holds sentences of similar length.
"""

import logging
import os
import sys

import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the SentencePiece ops of exports)

from tfnlp.command_line import (
    ArgumentParser,
    UsageError,
    check_input_directory,
    check_input_file,
    check_output_file,
    run_main,
)
from tfnlp.export.versions import version_paths
from trainer import run_files, runtime
from trainer.run_flags import add_checkpoint_flag
from trainer.tasks.translation import (
    DECODING_SETTINGS,
    add_decoding_flags,
    check_decoding_flags,
    load_translation_model,
    translation_signatures,
)

LOGGER = logging.getLogger("trainer.translate_text")


def parse_flags(argv=None):
    """Parses and checks the flags; exits with a usage message on errors."""
    parser = ArgumentParser(
        prog="python -m trainer.translate_text",
        description="Translates a text file, one sentence per line.",
        allow_abbrev=False,
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--model_dir", help="A trainer.translate run.")
    source.add_argument("--export_dir",
                        help="A translation SavedModel: its base directory (the newest "
                             "version is used) or one version's directory.")
    add_checkpoint_flag(parser, "the best by validation BLEU", mode="With --model_dir")
    parser.add_argument("--input_file", default="-", help="The source text ('-': stdin).")
    parser.add_argument("--output_file", default="-", help="The translations ('-': stdout).")
    parser.add_argument("--batch_size", type=int, default=64,
                        help="Sentences translated at once (sorted by length first).")
    add_decoding_flags(parser.add_argument_group(
        "decoding, with --model_dir (default: as the run recorded)"), recorded=True)
    flags = parser.parse_args(argv)
    if flags.batch_size < 1:
        parser.error(f"--batch_size must be at least 1, got {flags.batch_size}.")
    check_decoding_flags(parser, flags)
    return flags


def check_paths(flags):
    """Checks the model, the input and the output that the flags name,
    before loading the model.

    Raises:
        UsageError: the model or the input cannot be read, or the output
            cannot be written.
    """
    if flags.model_dir:
        check_input_directory("--model_dir", flags.model_dir,
                              "the model_dir of a `python -m trainer.translate` run")
    else:
        check_input_directory("--export_dir", flags.export_dir,
                              "a translation SavedModel (the --export_dir of "
                              "trainer.translate or trainer.export)")
    if flags.input_file != "-":
        check_input_file("--input_file", flags.input_file, "a text file, one sentence a line")
    if flags.output_file != "-":
        check_output_file("--output_file", flags.output_file)


def model_translator(model_dir, checkpoint="", **decoding):
    """A function from a batch of strings to their translations, for a run."""
    record = run_files.read_serving_record(model_dir)
    if record.get("model") != "translation":
        raise UsageError(
            f"{model_dir} is not the model_dir of a `python -m trainer.translate` run "
            "(its serving.json does not say model=translation)."
        )
    record.update({name: value for name, value in decoding.items() if value is not None})
    signatures = translation_signatures(load_translation_model(model_dir, checkpoint), record)
    translate = tf.function(signatures.translate_text, reduce_retracing=True)
    return lambda sentences: translate(tf.constant(sentences))["translations"].numpy()


def export_translator(export_dir):
    """A function from a batch of strings to their translations, for an export."""
    if not tf.io.gfile.exists(os.path.join(export_dir, "saved_model.pb")):
        versions = version_paths(export_dir)
        if not versions:
            raise FileNotFoundError(
                f"--export_dir={export_dir!r} holds no SavedModel (no saved_model.pb and "
                "no numbered version directory). Pass the --export_dir of "
                "trainer.translate or trainer.export."
            )
        export_dir = versions[max(versions)]
    serving = tf.saved_model.load(export_dir).signatures["serving_default"]
    return lambda sentences: serving(inputs=tf.constant(sentences))["translations"].numpy()


def translate_lines(lines, translate, batch_size):
    """The translations of `lines` (blank lines give blank translations)."""
    order = sorted((index for index, line in enumerate(lines) if line.strip()),
                   key=lambda index: len(lines[index]))
    translations = [""] * len(lines)
    for start in range(0, len(order), batch_size):
        indices = order[start : start + batch_size]
        for index, text in zip(indices, translate([lines[index] for index in indices])):
            translations[index] = text.decode("utf-8")
    return translations


def main(argv=None):
    runtime.configure_logging()
    flags = parse_flags(argv)
    check_paths(flags)
    if flags.model_dir:
        translate = model_translator(
            flags.model_dir, flags.checkpoint,
            **{name: getattr(flags, name) for name in DECODING_SETTINGS})
    else:
        translate = export_translator(flags.export_dir)
    if flags.input_file == "-":
        lines = sys.stdin.read().splitlines()
    else:
        with tf.io.gfile.GFile(flags.input_file) as file:
            lines = file.read().splitlines()
    translations = translate_lines(lines, translate, flags.batch_size)
    text = "".join(line + "\n" for line in translations)
    if flags.output_file == "-":
        sys.stdout.write(text)
    else:
        with tf.io.gfile.GFile(flags.output_file, "w") as file:
            file.write(text)
    LOGGER.info("Translated %d lines.", len(lines))
    return translations


if __name__ == "__main__":
    run_main(main)
