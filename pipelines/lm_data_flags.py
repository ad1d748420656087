"""The command line of `python -m pipelines.lm_data`: its flags and their checks.

`parse_arguments` parses and checks the flags' values (one usage error
naming every problem); `pipelines.lm_data.main` then checks the paths they
name (inputs matched, the given vocabulary or model read and validated, the
output directory written) before the job starts.
"""

from pipelines import document_texts, job, lm_tokenizers
from pipelines.job_flags import (
    add_gzip_flag,
    add_input_file_flag,
    add_input_format_flag,
    add_max_line_bytes_flag,
    add_num_shards_flag,
    add_output_dir_flag,
    add_sentencepiece_flags,
)
from tfnlp.command_line import ArgumentParser, add_lower_case_flag

PROGRAM = "python -m pipelines.lm_data"
DEFAULT_SEQUENCE_LENGTH = 256
DEFAULT_BUCKET_TOKENS = 1_000_000
DEFAULT_NUM_SHARDS = 8


def build_parser():
    """The job's `tfnlp.command_line.ArgumentParser` (every flag documented)."""
    parser = ArgumentParser(
        prog=PROGRAM,
        description="Causal language-model TFRecords (fixed-length windows of packed "
        "documents) from raw text, with Beam.",
        epilog="Writes DIR/train-SSSSS-of-NNNNN.tfrecord and, with a validation split, "
        "DIR/validation-SSSSS-of-NNNNN.tfrecord (each record: token_ids of "
        "sequence_length + 1 ids, character_count), the tokenizer's file and "
        "DIR/tokenizer.json (read by tfnlp.text.load_language_model_tokenizer), and "
        "DIR/stats.json. Other options go to Beam (--runner, --direct_num_workers, ...).",
        allow_abbrev=False,
    )
    inputs = parser.add_argument_group("input")
    add_input_file_flag(inputs, "the training text (.gz and .bz2 are decompressed)")
    inputs.add_argument("--validation_file",
                        help="Comma-separated globs of validation text, read like "
                        "--input_file; then nothing of --input_file is held out.")
    add_input_format_flag(inputs, "plain text", "one document")
    inputs.add_argument("--document_boundary", choices=document_texts.DOCUMENT_BOUNDARIES,
                        default="blank_line",
                        help="Text input: blank_line (blank lines separate documents, "
                        "each document's own line breaks kept) or file (each file is one "
                        "document, its exact text: one stream, as nanoGPT's "
                        "shakespeare_char).")
    add_max_line_bytes_flag(inputs, "With --document_boundary=blank_line")
    add_output_dir_flag(parser, "the shards, the tokenizer and stats.json")

    tokenizer = parser.add_argument_group("tokenizer")
    tokenizer.add_argument("--tokenizer", choices=lm_tokenizers.KINDS, default="character",
                           help="character: a vocabulary of every character of the "
                           "training split (learned); sentencepiece: a BPE or unigram "
                           "model learned from the training split, or --vocab_file; "
                           "wordpiece: the BERT vocabulary --vocab_file.")
    tokenizer.add_argument("--vocab_file",
                           help="sentencepiece: an existing .model (special ids pad 0, "
                           "unk 1, bos 2, eos 3) instead of learning one; wordpiece: the "
                           "vocabulary, one token a line, with [UNK] and [SEP] (the "
                           "end-of-document token).")
    tokenizer.add_argument("--min_character_count", type=int, default=1,
                           help="character: characters seen fewer times in the training "
                           "split map to <unk>.")
    add_sentencepiece_flags(tokenizer, "bpe", "lines of the training split",
                            mode="sentencepiece")
    add_lower_case_flag(tokenizer, True, "uncased vocabularies", name="lower_case",
                        mode="wordpiece")

    records = parser.add_argument_group("records")
    records.add_argument("--sequence_length", type=int, default=DEFAULT_SEQUENCE_LENGTH,
                         help="The ids a model reads per record; each record holds one "
                         "more (the inputs are ids[:-1], the targets ids[1:]).")
    records.add_argument("--packing_bucket_tokens", type=int, default=DEFAULT_BUCKET_TOKENS,
                         help="About how many ids one worker packs into one stream; each "
                         "stream drops fewer than sequence_length + 1 ids at its end.")
    records.add_argument("--validation_fraction", type=float, default=0.0,
                         help="Share of the documents held out for validation, chosen by "
                         "a hash of their text (0: none).")
    add_num_shards_flag(records, DEFAULT_NUM_SHARDS, "Training TFRecord files")
    records.add_argument("--num_validation_shards", type=int, default=1,
                         help="Validation TFRecord files.")
    add_gzip_flag(records)
    return parser


def flag_problems(flags):
    """The problems of the parsed flags' values, as sentences (empty: none)."""
    problems = []
    positive = ("sequence_length", "max_line_bytes", "min_character_count", "num_shards",
                "num_validation_shards", "vocab_sample_size")
    for name in positive:
        if getattr(flags, name) < 1:
            problems.append(f"--{name} must be at least 1, not {getattr(flags, name)}.")
    if flags.packing_bucket_tokens <= flags.sequence_length:
        problems.append(
            f"--packing_bucket_tokens={flags.packing_bucket_tokens} cannot hold one record "
            f"of --sequence_length + 1 = {flags.sequence_length + 1} ids; give at least "
            "100 times that (each bucket drops up to sequence_length ids at its end).")
    if not 0 <= flags.validation_fraction < 1:
        problems.append(f"--validation_fraction must be in [0, 1), not "
                        f"{flags.validation_fraction}.")
    if flags.validation_file and flags.validation_fraction:
        problems.append("--validation_file and --validation_fraction both give a "
                        "validation split; pass one of them.")
    if flags.tokenizer == "wordpiece" and not flags.vocab_file:
        problems.append("--tokenizer=wordpiece needs --vocab_file (a BERT vocabulary).")
    if flags.tokenizer == "character" and flags.vocab_file:
        problems.append("--tokenizer=character learns its vocabulary; leave out "
                        "--vocab_file (or pass --tokenizer=sentencepiece or wordpiece).")
    if flags.input_format == "jsonl" and flags.document_boundary == "file":
        problems.append("--document_boundary=file is for text input; each jsonl record is "
                        "one document.")
    return problems


def parse_arguments(argv=None):
    """This job's flags and the arguments left for Beam's PipelineOptions.

    Args:
        argv: the arguments without the program name; `sys.argv[1:]` when
            None.

    Returns:
        `(flags, beam_arguments)`.

    Raises:
        SystemExit: a flag is missing, invalid or inconsistent (status 2,
            one line naming every problem).
    """
    return job.parse_job_arguments(build_parser(), flag_problems, argv)
