"""The transfer set of a distillation, labelled by its teacher, with Apache Beam.

Tang et al. (2019) distil a fine-tuned BERT into a small student trained on
the teacher's logits over a transfer set: the labelled training texts,
synthetic texts made from each, and unlabelled in-domain text. This job
reads those texts and a teacher's export and writes that set, labelled, as
TFRecord shards with DIR/labels.json and DIR/stats.json; `main` and
`build_pipeline` say how.

    python -m pipelines.distillation_data \\
      --labelled_file=train.tsv --text_column=sentence --label_column=label \\
      --teacher_export=EXPORT_DIR --output_dir=DIR \\
      [--unlabelled_file=GLOB] [--exclude_file=dev.tsv] \\
      [--augmentations_per_sentence=20] [Beam options: --runner, ...]
"""

import logging
import os

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from tfnlp.quiet_start import import_quietly

if __name__ == "__main__":
    # `python -m pipelines.distillation_data`: TensorFlow without its start-up lines.
    import_quietly(("tensorflow",))

from pipelines import job, text_input, transfer_set  # noqa: E402
from pipelines.job_flags import add_num_shards_flag, add_output_dir_flag  # noqa: E402
from pipelines.sharded_tfrecords import WriteShardedTFRecords, shard_file_name  # noqa: E402
from pipelines.teacher_inference import (LabelTransferSet, TeacherModelHandler,  # noqa: E402
                                         describe_teacher_export)
from pipelines.transfer_set import AUGMENTATION_COUNTERS  # noqa: E402
from tfnlp.command_line import (  # noqa: E402
    ArgumentParser,
    UsageError,
    add_label_column_flag,
    add_labels_flag,
    add_text_column_flag,
    check_input_file,
    check_output_directory,
    usage_errors,
)
from tfnlp.data import file_names  # noqa: E402
from tfnlp.data.distillation_schema import ORIGINS  # noqa: E402
from tfnlp.text.augmentation import SWAP_MODES  # noqa: E402

LOGGER = logging.getLogger(__name__)
PROGRAM = "python -m pipelines.distillation_data"
DEFAULT_AUGMENTATIONS = 20
DEFAULT_NUM_SHARDS = 8
DEFAULT_TEACHER_BATCH_SIZE = 64
SHARD_PREFIX = file_names.DISTILLATION_SHARD_PREFIX
CLASSIFICATION_SUFFIXES = (".csv", ".tsv", ".jsonl", ".json")
UNLABELLED_PREFIX = "unlabelled_"
ACCOUNTING = (
    "labelled: rows_read == sum(rows_skipped) + rows_excluded + rows_repeated + texts",
    "augmented: candidates == emitted + dropped_duplicates + dropped_excluded; "
    "emitted == texts",
    "unlabelled: lines_read == lines_used + sum(lines_skipped); "
    "lines_used == lines_excluded + texts",
    "every origin: texts == duplicates + written; records_written == sum(written)",
)


# The flags: `parse_arguments` parses and checks their values (one usage
# error naming every problem); `main` then checks the paths they name (the
# files read, the teacher's export and its labels, the output directory
# written) before the job starts, and reads the driver's inputs
# (`read_excluded_texts`, `teacher_labels`, `read_labelled_file`,
# `build_augmenter`).
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

