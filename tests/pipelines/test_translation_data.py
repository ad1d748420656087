"""Tests of the Beam translation-data job, `pipelines.translation_data`, and
of its pieces: reading pairs (`pipelines.translation_pairs`), learning the
SentencePiece model (`pipelines.sentencepiece_model`) and the composite
transform `translation_data.TokenizeTranslationPairs` alone on
`beam.Create` input.

The real-data run is Multi30k En-De train (29,000 pairs) with
`--shared_vocab` at the default 8,000 pieces: measured 29,000 pairs kept,
none dropped, about 9 s on two shared cores.
"""

import collections
import gzip
import json
import pathlib

import apache_beam as beam
import pytest
import sentencepiece
import tensorflow as tf
from apache_beam.io.filesystems import FileSystems
from apache_beam.testing.util import assert_that, equal_to

from pipelines import sentencepiece_model, translation_data, translation_pairs
from pipelines.beam_options import pipeline_options
from pipelines.user_errors import UserError
from tests.pipelines.conftest import dask_arguments
from tests.text.sentencepiece_models import (
    multi30k_job_run, multi30k_lines, multi30k_shared_model, train_model)
from tfnlp.data import example_proto, translation_schema
from tfnlp.text import SentencePieceTokenizer

EOS = translation_schema.EOS_ID


def run_job(output_dir, *arguments):
    return translation_data.main([f"--output_dir={output_dir}", *arguments])


def aligned_arguments(source, target):
    return [f"--source_file={source}", f"--target_file={target}"]


def read_records(output_dir):
    records = []
    for path in sorted(output_dir.glob("translation-*")):
        compression = "GZIP" if path.name.endswith(".gz") else ""
        dataset = tf.data.TFRecordDataset(str(path), compression_type=compression)
        for batch in dataset.batch(8192):
            records.extend(batch.numpy().tolist())
    return records


def parse(record):
    """`(inputs, targets)` of one record (plain protobuf: fast; the schema's
    TensorFlow parser is checked on a few records in
    `test_multi30k_outputs_and_stats_describe_the_records`)."""
    features = example_proto.Example.FromString(record).features.feature
    return (tuple(features[translation_schema.INPUTS].int64_list.value),
            tuple(features[translation_schema.TARGETS].int64_list.value))


def write_pairs(folder, pairs, name="pairs", compress=False):
    """Writes line-aligned files NAME.en / NAME.de (gzip with `compress`)."""
    paths = []
    for language, side in (("en", 0), ("de", 1)):
        data = "".join(pair[side] + "\n" for pair in pairs).encode("utf-8")
        path = folder / f"{name}.{language}{'.gz' if compress else ''}"
        path.write_bytes(gzip.compress(data, mtime=0) if compress else data)
        paths.append(path)
    return paths


def multi30k_pairs(data_dir, count, split="train"):
    source = multi30k_lines(data_dir, split, "en")[:count]
    target = multi30k_lines(data_dir, split, "de")[:count]
    return list(zip(source, target))


@pytest.fixture(scope="module")
def multi30k_run(shared_data_dir):
    """The job on Multi30k train, `--shared_vocab`, defaults otherwise:
    `(stats, output_dir, seconds)`, shared with the tokenizer tests."""
    stats, output, seconds = multi30k_job_run(shared_data_dir)
    return stats, pathlib.Path(output), seconds


@pytest.fixture(scope="module")
def multi30k_records(multi30k_run):
    return read_records(multi30k_run[1])


@pytest.fixture(scope="module")
def model(shared_data_dir):
    """The job's shared Multi30k model (bytes)."""
    return multi30k_shared_model(shared_data_dir)


