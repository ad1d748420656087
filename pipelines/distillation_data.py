"""The transfer set of a distillation, labelled by its teacher, with Apache Beam.

    python -m pipelines.distillation_data \\
      --labelled_file=train.tsv --text_column=sentence --label_column=label \\
      --teacher_export=EXPORT_DIR --output_dir=DIR \\
      [--unlabelled_file=GLOB] [--exclude_file=dev.tsv] \\
      [--augmentations_per_sentence=20] [Beam options: --runner, ...]

Tang et al. (2019) distil a fine-tuned BERT into a small student trained on
the teacher's logits over a transfer set: the labelled training texts,
synthetic texts made from each, and unlabelled in-domain text. This job
makes that set and labels it; `main` and `build_pipeline` say how.
"""

import logging
import os

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from tfnlp.quiet_start import import_quietly

if __name__ == "__main__":
    # `python -m pipelines.distillation_data`: TensorFlow without its start-up lines.
    import_quietly(("tensorflow",))

from pipelines import (distillation_data_flags, distillation_data_stats, job,  # noqa: E402
                       text_input, transfer_set)
from pipelines.sharded_tfrecords import WriteShardedTFRecords, shard_file_name  # noqa: E402
from pipelines.teacher_inference import (LabelTransferSet, TeacherModelHandler,  # noqa: E402
                                         describe_teacher_export)
from tfnlp.command_line import (UsageError, check_input_file,  # noqa: E402
                                check_output_directory, usage_errors)
from tfnlp.data import file_names  # noqa: E402

LOGGER = logging.getLogger(__name__)
SHARD_PREFIX = file_names.DISTILLATION_SHARD_PREFIX
CLASSIFICATION_SUFFIXES = (".csv", ".tsv", ".jsonl", ".json")


def _prefixed(counts, prefix):
    return {prefix + name: value for name, value in counts.items()}


def build_pipeline(pipeline, labelled_texts, labelled_counts, output_dir, *, labels,
                   teacher_handler, teacher_batch_size, statistics_inputs, augmenter=None,
                   read_unlabelled=None,
                   excluded_texts=frozenset(),
                   num_shards=distillation_data_flags.DEFAULT_NUM_SHARDS):
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
    - `DIR/stats.json` (`distillation_data_stats`): every parameter; the
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
            `distillation_data_stats.stats_from_counts`'s "parameters",
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
            _prefixed, distillation_data_stats.UNLABELLED_PREFIX), counts]
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
            distillation_data_stats.stats_from_counts, labels=list(labels),
            unlabelled_files=None if read_unlabelled is None else read_unlabelled.files,
            shards=shards, **statistics_inputs)
        | "WriteStats" >> job.WriteStats(os.path.join(output_dir, file_names.STATS_FILE))
    )


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
    flags, beam_arguments = distillation_data_flags.parse_arguments(argv)
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
        summary_line=distillation_data_stats.summary_line,
        logger=LOGGER,
        output_problems=distillation_data_stats.output_problems,
    )


if __name__ == "__main__":
    job.command_line_main("pipelines.distillation_data")