def read_excluded_texts(patterns, text_column):
    """The normalized texts of `--exclude_file`, read before the job.

    Args:
        patterns: comma-separated globs; a CSV, TSV or JSONL file gives the
            texts of its `text_column` (as `tfnlp.data.labelled_files` reads
            such files), any other file one text a line (.gz and .bz2
            decompressed).
        text_column: the column of the texts.

    Returns:
        `(texts, description)`: a frozenset of normalized texts, and the
        stats' "excluded" entry ("files", "rows" read, distinct "texts").

    Raises:
        FileNotFoundError: a glob matches no file.
        UsageError: a CSV/TSV/JSONL file has no `text_column`.
    """
    from tfnlp.data.labelled_files import ReadReport, TextColumns, read_records

    files = text_input.match_input_files(patterns, flag="--exclude_file")
    texts, rows = set(), 0
    for path in files:
        if path.lower().endswith(CLASSIFICATION_SUFFIXES):
            report = ReadReport(path)
            for record in read_records(path, report):
                column = TextColumns(text=text_column).resolved(record.keys()).text
                if column not in record:
                    raise UsageError(
                        f"--exclude_file {path} has no column {text_column!r} (its columns "
                        f"are {sorted(record)}); name the text column with --text_column.")
                texts.add(transfer_set.normalize_text(str(record[column] or "")))
            rows += report.rows
        else:
            with FileSystems.open(path) as file:
                while raw := file.readline():
                    rows += 1
                    text = text_input.decode_line(raw.rstrip(b"\r\n"))[0]
                    texts.add(transfer_set.normalize_text(text))
    texts.discard("")
    return frozenset(texts), {"files": files, "rows": rows, "texts": len(texts)}

def read_part_of_speech(path):
    """`{word: tag}` of a `word<TAB>tag` file (`--part_of_speech_file`).

    Raises:
        UsageError: a non-blank line is not `word<TAB>tag`.
    """
    tags = {}
    with FileSystems.open(path) as file:
        number = 0
        while raw := file.readline():
            number += 1
            line = text_input.decode_line(raw.rstrip(b"\r\n"))[0]
            if not line.strip():
                continue
            parts = line.split("\t")
            if len(parts) != 2 or not parts[0] or not parts[1]:
                raise UsageError(
                    f"--part_of_speech_file {path} line {number} is {line[:60]!r}; expected "
                    "word<TAB>tag.")
            tags[parts[0]] = parts[1]
    return tags

def teacher_labels(flags, teacher):
    """The teacher's labels: `--labels`, else the export's.

    Raises:
        UsageError: neither gives them, their number is not the teacher's
            number of classes, or `--labels` differs from the export's.
    """
    from tfnlp.data.labelled_files import split_labels

    labels = split_labels(flags.labels) if flags.labels else teacher.labels
    if labels is None:
        raise UsageError(
            f"--teacher_export={flags.teacher_export} records no labels (no "
            "assets.extra/labels.json: an export written before tfnlp recorded them); pass "
            "--labels in the teacher's class order (its fine-tuning run's labels.json).")
    if teacher.labels is not None and list(labels) != list(teacher.labels):
        raise UsageError(
            f"--labels={flags.labels} differs from the labels {list(teacher.labels)} that "
            f"--teacher_export={flags.teacher_export} records; leave --labels out to use the "
            "export's.")
    if teacher.num_classes is not None and len(labels) != teacher.num_classes:
        raise UsageError(
            f"--labels names {len(labels)} labels but the teacher gives "
            f"{teacher.num_classes} logits; pass one label per class.")
    if len(labels) < 2:
        raise UsageError(f"The teacher's labels {list(labels)} are fewer than 2 classes.")
    return list(labels)

def read_labelled_file(flags, labels, excluded_texts):
    """The labelled file's distinct texts, their counts and its report.

    Raises:
        UsageError: the file has a text-pair column, or no usable row.
    """
    from tfnlp.data.labelled_files import TextColumns, read_classification

    examples, report = read_classification(
        flags.labelled_file, TextColumns(flags.text_column, "", flags.label_column), labels)
    if any(pair for _, pair, _ in examples):
        raise UsageError(
            f"--labelled_file {flags.labelled_file} holds text pairs (text_a and text_b); "
            "a distillation record holds one text. Name the text column with --text_column.")
    texts, counts = transfer_set.prepare_labelled_texts(
        [(text, label) for text, _, label in examples], labels, excluded_texts)
    if not texts:
        raise UsageError(
            f"--labelled_file gives no usable text ({report.summary()}, "
            f"{counts['labelled_excluded']} excluded); check --text_column, "
            "--label_column and --labels.")
    return texts, counts, report