@pytest.fixture(scope="module")
def model_file(model, tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "multi30k.model"
    path.write_bytes(model)
    return path


def test_multi30k_pairs_are_all_accounted_for(multi30k_run):
    stats, output, seconds = multi30k_run
    assert stats["pairs_read"] == 29_000
    assert stats["pairs_read"] == stats["pairs_kept"] + sum(stats["pairs_dropped"].values())
    assert stats["pairs_dropped_total"] == sum(stats["pairs_dropped"].values())
    assert set(stats["pairs_dropped"]) == set(translation_data.DROP_REASONS)
    # Measured: nothing is longer than 128 ids or 9 times longer than its
    # translation, and both sides are always non-empty.
    assert stats["pairs_kept"] == stats["records_written"] == 29_000
    assert stats["unk_share"] == stats["byte_fallback_share"] == 0.0
    assert json.loads((output / "stats.json").read_text()) == stats
    assert seconds < 60


def test_multi30k_outputs_and_stats_describe_the_records(multi30k_run, multi30k_records,
                                                         model):
    stats, output, _ = multi30k_run
    shards = sorted(path.name for path in output.glob("translation-*"))
    assert shards == [f"translation-{i:05d}-of-00016.tfrecord" for i in range(16)]
    assert stats["shards"] == {"files": str(output / "translation-?????-of-00016.tfrecord"),
                               "num_shards": 16, "gzip": False}
    assert (output / "sentencepiece.model").read_bytes() == model
    assert (output / "sentencepiece.vocab").read_bytes() == (
        sentencepiece_model.vocab_file_bytes(model))
    vocabulary = stats["vocabulary"]
    assert vocabulary["shared"] and vocabulary["learned"]
    assert vocabulary["sample_sentences"] == {"shared": 58_000}
    assert vocabulary["source"] == vocabulary["target"]
    assert vocabulary["source"]["size"] == 8000
    assert vocabulary["source"]["model_file"] == str(output / "sentencepiece.model")
    records = multi30k_records
    pairs = [parse(record) for record in records]
    assert len(pairs) == stats["records_written"]
    for record, pair in zip(records[:5], pairs):
        features = translation_schema.parse_example(tf.constant(record))
        assert (tuple(features["inputs"].numpy()), tuple(features["targets"].numpy())) == pair
        assert pair[0][-1] == pair[1][-1] == EOS
    for side, index in (("source", 0), ("target", 1)):
        lengths = [len(pair[index]) for pair in pairs]
        assert stats[side]["ids"] == sum(lengths) - len(lengths)
        assert stats[side]["mean_length"] == pytest.approx(sum(lengths) / len(lengths))
        histogram = stats[side]["length_histogram"]
        assert len(histogram) == 16 and sum(histogram.values()) == len(pairs)
        assert histogram["0009-0016"] == sum(9 <= n <= 16 for n in lengths)
    assert stats["parameters"]["vocab_size"] == 8000
    assert stats["parameters"]["normalization"] == "nmt_nfkc"


def test_records_hold_the_in_graph_tokenizer_ids_of_every_pair(
        multi30k_run, multi30k_records, shared_data_dir):
    _, output, _ = multi30k_run
    tokenizer = SentencePieceTokenizer(model_file=str(output / "sentencepiece.model"))
    pairs = multi30k_pairs(shared_data_dir, None)
    sides = [tokenizer.tokenize(tf.constant([pair[i] for pair in pairs]),
                                add_eos=True).to_list() for i in (0, 1)]
    expected = collections.Counter(
        (tuple(source), tuple(target)) for source, target in zip(*sides))
    written = collections.Counter(parse(record) for record in multi30k_records)
    assert written == expected


def test_same_bytes_on_two_dask_worker_processes(shared_data_dir, tmp_path, dask_scheduler):
    pairs = multi30k_pairs(shared_data_dir, 1500)
    pairs += pairs[:20]  # duplicates, for --dedupe
    source, target = write_pairs(tmp_path, pairs)
    outputs, stats = {}, {}
    for workers, beam_arguments in ((1, []), ("dask", dask_arguments(dask_scheduler))):
        output = tmp_path / f"workers_{workers}"
        stats[workers] = run_job(
            output, *aligned_arguments(source, target), "--vocab_size=600",
            "--dedupe", "--num_shards=3", "--max_length=24", *beam_arguments)
        outputs[workers] = {path.name: path.read_bytes() for path in output.iterdir()
                            if path.name != "stats.json"}
    assert sorted(outputs[1]) == [
        "source.model", "source.vocab", "target.model", "target.vocab",
        *(f"translation-{i:05d}-of-00003.tfrecord" for i in range(3))]
    assert outputs[1] == outputs["dask"]
    # Each model is SentencePiece's on the side's sentences in sample_key order.
    options = sentencepiece_model.SentencePieceOptions(vocab_size=600)
    for side, index in (("source", 0), ("target", 1)):
        sample = sorted((pair[index] for pair in pairs),
                        key=sentencepiece_model.sample_key)
        assert outputs[1][f"{side}.model"] == sentencepiece_model.train_sentencepiece(
            sample, options)
    for run in stats.values():
        run.pop("parameters")
        for side in ("source", "target"):
            run["vocabulary"][side].pop("model_file")
            run["vocabulary"][side].pop("vocab_file")
        run["shards"].pop("files")
    assert stats[1] == stats["dask"]
    assert stats[1]["pairs_read"] == 1520
    # Some of the 20 repeated pairs are too long, and dropped as such.
    assert stats[1]["pairs_dropped"]["duplicate"] > 0
    assert stats[1]["pairs_dropped"]["too_long"] > 0
    assert stats[1]["vocabulary"]["sample_sentences"] == {"source": 1520, "target": 1520}


def test_different_line_counts_fail_before_the_job(tmp_path):
    (tmp_path / "a.en").write_text("one\ntwo\nthree\n")
    (tmp_path / "a.de").write_text("eins\nzwei")
    output = tmp_path / "out"
    with pytest.raises(ValueError) as error:
        run_job(output, *aligned_arguments(tmp_path / "a.en", tmp_path / "a.de"),
                "--shared_vocab")
    message = str(error.value)
    assert f"{tmp_path / 'a.en'} has 3 lines" in message
    assert f"{tmp_path / 'a.de'} has 2" in message
    assert not output.exists()


def test_globs_pair_sorted_files_and_check_each_pair(tmp_path):
    # Equal totals (5 and 5) but the pairs differ: 3 against 2, then 2 against 3.
    (tmp_path / "part1.en").write_text("a\nb\nc\n")
    (tmp_path / "part1.de").write_text("a\nb\n")
    (tmp_path / "part2.en").write_text("d\ne\n")
    (tmp_path / "part2.de").write_text("c\nd\ne\n")
    with pytest.raises(ValueError, match=r"part1\.en has 3 lines .*part1\.de has 2"):
        run_job(tmp_path / "out", *aligned_arguments(tmp_path / "part*.en",
                                                     tmp_path / "part*.de"))
    (tmp_path / "part3.en").write_text("f\n")
    with pytest.raises(ValueError, match=r"matches 3 files but .* matches 2"):
        translation_pairs.match_aligned_files(str(tmp_path / "part*.en"),
                                              str(tmp_path / "part*.de"))
    with pytest.raises(FileNotFoundError, match="nothing"):
        translation_pairs.match_aligned_files(str(tmp_path / "nothing*"),
                                              str(tmp_path / "part*.de"))
    assert translation_pairs.count_lines(str(tmp_path / "part2.de")) == 3
    (tmp_path / "crlf.txt").write_bytes(b"a\r\nb\rc\r\nlast")
    assert translation_pairs.count_lines(str(tmp_path / "crlf.txt")) == 3


def test_without_the_check_the_job_itself_fails_on_different_lengths(tmp_path, model_file):
    (tmp_path / "a.en").write_text("one\ntwo\nthree\n")
    (tmp_path / "a.de").write_text("eins\nzwei\n")
    with pytest.raises(Exception, match=r"differ in length: .*a\.de ends after 2 lines"):
        run_job(tmp_path / "out", *aligned_arguments(tmp_path / "a.en", tmp_path / "a.de"),
                "--nocheck_line_counts", "--shared_vocab", f"--vocab_file={model_file}")


def test_tsv_jsonl_and_gzip_inputs_give_the_same_shards(shared_data_dir, tmp_path,
                                                       model_file):
    pairs = multi30k_pairs(shared_data_dir, 200, split="val")
    common = ["--shared_vocab", f"--vocab_file={model_file}", "--num_shards=2"]
    source, target = write_pairs(tmp_path, pairs, compress=True)
    aligned = run_job(tmp_path / "aligned", *aligned_arguments(source, target), *common)

    tsv_lines = [f"{s}\t{t}" for s, t in pairs] + ["no tab here", "a\tb\tc", "  "]
    (tmp_path / "pairs.tsv.gz").write_bytes(
        gzip.compress(("\n".join(tsv_lines) + "\n").encode("utf-8")))
    tsv = run_job(tmp_path / "tsv", f"--input_file={tmp_path / 'pairs.tsv.gz'}",
                  "--input_format=tsv", *common)

    jsonl_lines = [json.dumps({"id": i, "translation": {"en": s, "de": t}})
                   for i, (s, t) in enumerate(pairs)]
    jsonl_lines += ["{broken", "[1, 2]", json.dumps({"translation": {"en": "x"}}),
                    json.dumps({"translation": {"en": "x", "de": 3}}), ""]
    (tmp_path / "pairs.jsonl").write_text("\n".join(jsonl_lines) + "\n", encoding="utf-8")
    jsonl = run_job(tmp_path / "jsonl", f"--input_file={tmp_path / 'pairs.jsonl'}",
                    "--input_format=jsonl", "--source_field=translation.en",
                    "--target_field=translation.de", *common)

    assert aligned["pairs_read"] == aligned["pairs_kept"] == 200
    assert tsv["pairs_read"] == 203 and tsv["pairs_kept"] == 200
    assert {k: v for k, v in tsv["pairs_dropped"].items() if v} == {
        "bad_tsv": 2, "blank_line": 1}
    assert jsonl["pairs_read"] == 205 and jsonl["pairs_kept"] == 200
    assert {k: v for k, v in jsonl["pairs_dropped"].items() if v} == {
        "bad_json": 1, "not_object": 1, "missing_field": 1, "field_not_string": 1,
        "blank_line": 1}
    assert aligned["vocabulary"]["learned"] is False
    assert aligned["vocabulary"]["source"]["model_file"] == str(model_file)
    assert not (tmp_path / "aligned" / "sentencepiece.model").exists()
    shards = {name: {path.name: path.read_bytes()
                     for path in (tmp_path / name).glob("translation-*")}
              for name in ("aligned", "tsv", "jsonl")}
    assert len(shards["aligned"]) == 2
    assert shards["aligned"] == shards["tsv"] == shards["jsonl"]


def test_format_flags_must_match_the_input_format(tmp_path):
    with pytest.raises(ValueError, match="--input_file is for --input_format=tsv"):
        translation_pairs.ReadTranslationPairs(input_file="x.tsv")
    with pytest.raises(ValueError, match="--source_file and --target_file are"):
        translation_pairs.ReadTranslationPairs(
            input_format="tsv", source_file="a", target_file="b")


def test_invalid_utf8_is_replaced_and_counted(tmp_path, model_file):
    (tmp_path / "a.en").write_bytes(b"A bad \xff byte.\nFine.\n")
    (tmp_path / "a.de").write_bytes(b"Ein Byte.\nGut.\n")
    stats = run_job(tmp_path / "out", *aligned_arguments(tmp_path / "a.en", tmp_path / "a.de"),
                    "--shared_vocab", f"--vocab_file={model_file}", "--num_shards=1")
    assert stats["pairs_with_invalid_utf8"] == 1
    assert stats["pairs_kept"] == 2
    # The byte becomes U+FFFD, which nmt_nfkc removes (as BERT's
    # errors="ignore" decoding drops it), and the spaces around it collapse.
    processor = sentencepiece.SentencePieceProcessor(model_file=str(model_file))
    expected = translation_schema.serialize_pair(
        processor.encode("A bad byte.") + [EOS], processor.encode("Ein Byte.") + [EOS])
    assert expected in read_records(tmp_path / "out")


def _tokenize_fn(model, max_length=128, ratio=9.0):
    tokenize = translation_data._TokenizePairs(max_length, ratio)
    tokenize.setup()
    tokenize.start_bundle()
    return lambda pair: list(tokenize.process(pair, model, model)), tokenize.counts


def test_length_and_ratio_limits_are_inclusive(model):
    processor = sentencepiece.SentencePieceProcessor(model_proto=model)
    pair = ("Two young guys with shaggy hair look at their hands.", "Hallo.")
    lengths = [len(processor.encode(side)) for side in pair]
    longest = max(lengths) + 1
    tokenize, counts = _tokenize_fn(model, max_length=longest)
    assert len(tokenize(pair)) == 1
    tokenize, counts = _tokenize_fn(model, max_length=longest - 1)
    assert tokenize(pair) == [] and counts["pairs_dropped_too_long"] == 1
    ratio = max(lengths) / min(lengths)
    tokenize, counts = _tokenize_fn(model, ratio=ratio)
    assert len(tokenize(pair)) == 1
    tokenize, counts = _tokenize_fn(model, ratio=ratio - 0.01)
    assert tokenize(pair) == [] and counts["pairs_dropped_length_ratio"] == 1
    tokenize, counts = _tokenize_fn(model, ratio=0)
    assert len(tokenize(pair)) == 1


@pytest.mark.parametrize("dedupe", [True, False])
def test_tokenize_transform_counts_every_drop_reason(model, dedupe):
    processor = sentencepiece.SentencePieceProcessor(model_proto=model)
    kept = [("A dog runs.", "Ein Hund rennt."),
            ("Snow ☃ falls.", "Schnee ☃ fällt.")]  # ☃: byte fallback
    duplicates = [("A dog runs.", "Ein Hund rennt."),
                  ("  A  dog runs. ", "Ein Hund rennt.")]  # the same once normalized
    pairs = kept + duplicates + [
        ("   ", "Ein Hund."),  # empty source
        ("A dog.", "\x01\u200b"),  # empty target once normalized
        ("word " * 200, "Wort " * 10),  # too long
        ("Yes.", 2 * ("Ein Mann in einem blauen Hemd steht auf einer Leiter und "
                      "putzt die Fenster eines hohen Gebäudes in der Innenstadt. ")),
    ]  # the last: 4 ids against 46, a ratio over 9

    def record(pair):
        return translation_schema.serialize_pair(
            processor.encode(pair[0]) + [EOS], processor.encode(pair[1]) + [EOS])

    expected = [record(pair) for pair in kept + ([] if dedupe else duplicates)]
    ratio_pair = pairs[-1]
    assert ratio_pair[0] == "Yes."
    assert len(processor.encode(ratio_pair[1])) > 9 * len(processor.encode(ratio_pair[0]))

    def check_counts(results):
        [counts] = results
        dropped = {reason: counts[f"pairs_dropped_{reason}"]
                   for reason in translation_data.TOKENIZE_DROP_REASONS}
        assert dropped == {"empty": 2, "too_long": 1, "length_ratio": 1,
                           "duplicate": 2 if dedupe else 0}
        assert counts["pairs_kept"] == len(expected)
        assert counts["pairs_kept"] + sum(dropped.values()) == len(pairs)
        assert counts["source_pairs_with_byte_fallback"] == 1
        assert counts["target_byte_ids"] == 3
        assert counts["source_ids"] == sum(
            len(processor.encode(pair[0])) for pair in kept + ([] if dedupe else duplicates))

    pipeline = beam.Pipeline(options=pipeline_options([]))
    models = pipeline | "Model" >> beam.Create([model])
    records, counts = (
        pipeline | "Pairs" >> beam.Create(pairs)
        | translation_data.TokenizeTranslationPairs(models, models, max_length=128,
                                                       dedupe=dedupe))
    assert_that(records, equal_to(expected), label="CheckRecords")
    assert_that(counts, check_counts, label="CheckCounts")
    pipeline.run().wait_until_finish()


def test_stats_refuse_unaccounted_pairs():
    with pytest.raises(RuntimeError, match="unaccounted"):
        translation_data.stats_from_counts(
            {"pairs_read": 3, "pairs_kept": 1, "pairs_dropped_empty": 1},
            {"max_length": 16}, vocabulary={}, shards={})


def test_learning_is_deterministic_with_the_fixed_special_ids(shared_data_dir, tmp_path):
    sentences = multi30k_lines(shared_data_dir, "val", "de")
    sample = sorted(sentences, key=sentencepiece_model.sample_key)
    for model_type in sentencepiece_model.MODEL_TYPES:
        options = sentencepiece_model.SentencePieceOptions(vocab_size=700,
                                                           model_type=model_type)
        first = sentencepiece_model.train_sentencepiece(sample, options)
        assert sentencepiece_model.train_sentencepiece(sample, options) == first
        processor = sentencepiece_model.load_processor(first)
        assert (processor.pad_id(), processor.unk_id(), processor.bos_id(),
                processor.eos_id()) == (0, 1, 2, 3)
        assert processor.get_piece_size() == 700
        assert [processor.id_to_piece(i) for i in (4, 259)] == ["<0x00>", "<0xFF>"]
    # The .vocab file is SentencePiece's own.
    prefix = tmp_path / "spm"
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(sample), model_prefix=str(prefix),
        **options.trainer_arguments())
    assert sentencepiece_model.vocab_file_bytes(first) == (
        tmp_path / "spm.vocab").read_bytes()


