"""The command line of `python -m pipelines.distillation_data`: its flags and their checks.

`parse_arguments` parses and checks the flags' values (one usage error
naming every problem); `pipelines.distillation_data.main` then checks the
paths they name (the files read, the teacher's export and its labels, the
output directory written) before the job starts.
"""

from pipelines import job
from pipelines.job_flags import add_num_shards_flag, add_output_dir_flag
from tfnlp.command_line import (
    ArgumentParser,
    add_label_column_flag,
    add_labels_flag,
    add_text_column_flag,
)
from tfnlp.text.augmentation import SWAP_MODES

PROGRAM = "python -m pipelines.distillation_data"
DEFAULT_AUGMENTATIONS = 20
DEFAULT_NUM_SHARDS = 8
DEFAULT_TEACHER_BATCH_SIZE = 64


def build_parser():
    """The job's `tfnlp.command_line.ArgumentParser` (every flag documented)."""
    parser = ArgumentParser(
        prog=PROGRAM,
        description="The transfer set of a distillation (Tang et al. 2019): the labelled "
        "texts, synthetic texts made from them and unlabelled texts, each labelled with "
        "a fine-tuned teacher's logits, as TFRecords, with Beam.",
        epilog="Writes DIR/train-SSSSS-of-NNNNN.tfrecord (text, teacher_logits, label, "
        "origin: tfnlp.data.distillation_schema), DIR/labels.json (the teacher's labels, "
        "class id = index) and DIR/stats.json. Other options go to Beam (--runner, "
        "--direct_num_workers, ...).",
        allow_abbrev=False,
    )
    inputs = parser.add_argument_group("input")
    inputs.add_argument("--labelled_file", required=True,
                        help="The labelled training texts: a CSV or TSV file with a header "
                        "row, or JSON lines, as trainer.finetune reads them.")
    add_text_column_flag(inputs, "--labelled_file and in a CSV/TSV/JSONL --exclude_file")
    add_label_column_flag(inputs, "--labelled_file")
    add_labels_flag(inputs, "the labels its export records (assets.extra/labels.json)",
                    trained=", as the teacher was fine-tuned with",
                    note="Rows with another label are skipped.")
    inputs.add_argument("--unlabelled_file",
                        help="Comma-separated globs of unlabelled in-domain text, one text "
                        "a line (.gz and .bz2 are decompressed).")
    inputs.add_argument("--exclude_file",
                        help="Comma-separated files of texts that no record may hold (the "
                        "dev and test sets): CSV/TSV/JSONL (their --text_column) or plain "
                        "text, one text a line. Texts are compared with their spacing "
                        "collapsed.")
    add_output_dir_flag(parser, "the shards, labels.json and stats.json")

    augmentation = parser.add_argument_group("augmentation (Tang et al. 2019, section 3.2)")
    augmentation.add_argument("--augmentations_per_sentence", type=int,
                              default=DEFAULT_AUGMENTATIONS,
                              help="Synthetic texts drawn from each labelled text (n_iter; "
                              "duplicates and excluded texts are dropped); 0: none.")
    augmentation.add_argument("--mask_probability", type=float, default=0.1,
                              help="The chance that a word becomes --mask_token (p_mask).")
    augmentation.add_argument("--swap_probability", type=float, default=0.1,
                              help="The chance that a word is swapped for another (p_pos).")
    augmentation.add_argument("--ngram_probability", type=float, default=0.25,
                              help="The chance that only an n-gram of a synthetic text is "
                              "kept (p_ng).")
    augmentation.add_argument("--max_ngram_length", type=int, default=5,
                              help="The longest n-gram kept (n is uniform in 1..this).")
    augmentation.add_argument("--swap", choices=SWAP_MODES, default="random",
                              help="random: the new word is drawn from all the labelled "
                              "texts' words by count; part_of_speech: from the words of the "
                              "same tag in --part_of_speech_file.")
    augmentation.add_argument("--part_of_speech_file",
                              help="With --swap=part_of_speech: word<TAB>tag lines (one tag "
                              "a word; words it lacks are never swapped).")
    augmentation.add_argument("--mask_token", default="[MASK]",
                              help="What a masked word becomes in the text.")
    augmentation.add_argument("--seed", type=int, default=0,
                              help="With each text, seeds its synthetic texts.")

    teacher = parser.add_argument_group("teacher")
    teacher.add_argument("--teacher_export", required=True,
                         help="The fine-tuned classifier: the --export_dir of "
                         "trainer.finetune or trainer.export (its newest version), or one "
                         "version directory. Its serving_default takes the texts and gives "
                         "logits.")
    teacher.add_argument("--teacher_batch_size", type=int,
                         default=DEFAULT_TEACHER_BATCH_SIZE,
                         help="The most texts of one teacher call: texts of one word count, "
                         "batched the same way on every runner.")

    records = parser.add_argument_group("records")
    add_num_shards_flag(records, DEFAULT_NUM_SHARDS)
    return parser


def flag_problems(flags):
    """The problems of the parsed flags' values, as sentences (empty: none)."""
    problems = []
    for name in ("num_shards", "teacher_batch_size", "max_ngram_length"):
        if getattr(flags, name) < 1:
            problems.append(f"--{name} must be at least 1, not {getattr(flags, name)}.")
    if flags.augmentations_per_sentence < 0:
        problems.append(f"--augmentations_per_sentence must be at least 0 (0: no synthetic "
                        f"texts), not {flags.augmentations_per_sentence}.")
    for name in ("mask_probability", "swap_probability", "ngram_probability"):
        if not 0 <= getattr(flags, name) <= 1:
            problems.append(f"--{name} must be in [0, 1], not {getattr(flags, name)}.")
    if flags.mask_probability + flags.swap_probability > 1:
        problems.append("--mask_probability + --swap_probability must be at most 1 (a word "
                        "is masked or swapped, never both).")
    if (flags.swap == "part_of_speech") != bool(flags.part_of_speech_file):
        problems.append("--swap=part_of_speech and --part_of_speech_file go together: pass "
                        "both, or neither (--swap=random draws from all words).")
    return problems


def parse_arguments(argv=None):
    """`(flags, beam_arguments)` of the command line `argv` (`sys.argv[1:]`
    when None), the flags checked (`job.parse_job_arguments`: a usage error,
    status 2, names every problem)."""
    return job.parse_job_arguments(build_parser(), flag_problems, argv)