def build_augmenter(flags, labelled_texts, excluded_texts):
    """The `TransferSetAugmenter` of the flags, or None without
    augmentation; its word counts are the labelled texts'."""
    from tfnlp.text.augmentation import TransferSetAugmenter, count_words

    if not flags.augmentations_per_sentence:
        return None
    part_of_speech = (read_part_of_speech(flags.part_of_speech_file)
                      if flags.swap == "part_of_speech" else None)
    return TransferSetAugmenter(
        count_words(text.split() for text, _ in labelled_texts),
        mask_probability=flags.mask_probability,
        swap_probability=flags.swap_probability,
        ngram_probability=flags.ngram_probability,
        samples_per_sentence=flags.augmentations_per_sentence,
        swap=flags.swap,
        part_of_speech=part_of_speech,
        excluded_sentences=excluded_texts,
        mask_token=flags.mask_token,
        max_ngram_length=flags.max_ngram_length,
        seed=flags.seed,
    )

# The stats: every input row and every transfer-set text accounted for.
# `stats_from_counts` turns the job's summed counts into `DIR/stats.json` and
# checks, raising `RuntimeError` (a bug in the job) when one fails:
#
# - labelled rows: `rows_read == sum(rows_skipped) + rows_excluded +
#   rows_repeated + texts` (skipped by `tfnlp.data.labelled_files`'s reader,
#   equal to an excluded text, equal to an earlier row);
# - synthetic texts: `candidates == emitted + dropped_duplicates +
#   dropped_excluded` and `emitted == texts`;
# - unlabelled lines: `lines_read == lines_used + sum(lines_skipped)` and
#   `lines_used == lines_excluded + texts`;
# - per origin: `texts == duplicates + written` (a duplicate equals a text
#   of an earlier origin, or another text of its own), and `records_written`
#   is the sum of `written`.
#
# The teacher's entry gives its agreement with the gold labels: the share of
# the labelled texts written whose teacher argmax is their label.
def _check(condition, what, section):
    if not condition:
        raise RuntimeError(f"The {what} are unaccounted for: {section}.")

def _selection(counts, origin):
    """An origin's texts given to the selection, its duplicates, its records."""
    return {name: counts.get(f"{origin}_{name}", 0) for name in ("texts", "duplicates",
                                                                  "written")}

def labelled_statistics(counts, report):
    """The labelled file's rows and texts.

    Args:
        counts: the job's summed counts.
        report: the `ReadReport.to_dict()` of the labelled file ("path",
            "rows", "kept", "skipped").
    """
    get = lambda name: counts.get(f"labelled_{name}", 0)  # noqa: E731
    section = {
        "file": report["path"],
        "rows_read": report["rows"],
        "rows_skipped": dict(sorted(report["skipped"].items())),
        "rows_excluded": get("excluded"),
        "rows_repeated": get("repeated"),
        "rows_with_conflicting_label": get("conflicting_labels"),
        **_selection(counts, "labelled"),
    }
    _check(report["kept"] == get("examples") and section["rows_read"] == sum(
        section["rows_skipped"].values()) + get("excluded") + get("repeated")
        + section["texts"], "labelled rows", section)
    return section

def augmented_statistics(counts, parameters):
    """The synthetic texts: the augmenter's statistics and their selection."""
    section = {
        "per_sentence": parameters.get("augmentations_per_sentence", 0),
        **{name: counts.get(f"augmentation_{name}", 0) for name in AUGMENTATION_COUNTERS},
        **_selection(counts, "augmented"),
    }
    _check(section["candidates"] == section["emitted"] + section["dropped_duplicates"]
           + section["dropped_excluded"] and section["emitted"] == section["texts"],
           "synthetic texts", section)
    return section

