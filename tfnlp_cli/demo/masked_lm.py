"""Masked-word prediction on Tiny Shakespeare, from raw text to a served BERT.

The default demo (`make demo`, `tfnlp demo`). It needs nothing outside the
repository: it reads `demo/data/tinyshakespeare.txt` (see the README there;
an installed tfnlp ships it as `tfnlp_cli/demo/data`), and runs the
product's entry points one after the other on it; `run` lists the stages
and what they write.
"""

import collections
import dataclasses
import json
import logging
import math
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

from pipelines import pretraining_data, wordpiece_vocab
from tfnlp.command_line import USER_ERRORS, UsageError
from trainer import export, pretrain, run_files

LOGGER = logging.getLogger("demo")



def embedded_text_path():
    """The embedded text: `tfnlp_cli/demo/data/tinyshakespeare.txt` where
    setup.py installed it, else the checkout's `demo/data/tinyshakespeare.txt`."""
    package = os.path.dirname(os.path.abspath(__file__))
    installed = os.path.join(package, "data", "tinyshakespeare.txt")
    if os.path.isfile(installed):
        return installed
    return os.path.join(os.path.dirname(os.path.dirname(package)), "demo", "data",
                        "tinyshakespeare.txt")


EMBEDDED_TEXT = embedded_text_path()
# The stages in order, and the folder of --output_dir each one writes.
STAGE_DIRECTORIES = {
    "text": "text",
    "vocabulary": "vocabulary",
    "pretraining data": "pretraining_data",
    "training": "run",
    "export": "export",
    "serving": "serving",
}
# The demo's model (`--config=demo`): the "tiny" preset's sizes (2 layers of
# width 128, 2 heads), its weights drawn with a standard deviation of 0.08
# (about 1/sqrt(128)) rather than BERT's 0.02. Measured on this corpus (32
# tokens a sequence, 30% of them masked, 1,500 steps of 64): the trainer's
# masked-LM accuracy over the last 300 steps is 25%, against 17% with 0.02.
# With 0.02 the attention stays near uniform for longer, and until it looks
# at the neighbouring words the model only learns how frequent each word is.
DEMO_MODEL = {"hidden_size": 128, "num_layers": 2, "num_heads": 2, "intermediate_size": 512,
              "initializer_range": 0.08}
MODEL_NAME = "shakespeare"
FILL_MASK_SIGNATURE = "fill_mask"
TOP_K = 5
# Instances per predict request: under the server's default limit of 128.
INSTANCES_PER_REQUEST = 64
# Lines not from the corpus, sent as well, to show what the model makes of them.
EXTRA_LINES = ("to be or not to [MASK].",)
# A word of a line: a run of ASCII letters (the corpus is ASCII), which is
# one word of BERT's basic tokenizer when no digit or apostrophe touches it.
WORD = re.compile(r"[A-Za-z]+")
SERVER_START_SECONDS = 300
SERVER_STOP_SECONDS = 30
REQUEST_SECONDS = 60


class StageFailed(RuntimeError):
    """A stage of the demo raised; the message names the stage and the error.

    Attributes:
        stage: the stage's name (a key of `STAGE_DIRECTORIES`).
    """

    def __init__(self, stage, error):
        self.stage = stage
        super().__init__(f'stage "{stage}" failed: {describe_error(error)}')


def is_user_error(error):
    """Whether `error` is a mistake in the demo's flags or files (said in
    one line), rather than a fault (which keeps its traceback)."""
    return isinstance(error, (SystemExit, UsageError, *USER_ERRORS))


def describe_error(error):
    """One line for an exception: its class and message, or for the
    `SystemExit` of a command line's usage error, its exit status (the
    command line printed its message on stderr, above)."""
    if isinstance(error, SystemExit):
        if isinstance(error.code, str):
            return error.code
        return f"its command line exited with status {error.code} (its message is above)"
    return f"{type(error).__name__}: {error}"


# ---------------------------------------------------------------------------
# Stage "text": the held-out split and BERT's input format


@dataclasses.dataclass
class Speech:
    """One speech of the corpus: the speaker's line ("" when the block has
    none) and the lines spoken."""

    speaker: str
    lines: list