def test_learning_errors_say_what_to_change():
    options = sentencepiece_model.SentencePieceOptions(vocab_size=8000)
    # SentencePiece's own reason, and the bound it names as the flag to give.
    with pytest.raises(UserError, match=r"Vocabulary size too high \(8000\)\. Please set it to "
                       r"a value <= (\d+); give --vocab_size=\1 or less, or more text"):
        sentencepiece_model.train_sentencepiece(["a few words", "and more"], options)
    with pytest.raises(UserError, match="No sentence"):
        sentencepiece_model.train_sentencepiece([], options)
    with pytest.raises(ValueError, match="260"):
        sentencepiece_model.SentencePieceOptions(vocab_size=100)


def test_sample_is_the_smallest_hashes_in_order():
    sentences = [f"sentence {i}" for i in range(50)] + ["sentence 7", " ", ""]
    expected = sorted((s for s in sentences if s.strip()),
                      key=sentencepiece_model.sample_key)[:20]
    pipeline = beam.Pipeline(options=pipeline_options([]))
    sample = pipeline | beam.Create(sentences) | sentencepiece_model.SampleSentences(20)
    assert_that(sample, equal_to([expected]))
    pipeline.run().wait_until_finish()


def test_a_given_model_with_other_special_ids_fails_before_the_job(
        shared_data_dir, tmp_path, model_file):
    path = tmp_path / "default_ids.model"
    path.write_bytes(train_model(multi30k_lines(shared_data_dir, "val", "en"),
                                 vocab_size=500))
    (tmp_path / "a.en").write_text("A dog.\n")
    (tmp_path / "a.de").write_text("Ein Hund.\n")
    output = tmp_path / "out"
    with pytest.raises(ValueError, match=r"default_ids\.model has the special ids.*"
                       r"pad_id=0, unk_id=1, bos_id=2, eos_id=3"):
        run_job(output, *aligned_arguments(tmp_path / "a.en", tmp_path / "a.de"),
                f"--vocab_file={model_file},{path}")
    assert not output.exists()