def unlabelled_statistics(counts, files):
    """The unlabelled lines (`text_input.input_accounting`'s, prefixed in
    the counts) and their texts."""
    lines = text_input.input_accounting({
        name: counts.get(UNLABELLED_PREFIX + name, 0) for name in text_input.COUNTER_NAMES})
    section = {"files": files, **lines, "lines_excluded": counts.get("unlabelled_excluded", 0),
               **_selection(counts, "unlabelled")}
    _check(section["lines_read"] == section["lines_used"] + sum(
        section["lines_skipped"].values()) and section["lines_used"] == section[
        "lines_excluded"] + section["texts"], "unlabelled lines", section)
    return section

def teacher_statistics(counts, teacher, labels):
    """The teacher: its export, labels, predicted classes and agreement."""
    written = counts.get("labelled_written", 0)
    agreeing = counts.get("labelled_teacher_agrees", 0)
    return {
        **teacher,
        "labels": list(labels),
        "agreement_with_gold_labels": job.share(agreeing, written),
        "labelled_texts_agreeing": agreeing,
        "predicted_classes": {
            origin: {label: counts.get(f"{origin}_teacher_class_{index}", 0)
                     for index, label in enumerate(labels)}
            for origin in ORIGINS},
    }

def _warnings(stats):
    warnings = []
    labelled, teacher = stats["labelled"], stats["teacher"]
    unknown = labelled["rows_skipped"].get("unknown label", 0)
    if unknown:
        warnings.append(
            f"{unknown} labelled rows have a label the teacher does not know "
            f"({teacher['labels']}); check --labels and --label_column.")
    if labelled["rows_with_conflicting_label"]:
        warnings.append(
            f"{labelled['rows_with_conflicting_label']} labelled rows repeat an earlier "
            "text with another label; the first row's label is kept.")
    classes = len(teacher["labels"])
    if labelled["written"] and teacher["agreement_with_gold_labels"] < 1 / classes:
        warnings.append(
            f"The teacher agrees with {teacher['agreement_with_gold_labels']:.1%} of the gold "
            f"labels, no better than chance over {classes} classes: check that --labels "
            "(or the export's labels) are in the teacher's class order.")
    if stats["unlabelled"] is None and not stats["augmented"]["texts"]:
        warnings.append("The transfer set holds the labelled texts only: pass "
                        "--augmentations_per_sentence or --unlabelled_file for more.")
    return warnings

def stats_from_counts(counts, parameters, labelled_report, teacher, labels, excluded,
                      unlabelled_files, shards):
    """The stats.json dict.

    Args:
        counts: the job's summed counts: the driver's labelled counts
            (`transfer_set.prepare_labelled_texts`), the unlabelled
            reader's (prefixed "unlabelled_"), and those of
            `DropExcludedTexts`, `AugmentTexts`, `SelectTransferTexts` and
            `LabelTransferSet`.
        parameters: every flag and "beam_arguments".
        labelled_report: the labelled file's `ReadReport.to_dict()`.
        teacher: the teacher's description ("export", "num_classes",
            "batch_size", ...).
        labels: the teacher's label list.
        excluded: the exclusion's description ("files", "rows", "texts").
        unlabelled_files: the unlabelled files read, or None.
        shards: the "shards" entry ("files", "num_shards").

    Returns:
        The dict with "parameters", "labelled", "augmented", "unlabelled"
        (None without unlabelled files), "excluded", "records_written",
        "records_by_origin", "teacher", "shards", "accounting" and
        "warnings".

    Raises:
        RuntimeError: something is unaccounted for (see the stats'
            comment).
    """
    counts = dict(counts)
    stats = {
        "parameters": parameters,
        "labelled": labelled_statistics(counts, labelled_report),
        "augmented": augmented_statistics(counts, parameters),
        "unlabelled": (None if unlabelled_files is None
                       else unlabelled_statistics(counts, unlabelled_files)),
        "excluded": excluded,
    }
    by_origin = {origin: counts.get(f"{origin}_written", 0) for origin in ORIGINS}
    for origin in ORIGINS:
        section = stats[origin] or _selection(counts, origin)
        _check(section["texts"] == section["duplicates"] + section["written"]
               == counts.get(f"{origin}_duplicates", 0) + counts.get(f"{origin}_selected", 0),
               f"{origin} texts", section)
    stats.update({
        "records_written": sum(by_origin.values()),
        "records_by_origin": by_origin,
        "teacher": teacher_statistics(counts, teacher, labels),
        "shards": shards,
        "accounting": list(ACCOUNTING),
    })
    stats["warnings"] = _warnings(stats)
    return stats