@dataclasses.dataclass
class PreparedText:
    """What `prepare_text` wrote and counted.

    Attributes:
        train_file: the training passages in BERT's format (one line a
            sentence, a blank line between documents).
        heldout_file: the held-out lines spoken, one a line.
        training_lines: the lines spoken of the training part.
        heldout_lines: the lines spoken of the held-out part.
        stats: the accounting of every corpus line (see `prepare_text`).
    """

    train_file: str
    heldout_file: str
    training_lines: list
    heldout_lines: list
    stats: dict


def read_corpus(path, max_lines=0):
    """The lines of `path`, without their line ends; the first `max_lines`
    only when it is more than 0."""
    with open(path, encoding="utf-8") as file:
        lines = file.read().splitlines()
    return lines[:max_lines] if max_lines else lines


def heldout_start(lines, heldout_percent):
    """The index of the first held-out line: the first line that starts a
    speech (a non-blank line after a blank one) among the last
    `heldout_percent` of `lines`, so that no speech is cut in two; `len(lines)`
    when there is none."""
    index = len(lines) - math.ceil(len(lines) * heldout_percent / 100)
    while index < len(lines) and not (
            lines[index].strip() and (index == 0 or not lines[index - 1].strip())):
        index += 1
    return index


def split_speeches(lines):
    """The speeches of `lines`: runs of non-blank lines; the first line of a
    run is the speaker's when it ends with a colon ("First Citizen:")."""
    speeches, block = [], []
    for line in [*lines, ""]:
        if line.strip():
            block.append(line)
            continue
        if block:
            has_speaker = block[0].rstrip().endswith(":")
            speeches.append(Speech(block[0] if has_speaker else "",
                                   block[1:] if has_speaker else block))
        block = []
    return speeches


def group_passages(speeches, passage_lines):
    """The lines spoken of consecutive speeches, grouped into passages of at
    least `passage_lines` lines (a speech is never split; the last passage
    may be shorter)."""
    passages, passage = [], []
    for speech in speeches:
        passage.extend(speech.lines)
        if len(passage) >= passage_lines:
            passages.append(passage)
            passage = []
    if passage:
        passages.append(passage)
    return passages


def write_text(path, lines):
    """Writes `lines`, each followed by a newline, as UTF-8; returns `path`."""
    with open(path, "w", encoding="utf-8", newline="") as file:
        file.write("".join(line + "\n" for line in lines))
    return path


def prepare_text(corpus_file, text_dir, max_lines, heldout_percent, passage_lines):
    """Splits the corpus and writes the training part in BERT's input format.

    Tiny Shakespeare is speeches separated by blank lines, each a speaker's
    name ("First Citizen:") and the lines spoken. Given as it is,
    `pipelines.pretraining_data` would make each speech a document (it
    splits documents at blank lines), and most speeches are one or two
    lines: its instances would be mostly padding, a one-line document
    always gets a "random next" segment, and a masked word would often be a
    speaker's name. So the speakers' names, labels rather than verse, are
    dropped, and consecutive speeches are grouped into passages of at least
    `passage_lines` lines (a scene's exchanges, read in order): documents
    long enough to fill a sequence, whose next sentence is usually the
    actual next line.

    Every corpus line is accounted for in the stats: `corpus_lines ==
    blank_lines + speaker_lines + training_verse_lines +
    heldout_verse_lines`.

    Args:
        corpus_file: the corpus (`EMBEDDED_TEXT`).
        text_dir: where `train.txt`, `heldout.txt` and `stats.json` go.
        max_lines: read only the first lines of the corpus (0: all).
        heldout_percent: the share of the lines, at the end, held out (from
            the first speech that starts there).
        passage_lines: the fewest lines of a training passage.

    Returns:
        A `PreparedText`.

    Raises:
        ValueError: the training or the held-out part has no line spoken.
    """
    lines = read_corpus(corpus_file, max_lines)
    split = heldout_start(lines, heldout_percent)
    training, heldout = split_speeches(lines[:split]), split_speeches(lines[split:])
    training_lines = [line for speech in training for line in speech.lines]
    heldout_lines = [line for speech in heldout for line in speech.lines]
    if not training_lines or not heldout_lines:
        raise ValueError(
            f"{len(training_lines)} training and {len(heldout_lines)} held-out lines "
            f"spoken in the {len(lines)} lines read from {corpus_file}; both parts need "
            "some. Read more lines (--max_lines) or change --heldout_percent.")
    passages = group_passages(training, passage_lines)
    train_file = write_text(os.path.join(text_dir, "train.txt"),
                            [line for passage in passages for line in [*passage, ""]][:-1])
    heldout_file = write_text(os.path.join(text_dir, "heldout.txt"), heldout_lines)
    stats = {
        "corpus_file": corpus_file,
        "corpus_lines": len(lines),
        "training_part_lines": split,
        "heldout_part_lines": len(lines) - split,
        "blank_lines": sum(1 for line in lines if not line.strip()),
        "speaker_lines": sum(1 for speech in training + heldout if speech.speaker),
        "training_verse_lines": len(training_lines),
        "heldout_verse_lines": len(heldout_lines),
        "passages": len(passages),
        "passage_lines": passage_lines,
    }
    accounted = (stats["blank_lines"] + stats["speaker_lines"]
                 + stats["training_verse_lines"] + stats["heldout_verse_lines"])
    if accounted != len(lines):
        raise RuntimeError(f"{accounted} lines accounted for of the {len(lines)} read.")
    write_json(os.path.join(text_dir, "stats.json"), stats)
    return PreparedText(train_file, heldout_file, training_lines, heldout_lines, stats)