def test_vocab_file_takes_one_model_shared_or_two(capsys):
    base = ["--source_file=a", "--target_file=b", "--output_dir=o"]
    flags, beam_arguments = translation_data.parse_arguments(
        [*base, "--vocab_file=s.model,t.model", "--runner=DirectRunner"])
    assert flags.vocab_file == ["s.model", "t.model"] and not flags.shared_vocab
    assert beam_arguments == ["--runner=DirectRunner"]
    flags, _ = translation_data.parse_arguments([*base, "--vocab_file=m", "--shared_vocab"])
    assert flags.vocab_file == ["m"]
    for arguments in (["--vocab_file=m"], ["--vocab_file=a,b", "--shared_vocab"],
                      ["--vocab_file=m", "--vocab_size=100", "--shared_vocab"],
                      ["--max_length=1"], ["--max_length_ratio=0.5"]):
        with pytest.raises(SystemExit):
            translation_data.parse_arguments([*base, *arguments])
    assert "SOURCE.model,TARGET.model" in capsys.readouterr().err


def test_the_driver_reads_no_corpus_when_building_the_pipeline(tmp_path, monkeypatch):
    """Without the line-count check, building the whole pipeline opens no
    input file: sampling and learning are Beam steps."""
    source, target = write_pairs(tmp_path, [("A dog.", "Ein Hund.")])
    reader = translation_pairs.ReadTranslationPairs(
        source_file=str(source), target_file=str(target), check_line_counts=False)

    def refuse(*args, **kwargs):
        raise AssertionError("the driver opened a file")

    monkeypatch.setattr(FileSystems, "open", refuse)
    monkeypatch.setattr("builtins.open", refuse)
    pipeline = beam.Pipeline(options=pipeline_options([]))
    translation_data.build_pipeline(
        pipeline, reader, str(tmp_path / "out"), shared_vocab=True,
        sentencepiece_options=sentencepiece_model.SentencePieceOptions(),
        parameters={"max_length": 128})
    monkeypatch.undo()
    labels = {transform.unique_name for transform in
              pipeline.to_runner_api().components.transforms.values()}
    assert {"LearnSharedModel/SampleSentences/Smallest",
            "LearnSharedModel/TrainSentencePiece",
            "TokenizePairs/Tokenize"} <= labels


def test_a_given_model_without_byte_fallback_reports_unk(shared_data_dir, tmp_path):
    path = tmp_path / "no_fallback.model"
    path.write_bytes(train_model(multi30k_lines(shared_data_dir, "val", "de"),
                                 vocab_size=500, pad_id=0, unk_id=1, bos_id=2, eos_id=3))
    (tmp_path / "a.en").write_text("Snow ☃.\n")
    (tmp_path / "a.de").write_text("Schnee.\n")
    stats = run_job(tmp_path / "out", *aligned_arguments(tmp_path / "a.en", tmp_path / "a.de"),
                    "--shared_vocab", f"--vocab_file={path}", "--num_shards=1", "--gzip")
    assert stats["source"]["pairs_with_unk"] == 1 and stats["unk_share"] > 0
    shard = tmp_path / "out" / "translation-00000-of-00001.tfrecord.gz"
    assert shard.read_bytes()[:2] == b"\x1f\x8b" and len(read_records(tmp_path / "out")) == 1
    assert any("byte fallback" in warning for warning in stats["warnings"])
    assert stats["parameters"]["vocab_size"] is None
    assert stats["vocabulary"]["source"]["size"] == 500