def _prefixed(counts, prefix):
    return {prefix + name: value for name, value in counts.items()}

def output_problems(stats):
    """`(error, warnings)` for `job.run_job`: no record is an error; no
    unlabelled record, from the `--unlabelled_file` given, a warning (its
    lines may all repeat other texts)."""
    labelled, unlabelled = stats["labelled"], stats["unlabelled"]
    error = None
    if not stats["records_written"]:
        error = (f"wrote no record: the {labelled['rows_read']} labelled rows gave no text "
                 f"(skipped {sum(labelled['rows_skipped'].values())}, excluded "
                 f"{labelled['rows_excluded']}, repeated {labelled['rows_repeated']}) and "
                 "nothing else was added; check --labelled_file, its columns and "
                 "--exclude_file")
    warnings = []
    if unlabelled is not None and not unlabelled["written"]:
        warnings.append(
            f"wrote no unlabelled record: the {unlabelled['lines_read']} lines of "
            f"--unlabelled_file gave {unlabelled['texts']} new texts (excluded "
            f"{unlabelled['lines_excluded']}, duplicates {unlabelled['duplicates']})")
    return error, warnings

def summary_line(stats, seconds):
    """The line `job.run_job` logs: the records by origin, the input, the
    teacher's agreement with the gold labels."""
    by_origin = ", ".join(f"{origin} {count}" for origin, count in
                          stats["records_by_origin"].items())
    return (
        f"Wrote {stats['records_written']} records ({by_origin}) to "
        f"{stats['shards']['files']} in {seconds:.1f} s from "
        f"{stats['labelled']['rows_read']} labelled rows; the teacher agrees with "
        f"{stats['teacher']['agreement_with_gold_labels']:.2%} of their gold labels."
    )