# ---------------------------------------------------------------------------
# The masked-word check


@dataclasses.dataclass(frozen=True)
class MaskedLine:
    """A held-out line with one word replaced by [MASK].

    Attributes:
        line: the line as in the corpus.
        text: the line with the word replaced by "[MASK]".
        word: the masked word, lower-cased (as the uncased vocabulary has it).
    """

    line: str
    text: str
    word: str


def read_vocabulary(path):
    """The tokens of a vocabulary file, in id order."""
    with open(path, encoding="utf-8") as file:
        return [line.rstrip("\n") for line in file]


def whole_word_tokens(tokens):
    """The tokens that are whole words: neither "##" continuations nor the
    bracketed reserved tokens."""
    return {token for token in tokens
            if not token.startswith("##") and not (token.startswith("[") and token.endswith("]"))}


def maskable_words(line, words):
    """The words of `line` that one [MASK] can stand for: those in `words`
    (lower-cased: the vocabulary's whole-word tokens), and not part of a
    contraction ("know't", "'tis") or of a run of letters and digits.

    Returns:
        The `re.Match` of each such word, in order.
    """
    matches = []
    for match in WORD.finditer(line):
        before = line[match.start() - 1] if match.start() else " "
        after = line[match.end()] if match.end() < len(line) else " "
        touching = before + after
        if "'" in touching or any(character.isalnum() for character in touching):
            continue
        if match.group().lower() in words:
            matches.append(match)
    return matches


def mask_lines(lines, words, seed):
    """One `MaskedLine` for each of `lines` that has a maskable word (see
    `maskable_words`); the word is drawn at random (seeded by `seed`)."""
    rng = random.Random(seed)
    masked = []
    for line in lines:
        matches = maskable_words(line, words)
        if not matches:
            continue
        match = rng.choice(matches)
        masked.append(MaskedLine(
            line, line[:match.start()] + "[MASK]" + line[match.end():],
            match.group().lower()))
    return masked


def most_frequent_words(lines, words, count):
    """The `count` most frequent maskable words of `lines` (ties broken
    alphabetically): the answers of a model that learned only how often
    each word occurs, a baseline for the accuracy."""
    counts = collections.Counter(
        match.group().lower() for line in lines for match in maskable_words(line, words))
    return [word for word, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
            [:count]]


def accuracy(masked_lines, predictions, k):
    """The share of `masked_lines` whose word is among the first `k` of its
    `predictions` (a list of tokens per line)."""
    if not masked_lines:
        return 0.0
    hits = sum(line.word in tokens[:k] for line, tokens in zip(masked_lines, predictions))
    return hits / len(masked_lines)


# ---------------------------------------------------------------------------
# The server process and its HTTP client


