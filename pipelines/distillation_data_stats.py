"""The stats of `python -m pipelines.distillation_data`: every input row and
every transfer-set text accounted for.

`stats_from_counts` turns the job's summed counts into `DIR/stats.json` and
checks, raising `RuntimeError` (a bug in the job) when one fails:

- labelled rows: `rows_read == sum(rows_skipped) + rows_excluded +
  rows_repeated + texts` (skipped by `tfnlp.data.labelled_files`'s reader,
  equal to an excluded text, equal to an earlier row);
- synthetic texts: `candidates == emitted + dropped_duplicates +
  dropped_excluded` and `emitted == texts`;
- unlabelled lines: `lines_read == lines_used + sum(lines_skipped)` and
  `lines_used == lines_excluded + texts`;
- per origin: `texts == duplicates + written` (a duplicate equals a text
  of an earlier origin, or another text of its own), and `records_written`
  is the sum of `written`.

The teacher's entry gives its agreement with the gold labels: the share of
the labelled texts written whose teacher argmax is their label.
"""

from pipelines import job, text_input
from pipelines.transfer_set import AUGMENTATION_COUNTERS
from tfnlp.data.distillation_schema import ORIGINS

UNLABELLED_PREFIX = "unlabelled_"
ACCOUNTING = (
    "labelled: rows_read == sum(rows_skipped) + rows_excluded + rows_repeated + texts",
    "augmented: candidates == emitted + dropped_duplicates + dropped_excluded; "
    "emitted == texts",
    "unlabelled: lines_read == lines_used + sum(lines_skipped); "
    "lines_used == lines_excluded + texts",
    "every origin: texts == duplicates + written; records_written == sum(written)",
)


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
        RuntimeError: something is unaccounted for (see the module
            docstring).
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