def build_pipeline(pipeline, labelled_texts, labelled_counts, output_dir, *, labels,
                   teacher_handler, teacher_batch_size, statistics_inputs, augmenter=None,
                   read_unlabelled=None,
                   excluded_texts=frozenset(),
                   num_shards=DEFAULT_NUM_SHARDS):
    """Adds the whole job to `pipeline`.

    1. `transfer_set.AugmentTexts`: up to `--augmentations_per_sentence`
       synthetic texts per labelled text (words masked or swapped, n-grams
       cut out), none equal to an excluded text.
    2. `text_input.ReadTextLines` reads `--unlabelled_file`, every line
       counted; `transfer_set.DropExcludedTexts` drops the excluded texts.
    3. `transfer_set.SelectTransferTexts`: one record per distinct text, a
       labelled text winning over the same text augmented or unlabelled,
       each keyed by the SHA-256 of its text.
    4. `teacher_inference.LabelTransferSet`: the texts are cut into batches
       of up to `teacher_batch_size` texts of one word count, fixed by the
       data alone (`teacher_inference.TeacherBatches`); Beam's
       `RunInference` with `TeacherModelHandler` gives each text its
       logits; each becomes a record of `tfnlp.data.distillation_schema`.
    5. `WriteShardedTFRecords` writes the shards, sorted; the labels and the
       stats are written beside them.

    It writes, through Beam's filesystems:

    - `DIR/train-SSSSS-of-NNNNN.tfrecord`: `text`, `teacher_logits`,
      `label` (the gold class id of a labelled text, else -1) and `origin`
      ("labelled", "augmented" or "unlabelled");
    - `DIR/labels.json`: the teacher's labels (class id = index);
    - `DIR/stats.json` (`stats_from_counts`): every parameter; the
      labelled rows (read, skipped by reason, excluded, repeated, with a
      conflicting label), the synthetic texts (candidates, emitted, dropped
      as duplicates or as excluded), the unlabelled lines (read, skipped,
      excluded); per origin the texts, the duplicates and the records
      written; the teacher (its export, labels, predicted classes per
      origin, and its agreement with the gold labels); all checked to add
      up.

    Determinism: a text's synthetic texts depend on the text and `--seed`,
    its record on the text and the teacher (every teacher call has the same
    shape), and the shards are sorted by the records' bytes, so on the same
    hardware the files are byte-identical whatever the runner or the number
    of workers. Scale: the unlabelled text is read in parallel; each worker
    loads the teacher once.

    Args:
        pipeline: a `beam.Pipeline`.
        labelled_texts: `(text, class_id)` of the distinct labelled texts
            (`transfer_set.prepare_labelled_texts`).
        labelled_counts: that function's counts.
        output_dir: where the shards, labels.json and stats.json go.
        labels: the teacher's labels (class id = index).
        teacher_handler: the teacher's `TeacherModelHandler`.
        teacher_batch_size: the most texts of one teacher call.
        statistics_inputs: what the stats record besides the counts:
            `stats_from_counts`'s "parameters",
            "labelled_report", "teacher" and "excluded".
        augmenter: the `TransferSetAugmenter`, or None for no synthetic
            texts.
        read_unlabelled: the `text_input.ReadTextLines` of the unlabelled
            files, or None.
        excluded_texts: the normalized texts that no record may hold.
        num_shards: the number of shards (`WriteShardedTFRecords`).
    """
    from tfnlp.export.saved_model import labels_file_bytes  # the export's format

    labelled = pipeline | "LabelledTexts" >> beam.Create(labelled_texts)
    all_counts = [pipeline | "LabelledCounts" >> beam.Create([labelled_counts])]
    texts = {transfer_set.LABELLED: labelled}
    if augmenter is not None:
        texts[transfer_set.AUGMENTED], counts = (
            labelled | "LabelledTextsAlone" >> beam.Keys()
            | "Augment" >> transfer_set.AugmentTexts(augmenter))
        all_counts.append(counts)
    if read_unlabelled is not None:
        lines, read_counts = pipeline | "ReadUnlabelled" >> read_unlabelled
        texts[transfer_set.UNLABELLED], counts = lines | "ExcludeUnlabelled" >> (
            transfer_set.DropExcludedTexts(excluded_texts, transfer_set.UNLABELLED))
        all_counts += [read_counts | "PrefixUnlabelledCounts" >> beam.Map(
            _prefixed, UNLABELLED_PREFIX), counts]
    selected, counts = texts | "SelectTexts" >> transfer_set.SelectTransferTexts()
    records, teacher_counts = selected | "Teacher" >> LabelTransferSet(
        teacher_handler, len(labels), teacher_batch_size)
    all_counts += [counts, teacher_counts]
    prefix = os.path.join(output_dir, SHARD_PREFIX)
    _ = records | "WriteShards" >> WriteShardedTFRecords(prefix, num_shards)
    _ = (pipeline | "Labels" >> beam.Create([labels_file_bytes(labels)])
         | "WriteLabels" >> beam.Map(job.write_file,
                                     os.path.join(output_dir, file_names.LABELS_FILE)))
    shards = {"files": shard_file_name(prefix, 0, num_shards, ".tfrecord").replace(
        "-00000-of-", "-?????-of-"), "num_shards": num_shards}
    _ = (
        all_counts
        | "AllCounts" >> beam.Flatten()
        | "SumCounts" >> beam.CombineGlobally(job.SumCounts())
        | "Stats" >> beam.Map(
            stats_from_counts, labels=list(labels),
            unlabelled_files=None if read_unlabelled is None else read_unlabelled.files,
            shards=shards, **statistics_inputs)
        | "WriteStats" >> job.WriteStats(os.path.join(output_dir, file_names.STATS_FILE))
    )