def free_port(host):
    """A TCP port of `host` that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


# Requests to the local server never go through a proxy of the environment.
_NO_PROXY_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def http_json(url, body=None, timeout=REQUEST_SECONDS):
    """Sends a GET (no `body`) or a POST of `body` as JSON; returns the
    decoded JSON answer.

    Raises:
        RuntimeError: the server answered with an error status (the message
            holds the status and the server's error).
        urllib.error.URLError: the server could not be reached.
    """
    data = None if body is None else json.dumps(body).encode("utf-8")
    request = urllib.request.Request(url, data=data, method="GET" if body is None else "POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with _NO_PROXY_OPENER.open(request, timeout=timeout) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as error:
        raise RuntimeError(
            f"{request.get_method()} {url} answered {error.code}: "
            f"{error.read().decode('utf-8', errors='replace')}") from error


class ServerProcess:
    """`python -m tfnlp.serve` in a subprocess, as a context manager.

    Entering starts the server on a free port and waits until it answers
    the model's status request; leaving stops it (SIGTERM, the server's
    clean stop; SIGKILL if it has not stopped within `SERVER_STOP_SECONDS`),
    also when the block raised.

    Args:
        export_dir: the export directory (`<version>/saved_model.pb`).
        log_file: where the server's stdout and stderr go.
        model_name: the model's name in the request paths.
        host: the address to listen on.
        port: the port; 0 picks a free one.
        start_seconds: how long to wait for the server to answer.

    Attributes:
        process: the `subprocess.Popen` (None before entering).
        url: `http://HOST:PORT/v1/models/NAME`.
        exit_status: the server's exit status once stopped.
    """

    def __init__(self, export_dir, log_file, model_name=MODEL_NAME, host="127.0.0.1",
                 port=0, start_seconds=SERVER_START_SECONDS):
        self.export_dir = export_dir
        self.log_file = log_file
        self.model_name = model_name
        self.host = host
        self.port = port or free_port(host)
        self.start_seconds = start_seconds
        self.url = f"http://{host}:{self.port}/v1/models/{model_name}"
        self.process = None
        self.exit_status = None

    @property
    def command(self):
        """The server's command line."""
        return [sys.executable, "-m", "tfnlp.serve", f"--model_dir={self.export_dir}",
                f"--model_name={self.model_name}", f"--host={self.host}",
                f"--port={self.port}"]

    def __enter__(self):
        with open(self.log_file, "wb") as log:
            self.process = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL)
        try:
            self._wait_until_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exception):
        self.stop()
        return False

    def _wait_until_ready(self):
        deadline = time.monotonic() + self.start_seconds
        while True:
            status = self.process.poll()
            if status is not None:
                raise RuntimeError(
                    f"the server exited with status {status} before answering GET "
                    f"{self.url}; its output ({self.log_file}) ends with:\n{self.log_tail()}")
            try:
                http_json(self.url, timeout=5)
                return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"the server did not answer GET {self.url} within {self.start_seconds} "
                    f"s; its output ({self.log_file}) ends with:\n{self.log_tail()}")
            time.sleep(0.5)

    def predict(self, instances, signature_name=FILL_MASK_SIGNATURE):
        """POSTs a TF Serving predict request; returns `(body, predictions)`."""
        body = {"signature_name": signature_name, "instances": list(instances)}
        return body, http_json(self.url + ":predict", body)["predictions"]

    def stop(self):
        """Stops the server if it runs; returns its exit status."""
        if self.process is not None and self.exit_status is None:
            if self.process.poll() is None:
                self.process.send_signal(signal.SIGTERM)
                try:
                    self.process.wait(timeout=SERVER_STOP_SECONDS)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
            self.exit_status = self.process.returncode
        return self.exit_status

    def log_tail(self, lines=15):
        """The last lines of the server's output."""
        with open(self.log_file, encoding="utf-8", errors="replace") as file:
            return "".join(file.readlines()[-lines:])


def top_tokens(prediction):
    """The top-k tokens of a fill-mask prediction's first mask."""
    return prediction["tokens"][0]


def format_prediction(prediction):
    """`token score | ...` of a fill-mask prediction's first mask."""
    return " | ".join(f"{token} {score:.3f}"
                      for token, score in zip(prediction["tokens"][0], prediction["scores"][0]))


# ---------------------------------------------------------------------------
# The stages


class Stages:
    """Runs the demo's stages in order, timing each one.

    `run(name, function, ...)` prints the stage's header, calls the
    function, and prints its wall time and the artefacts it names (the
    function returns a dict whose "artefacts" maps a description to a
    path). A stage that raises (or whose command line exits) becomes a
    `StageFailed` naming it; a fault rather than a user's mistake (see
    `is_user_error`) is logged with its traceback first.

    Attributes:
        seconds: `{stage: wall seconds}` of the stages run.
        results: `{stage: the function's result}` of the stages that ended.
    """

    def __init__(self):
        self.seconds = {}
        self.results = {}

    def run(self, name, function, *args, **kwargs):
        """Runs one stage; returns its function's result."""
        number = list(STAGE_DIRECTORIES).index(name) + 1
        print(f"\n=== Stage {number}/{len(STAGE_DIRECTORIES)}: {name} ===", flush=True)
        started = time.monotonic()
        try:
            result = function(*args, **kwargs)
        except (Exception, SystemExit) as error:
            self.seconds[name] = round(time.monotonic() - started, 1)
            if not is_user_error(error):
                LOGGER.error('Stage "%s" failed:', name, exc_info=error)
            raise StageFailed(name, error) from error
        self.seconds[name] = round(time.monotonic() - started, 1)
        self.results[name] = result
        print(f'--- stage "{name}" took {self.seconds[name]:.1f} s; artefacts:')
        for description, path in result["artefacts"].items():
            print(f"    {description}: {path}")
        sys.stdout.flush()
        return result


def text_stage(args, directory):
    """Stage "text": `prepare_text` on the embedded corpus."""
    prepared = prepare_text(EMBEDDED_TEXT, directory, args.max_lines, args.heldout_percent,
                            args.passage_lines)
    stats = prepared.stats
    print(f"{stats['corpus_file']}: {stats['corpus_lines']:,} lines read, "
          f"{stats['training_part_lines']:,} for training and {stats['heldout_part_lines']:,} "
          f"held out (from line {stats['training_part_lines'] + 1}).\n"
          f"Lines: {stats['blank_lines']:,} blank, {stats['speaker_lines']:,} speakers' names "
          f"(dropped), {stats['training_verse_lines']:,} spoken for training in "
          f"{stats['passages']:,} passages of at least {stats['passage_lines']} lines, "
          f"{stats['heldout_verse_lines']:,} spoken held out.")
    return {"prepared": prepared, "stats": stats, "artefacts": {
        "training passages": prepared.train_file, "held-out lines": prepared.heldout_file,
        "stats": os.path.join(directory, "stats.json")}}


def vocabulary_stage(args, directory, train_file):
    """Stage "vocabulary": `pipelines.wordpiece_vocab` on the passages."""
    vocab_file = os.path.join(directory, "vocab.txt")
    stats = wordpiece_vocab.main([
        f"--input_file={train_file}", f"--output_file={vocab_file}",
        f"--vocab_size={args.vocab_size}", f"--min_token_count={args.min_token_count}",
    ])
    lines = stats["input"]
    print(f"Beam job stats: {lines['lines_read']:,} lines read, {lines['lines_used']:,} used, "
          f"skipped {lines['lines_skipped']}; {stats['words_counted']:,} words "
          f"({stats['unique_words']:,} unique); {stats['vocabulary_size']:,} tokens "
          f"(the learner's {stats['learned_vocabulary_size']:,}, at most {args.vocab_size:,} "
          f"asked); [UNK] share {stats['unk_share']:.4%}.")
    return {"vocab_file": vocab_file, "stats": stats, "artefacts": {
        "vocabulary": vocab_file, "stats": vocab_file + wordpiece_vocab.STATS_SUFFIX}}


def max_predictions(args):
    """Masked positions per sequence: `--masked_lm_prob` of the sequence
    length (as BERT's 20 of 128 at 15%)."""
    return max(1, round(args.max_seq_length * args.masked_lm_prob))


def pretraining_data_stage(args, directory, train_file, vocab_file):
    """Stage "pretraining data": `pipelines.pretraining_data` on the passages."""
    stats = pretraining_data.main([
        f"--input_file={train_file}", f"--vocab_file={vocab_file}",
        f"--output_dir={directory}", f"--max_seq_length={args.max_seq_length}",
        f"--max_predictions_per_seq={max_predictions(args)}",
        f"--masked_lm_prob={args.masked_lm_prob}", f"--dupe_factor={args.dupe_factor}",
        f"--random_seed={args.seed}", "--num_shards=1",
    ])
    print(f"Beam job stats: {stats['lines']['read']:,} lines read, {stats['lines']['used']:,} "
          f"used, skipped {stats['lines']['skipped']}; {stats['documents']['used']:,} documents; "
          f"{stats['tokens']:,} tokens; {stats['instances']:,} instances "
          f"(dupe factor {args.dupe_factor}) of {stats['mean_instance_length']:.1f} tokens on "
          f"average; mask rate {stats['mask_rate']:.3f}; next sentence random in "
          f"{stats['nsp_random_share']:.1%}.")
    return {"train_data": os.path.join(directory, "pretraining-*"), "stats": stats,
            "artefacts": {"TFRecords": os.path.join(directory, "pretraining-*"),
                          "stats": os.path.join(directory, pretraining_data.STATS_FILE)}}