def main(argv=None):
    """Runs the job on the command line `argv` (see `pipelines.job`).

    Before the job, on the driver: the teacher's export is checked from its
    `saved_model.pb` (`teacher_inference.describe_teacher_export`: a
    `serving_default` taking strings and giving `logits`); its labels are
    `--labels` or those its export records; the labelled file is read as
    `trainer.finetune` reads it
    (`tfnlp.data.labelled_files.read_classification`, rows with an unknown
    label skipped); the texts of `--exclude_file` are read; the labelled
    texts are normalized (spacing collapsed), those equal to an excluded
    text dropped, repeats dropped (`transfer_set.prepare_labelled_texts`);
    and the augmenter is built from their words
    (`tfnlp.text.augmentation.TransferSetAugmenter`). Then
    `build_pipeline`'s job runs.

    Returns:
        The stats dict, as written to DIR/stats.json.

    Raises:
        FileNotFoundError: an input glob matches no file (before anything
            is written or run).
        UsageError (a ValueError): an input cannot be read or is not what
            it should be (the teacher's export, its labels, the labelled
            file's columns), or `--output_dir` cannot be written (all
            before anything is written or run).
        RuntimeError: the pipeline did not finish successfully.
    """
    flags, beam_arguments = parse_arguments(argv)
    check_input_file("--labelled_file", flags.labelled_file,
                     "a CSV, TSV or JSONL file of texts and labels")
    if flags.part_of_speech_file:
        check_input_file("--part_of_speech_file", flags.part_of_speech_file,
                         "word<TAB>tag lines")
    if flags.unlabelled_file:
        text_input.match_input_files(flags.unlabelled_file, flag="--unlabelled_file")
    with usage_errors(ValueError):
        teacher = describe_teacher_export(flags.teacher_export)
    with usage_errors(ValueError):
        labels = teacher_labels(flags, teacher)
        excluded_texts, excluded = (read_excluded_texts(flags.exclude_file, flags.text_column)
                                    if flags.exclude_file else
                                    (frozenset(), {"files": [], "rows": 0, "texts": 0}))
        labelled_texts, labelled_counts, report = read_labelled_file(
            flags, labels, excluded_texts)
        augmenter = build_augmenter(flags, labelled_texts, excluded_texts)
        read_unlabelled = (text_input.ReadTextLines(flags.unlabelled_file, "text")
                           if flags.unlabelled_file else None)
    check_output_directory("--output_dir", flags.output_dir)
    if not FileSystems.exists(flags.output_dir):
        FileSystems.mkdirs(flags.output_dir)
    statistics_inputs = {
        "parameters": {**vars(flags), "beam_arguments": list(beam_arguments)},
        "labelled_report": report.to_dict(),
        "teacher": {"export": teacher.path, "num_classes": len(labels),
                    "batch_size": flags.teacher_batch_size},
        "excluded": excluded,
    }
    return job.run_job(
        lambda pipeline: build_pipeline(
            pipeline, labelled_texts, labelled_counts, flags.output_dir,
            labels=labels,
            teacher_handler=TeacherModelHandler(teacher.path),
            teacher_batch_size=flags.teacher_batch_size,
            augmenter=augmenter,
            read_unlabelled=read_unlabelled,
            excluded_texts=excluded_texts,
            num_shards=flags.num_shards,
            statistics_inputs=statistics_inputs,
        ),
        beam_arguments,
        name="distillation-data",
        stats_file=os.path.join(flags.output_dir, file_names.STATS_FILE),
        summary_line=summary_line,
        logger=LOGGER,
        output_problems=output_problems,
    )

if __name__ == "__main__":
    job.command_line_main("pipelines.distillation_data")