def read_jsonl(path):
    """The JSON values of a JSON Lines file."""
    with open(path, encoding="utf-8") as file:
        return [json.loads(line) for line in file if line.strip()]


def training_flags(args, config, model_dir, train_data, vocab_file):
    """The command line of `trainer.pretrain` for the demo's settings
    (`config`: a BertConfig preset name or JSON file)."""
    return [
        f"--train_data={train_data}", f"--model_dir={model_dir}",
        f"--vocab_file={vocab_file}", f"--config={config}",
        # The model's embeddings: exactly the learned vocabulary.
        f"--vocab_size={len(read_vocabulary(vocab_file))}",
        # A run of minutes sees each instance a few times at most: dropout
        # would only slow the learning down.
        "--hidden_dropout=0", "--attention_dropout=0",
        f"--max_seq_length={args.max_seq_length}",
        f"--max_predictions_per_seq={max_predictions(args)}",
        f"--global_batch_size={args.batch_size}", f"--train_steps={args.train_steps}",
        f"--learning_rate={args.learning_rate}",
        f"--warmup_steps={args.train_steps // 10}",
        f"--log_every_steps={max(1, args.train_steps // 10)}",
        f"--checkpoint_every_steps={args.train_steps}",
        # One set of attention pictures, at the end.
        f"--attention_images_every_steps={args.train_steps}",
        "--strategy=default", f"--seed={args.seed}",
    ]


def training_stage(args, model_dir, train_data, vocab_file):
    """Stage "training": `trainer.pretrain` (with `--config=demo`, on
    `DEMO_MODEL`, written to `MODEL_DIR/demo_bert_config.json`)."""
    config = args.config
    if config == "demo":
        config = write_json(os.path.join(model_dir, "demo_bert_config.json"), DEMO_MODEL)
    pretrain.main(training_flags(args, config, model_dir, train_data, vocab_file))
    log = read_jsonl(os.path.join(model_dir, "train_log.jsonl"))
    tensorboard = f"tensorboard --logdir={os.path.abspath(model_dir)}"
    print(f"Trained {log[-1]['step']} steps of {args.batch_size} sequences: loss "
          f"{log[0]['loss']:.3f} at step {log[0]['step']}, {log[-1]['loss']:.3f} at step "
          f"{log[-1]['step']} (masked LM {log[-1]['mlm_loss']:.3f}, next sentence "
          f"{log[-1]['nsp_loss']:.3f}).\nSee the run's curves, attention and masked-LM "
          f"samples with:\n    {tensorboard}")
    return {"steps": log[-1]["step"], "tensorboard": tensorboard,
            "loss": {"first": log[0]["loss"], "last": log[-1]["loss"],
                     "last_mlm": log[-1]["mlm_loss"], "last_nsp": log[-1]["nsp_loss"]},
            "artefacts": {"run (checkpoints, train_log.jsonl)": model_dir,
                          "TensorBoard logs": os.path.join(model_dir, run_files.TENSORBOARD)}}


def export_stage(model_dir, export_dir):
    """Stage "export": `trainer.export` of the run (fill-mask signatures)."""
    version = export.main([f"--model_dir={model_dir}", f"--export_dir={export_dir}",
                           f"--top_k={TOP_K}"])
    print(f"Exported the run's last checkpoint with the {FILL_MASK_SIGNATURE!r} signature to "
          f"{version}.\nServe it with:\n    python -m tfnlp.serve --model_dir={export_dir}")
    return {"version": version, "artefacts": {"SavedModel": version}}


def serving_stage(args, export_dir, directory, text, vocab_file):
    """Stage "serving": serves the export, sends the held-out lines of `text`
    (a `PreparedText`), each with a word masked (`mask_lines`), over HTTP
    and measures the accuracy of the answers against the words, and against
    the most frequent words of the training lines (`most_frequent_words`)."""
    words = whole_word_tokens(read_vocabulary(vocab_file))
    masked_lines = mask_lines(text.heldout_lines, words, args.seed)
    baseline = most_frequent_words(text.training_lines, words, TOP_K)
    log_file = os.path.join(directory, "server.log")
    server = ServerProcess(export_dir, log_file, port=args.port)
    print(f"Starting: {' '.join(server.command)}", flush=True)
    with server:
        print(f"The server answers at {server.url}.")
        shown = [*masked_lines[: args.examples_shown]]
        for masked in shown:
            body, (prediction,) = server.predict([masked.text])
            print(f"\nPOST {server.url}:predict {json.dumps(body)}\n"
                  f"    held out; the word was {masked.word!r}\n"
                  f"    -> {format_prediction(prediction)}")
        for text in EXTRA_LINES:
            body, (prediction,) = server.predict([text])
            print(f"\nPOST {server.url}:predict {json.dumps(body)}\n"
                  f"    not from the corpus\n    -> {format_prediction(prediction)}")
        print()
        predictions = []
        for start in range(0, len(masked_lines), INSTANCES_PER_REQUEST):
            batch = masked_lines[start : start + INSTANCES_PER_REQUEST]
            _, answers = server.predict([masked.text for masked in batch])
            predictions.extend(answers)
            top_1 = sum(masked.word == top_tokens(answer)[0]
                        for masked, answer in zip(batch, answers))
            print(f"POST {server.url}:predict with {len(batch)} held-out lines: {top_1} "
                  "top-1 right", flush=True)
    print(f"The server stopped (exit status {server.exit_status}).")
    predictions_file = write_text(os.path.join(directory, "predictions.jsonl"), [
        json.dumps({"line": masked.line, "text": masked.text, "word": masked.word,
                    "tokens": top_tokens(answer), "scores": answer["scores"][0]})
        for masked, answer in zip(masked_lines, predictions)])
    served = [top_tokens(answer) for answer in predictions]
    result = {
        "url": server.url, "server_exit_status": server.exit_status,
        "requests": len(shown) + len(EXTRA_LINES)
        + math.ceil(len(masked_lines) / INSTANCES_PER_REQUEST),
        "accuracy": {
            "lines": len(masked_lines),
            "top_1": accuracy(masked_lines, served, 1),
            "top_5": accuracy(masked_lines, served, 5),
            "baseline_words": baseline,
            "baseline_top_1": accuracy(masked_lines, [baseline] * len(masked_lines), 1),
            "baseline_top_5": accuracy(masked_lines, [baseline] * len(masked_lines), 5),
        },
        "artefacts": {"server log": log_file, "predictions": predictions_file},
    }
    scores = result["accuracy"]
    print(f"\nMasked-word accuracy of the served model on {len(masked_lines)} held-out lines: "
          f"top-1 {scores['top_1']:.1%}, top-5 {scores['top_5']:.1%} (always answering the "
          f"training text's most frequent words {', '.join(baseline)}: "
          f"{scores['baseline_top_1']:.1%} and {scores['baseline_top_5']:.1%}).")
    return result


# ---------------------------------------------------------------------------
# The whole demo


def start_afresh(output_dir):
    """Removes the stage folders of an earlier run (so that the trainer does
    not resume it and the export is version 1) and makes them anew."""
    for name in STAGE_DIRECTORIES.values():
        path = os.path.join(output_dir, name)
        if os.path.exists(path):
            print(f"Removing {path} of an earlier run.")
            shutil.rmtree(path)
        os.makedirs(path)


def write_json(path, value):
    """Writes `value` as indented UTF-8 JSON; returns `path`."""
    with open(path, "w", encoding="utf-8") as file:
        json.dump(value, file, indent=2, ensure_ascii=False)
        file.write("\n")
    return path


def build_summary(args, stages):
    """The summary of the stages that ended (see `run`)."""
    results = stages.results
    summary = {"settings": vars(args), "stage_seconds": dict(stages.seconds),
               "artefacts": {stage: result["artefacts"] for stage, result in results.items()}}
    if "text" in results:
        summary["text"] = results["text"]["stats"]
    if "vocabulary" in results:
        stats = results["vocabulary"]["stats"]
        summary["vocabulary"] = {"input": stats["input"], "size": stats["vocabulary_size"],
                                 "unk_share": stats["unk_share"]}
    if "pretraining data" in results:
        stats = results["pretraining data"]["stats"]
        summary["pretraining_data"] = {name: stats[name] for name in (
            "lines", "documents", "tokens", "instances", "mean_instance_length", "mask_rate",
            "nsp_random_share")}
    if "training" in results:
        summary["training"] = {name: results["training"][name]
                               for name in ("steps", "loss", "tensorboard")}
    if "export" in results:
        summary["export"] = results["export"]["version"]
    if "serving" in results:
        serving = results["serving"]
        summary["serving"] = {name: serving[name]
                              for name in ("url", "requests", "server_exit_status")}
        summary["masked_word_accuracy"] = serving["accuracy"]
    return summary


def print_summary(summary, path):
    """The closing lines: seconds per stage, the accuracy, where things are."""
    print("\n=== Summary ===")
    for stage, seconds in summary["stage_seconds"].items():
        print(f"  {stage:<17} {seconds:7.1f} s")
    print(f"  {'total':<17} {summary['seconds']:7.1f} s")
    if "masked_word_accuracy" in summary:
        scores = summary["masked_word_accuracy"]
        print(f"Masked-word accuracy on {scores['lines']} held-out lines, served over HTTP: "
              f"top-1 {scores['top_1']:.1%}, top-5 {scores['top_5']:.1%} (most frequent words: "
              f"{scores['baseline_top_1']:.1%}, {scores['baseline_top_5']:.1%}).")
    print(f"Wrote {path}.")


def run(args):
    """Runs the stages as `args` say (see `tfnlp_cli.demo.__main__`); returns the
    summary, also written to `OUTPUT_DIR/summary.json`.

    Each stage is one of the product's entry points, run in this process
    with the arguments its command line would take, except the server,
    which runs in a process of its own as a user would start it:

    1. "text": the corpus is split into a training part and a held-out part
       (its last `--heldout_percent` of lines), and the training part is
       written in BERT's input format (`prepare_text`);
    2. "vocabulary": `pipelines.wordpiece_vocab` (Beam) learns a WordPiece
       vocabulary from the training part;
    3. "pretraining data": `pipelines.pretraining_data` (Beam) writes
       masked-LM and next-sentence TFRecords;
    4. "training": `trainer.pretrain` trains a small BERT with the default
       `tf.distribute` strategy, with TensorBoard logs;
    5. "export": `trainer.export` writes the SavedModel with the
       `fill_mask` signature;
    6. "serving": `python -m tfnlp.serve` serves the export; held-out lines,
       each with one word replaced by [MASK], go to it as TF Serving REST
       requests, and the answers give the masked-word accuracy (top-1,
       top-5).

    Writes into `--output_dir` (each run starts these folders afresh; a
    failed stage leaves the folders of the stages before it):

    - `text/`: `train.txt` (the passages), `heldout.txt`, `stats.json`;
    - `vocabulary/`: `vocab.txt` and `vocab.txt.stats.json`;
    - `pretraining_data/`: the TFRecord shard and `stats.json`;
    - `run/`: the trainer's checkpoints, `train_log.jsonl` and TensorBoard
      logs;
    - `export/1/`: the SavedModel;
    - `serving/`: `server.log` (the server's output, one line per request)
      and `predictions.jsonl` (each held-out line, its masked word and the
      served top-5);
    - `summary.json`: seconds per stage, the stages' figures, the accuracy
      and the artefacts' paths.

    Raises:
        StageFailed: a stage failed; the folders of the stages before it
            are kept, and summary.json holds what they did and the failure.
    """
    started = time.monotonic()
    output_dir = args.output_dir
    os.makedirs(output_dir, exist_ok=True)
    start_afresh(output_dir)
    directory = {stage: os.path.join(output_dir, name)
                 for stage, name in STAGE_DIRECTORIES.items()}
    stages = Stages()
    summary_file = os.path.join(output_dir, "summary.json")
    try:
        text = stages.run("text", text_stage, args, directory["text"])["prepared"]
        vocab_file = stages.run("vocabulary", vocabulary_stage, args, directory["vocabulary"],
                                text.train_file)["vocab_file"]
        train_data = stages.run("pretraining data", pretraining_data_stage, args,
                                directory["pretraining data"], text.train_file,
                                vocab_file)["train_data"]
        stages.run("training", training_stage, args, directory["training"], train_data,
                   vocab_file)
        stages.run("export", export_stage, directory["training"], directory["export"])
        stages.run("serving", serving_stage, args, directory["export"], directory["serving"],
                   text, vocab_file)
    except StageFailed as error:
        summary = build_summary(args, stages)
        summary["failed"] = {"stage": error.stage, "error": str(error)}
        summary["seconds"] = round(time.monotonic() - started, 1)
        write_json(summary_file, summary)
        raise
    summary = build_summary(args, stages)
    summary["seconds"] = round(time.monotonic() - started, 1)
    write_json(summary_file, summary)
    print_summary(summary, summary_file)
    return summary
