"""TensorBoard logs of a training job: scalars, hparams, pictures, text.

The job writes `tf.summary` event files into `model_dir/tensorboard/`: its
hyperparameters there, and the `train` and `eval` runs in `train/` and
`eval/` below it (`eval/` only once the job evaluates), so that
`tensorboard --logdir model_dir` shows one run and `--logdir` at the folder
above several runs compares them:

- Scalars: the `train` and `eval` figures, their tags grouped by kind
  (`scalar_tag`): `loss/...`, `metrics/...` (accuracies, perplexity, BLEU),
  `optimization/...` (learning rate, gradient norm), `throughput/...`
  (examples and tokens per second). TensorBoard sorts the groups by name
  and opens the first ones: the losses come first.
- HParams: the run's flags and model settings, with the metrics each
  trainer declares (the last `train` and `eval` value of each) for
  comparing runs (`write_hparams`).
- Images: pictures drawn by `tfnlp.visualization` (matplotlib): for BERT
  the attention of one fixed example, one image a layer with a panel a
  head and the example's tokens on the axes (`AttentionProbe`); for
  translation the alignment of sample sentences (`trainer.translation_eval`).
- Text: Markdown tables of samples (the masked-LM predictions of the fixed
  example; sample translations).
- Profile: with `--profile_steps`, a trace of those steps in
  `tensorboard/train/plugins/profile/<time>/`, where the Profile tab (the
  `tensorboard-plugin-profile` package) finds it.

Only the chief writes: the other workers of a cluster get no-op writers.
"""

import contextlib
import os

import numpy as np
import tensorflow as tf
from tensorboard.plugins.hparams import api as hparams_api

from tfnlp.command_line import UsageError
from tfnlp.visualization import attention_heads_image, markdown_table, markdown_text
from trainer import run_files

# The fixed example's tokens that the attention images show at most (a
# longer example's first ones; `pretrain.fixed_example` prefers a short one).
MAX_PICTURE_TOKENS = 48
# Masked-LM predictions listed for each masked position.
TOP_PREDICTIONS = 3


# The group of the scalars whose group their name does not say (see
# `scalar_tag`).
SCALAR_GROUPS = {
    "learning_rate": "optimization",
    "gradient_norm": "optimization",
    "examples_per_second": "throughput",
    "tokens_per_second": "throughput",
    "cross_entropy": "loss",
}


def scalar_tag(name):
    """The TensorBoard tag of the scalar `name` (a key of `train_log.jsonl`
    or `eval_log.jsonl`): `GROUP/name`, in the group `loss` for the losses,
    `optimization` for the learning rate and the gradient norm, `throughput`
    for examples and tokens per second, and `metrics` for the rest.

    Example:

    >>> [scalar_tag(name) for name in ("loss", "mlm_accuracy", "bleu", "tokens_per_second")]
    ['loss/loss', 'metrics/mlm_accuracy', 'metrics/bleu', 'throughput/tokens_per_second']
    """
    group = SCALAR_GROUPS.get(name, "loss" if "loss" in name else "metrics")
    return f"{group}/{name}"


class SummaryWriters:
    """The `train` and `eval` `tf.summary` writers of a run, in
    `model_dir/tensorboard/`.

    Each writer is created when first used, so that a run that does not
    evaluate has no `eval` run. A process that is not the chief gets no-op
    writers (and writes no hparams), so that only one worker of a cluster
    writes.

    Args:
        model_dir: the job's directory.
        enabled: False for no-op writers.

    Example:

    >>> import tempfile
    >>> writers = SummaryWriters(tempfile.mkdtemp())
    >>> writers.scalars(writers.train, {"loss": 2.5}, step=1)
    >>> writers.text(writers.eval, {"samples": "| a |\\n|---|\\n| b |"}, step=1)
    >>> writers.close()
    """

    def __init__(self, model_dir, enabled=True):
        self.model_dir = model_dir
        self.enabled = enabled
        self._writers = {}

    @property
    def train(self):
        return self._writer(run_files.TRAIN_SUMMARIES)

    @property
    def eval(self):
        return self._writer(run_files.EVAL_SUMMARIES)

    def _writer(self, folder):
        if folder not in self._writers:
            self._writers[folder] = (
                tf.summary.create_file_writer(os.path.join(self.model_dir, folder))
                if self.enabled else tf.summary.create_noop_writer())
        return self._writers[folder]

    def scalars(self, writer, values, step):
        """Writes each `name: value` of `values` as a scalar at `step`, with
        the tag `scalar_tag(name)`."""
        with writer.as_default(step=step):
            for name, value in values.items():
                tf.summary.scalar(scalar_tag(name), value)
        writer.flush()

    def hparams(self, values, metrics=()):
        """Records the run's hyperparameters for the HParams tab (see
        `write_hparams`); nothing on a worker that is not the chief."""
        if self.enabled:
            write_hparams(self.model_dir, values, metrics)

    def images(self, writer, values, step):
        """Writes each `name: image` of `values` (uint8 RGB, `[height, width,
        3]` or `[1, height, width, 3]`) at `step` (TensorBoard stores it as
        a PNG)."""
        with writer.as_default(step=step):
            for name, image in values.items():
                image = np.asarray(image)
                tf.summary.image(name, image[None] if image.ndim == 3 else image,
                                 max_outputs=1)
        writer.flush()

    def text(self, writer, values, step):
        """Writes each `name: markdown` of `values` as text at `step` (the
        Text tab renders Markdown: see `tfnlp.visualization.markdown_table`)."""
        with writer.as_default(step=step):
            for name, markdown in values.items():
                tf.summary.text(name, markdown)
        writer.flush()

    def close(self):
        for writer in self._writers.values():
            writer.close()


def hparam_values(values):
    """The hyperparameters TensorBoard can hold: bool, int, float and str
    values as they are, other values as `str()`, None values left out.

    Example:

    >>> hparam_values({"learning_rate": 1e-4, "tpu": None, "labels": ["a", "b"]})
    {'learning_rate': 0.0001, 'labels': "['a', 'b']"}
    """
    return {
        name: value if isinstance(value, (bool, int, float, str)) else str(value)
        for name, value in values.items()
        if value is not None
    }


def write_hparams(model_dir, values, metrics=()):
    """Writes a run's hyperparameters and the metrics to compare it by, for
    TensorBoard's HParams tab.

    Both go into `model_dir/tensorboard/`, the folder above the run's
    `train/` and `eval/` event files: the plugin takes the folder of the
    hparams as one trial (the group named `model_dir`) and finds each
    metric in its subfolder (the last value). This works whether
    `--logdir` is `model_dir` or a folder above it, but not with `--logdir`
    at the folder of the hparams itself: there the plugin looks for the
    metrics in "./train", a run that TensorBoard names "train". The
    experiment config (`hparams_config`) declares the hparams and the
    `metrics`; the tab shows the first five of each (the hparams in
    alphabetical order, the metrics in the order given) until the user
    ticks more. TensorBoard reads one config for all the runs under its
    `--logdir`, so compare runs of one trainer at a time.

    Args:
        model_dir: the run's directory.
        values: `{name: value}`: the flags and model settings (see
            `hparam_values` for the types kept).
        metrics: `(run, name)` pairs: the scalar `name` (its tag
            `scalar_tag(name)`) of the `run` ("train", "eval"), shown as
            "run name".

    Example:

    >>> import tempfile
    >>> write_hparams(tempfile.mkdtemp(), {"learning_rate": 1e-4, "seed": 0},
    ...               [("eval", "loss"), ("train", "loss")])
    """
    clean = hparam_values(values)
    writer = tf.summary.create_file_writer(os.path.join(model_dir, run_files.TENSORBOARD))
    with writer.as_default():
        hparams_api.hparams_config(
            hparams=[hparams_api.HParam(name) for name in sorted(clean)],
            metrics=[hparams_api.Metric(scalar_tag(name), group=group,
                                        display_name=f"{group} {name}")
                     for group, name in metrics],
        )
        hparams_api.hparams(clean, trial_id=str(model_dir))
    writer.close()


def token_labels(ids, vocabulary=None):
    """The labels of token ids: their vocabulary entries, or the ids.

    Args:
        ids: token ids.
        vocabulary: the list of tokens (`tfnlp.text.load_vocabulary`), or
            None to label each token with its id.

    Example:

    >>> token_labels([2, 0], ["[PAD]", "[UNK]", "[CLS]"]), token_labels([7])
    (['[CLS]', '[PAD]'], ['7'])
    """
    ids = [int(token) for token in np.asarray(ids).reshape(-1)]
    if vocabulary is None:
        return [str(token) for token in ids]
    return [vocabulary[token] if 0 <= token < len(vocabulary) else f"<{token}>"
            for token in ids]


def _one_example(example, names):
    """The named features of one example as `(1, length)` int32 tensors."""
    return {name: tf.constant(np.asarray(example[name]).reshape(1, -1), tf.int32)
            for name in names}


class AttentionProbe:
    """The attention of each encoder layer on one fixed example, drawn.

    Runs the encoder's embeddings and then each `TransformerEncoderBlock`
    with `return_attention_scores=True` (inference mode), on the real
    tokens of the example only (padding cropped), and draws each layer as
    a grid of its heads with the tokens on the axes
    (`tfnlp.visualization.attention_heads_image`). A longer example than
    `max_tokens` is run whole; the picture shows its first `max_tokens`.

    Args:
        encoder: a `tfnlp.models.BertEncoder`.
        example: a dict with `input_ids` and `segment_ids` (and
            `input_mask`) of one example, `(length,)` or `(1, length)`.
        vocabulary: the tokens of the ids (`tfnlp.text.load_vocabulary`),
            or None to label the axes with the ids.
        max_tokens: the most tokens a picture shows.

    Example:

    >>> from tfnlp.models import BertConfig, BertEncoder
    >>> encoder = BertEncoder(BertConfig.preset("tiny", num_layers=1, vocab_size=10))
    >>> probe = AttentionProbe(encoder, {"input_ids": [2, 5, 3, 0], "segment_ids": [0] * 4,
    ...                                  "input_mask": [1, 1, 1, 0]}, list("abcdefghij"))
    >>> [(name, image.shape[-1]) for name, image in probe.images().items()]
    [('pictures/attention_layer_0', 3)]
    """

    def __init__(self, encoder, example, vocabulary=None, max_tokens=MAX_PICTURE_TOKENS):
        self.encoder = encoder
        mask = np.asarray(example["input_mask"]).reshape(-1)
        length = int(mask.sum()) or mask.size
        self.inputs = {
            name: tensor[:, :length] for name, tensor in _one_example(
                example, ("input_ids", "segment_ids", "input_mask")).items()
        }
        self.length = length
        self.shown = min(length, max_tokens)
        self.tokens = token_labels(self.inputs["input_ids"][0, :self.shown], vocabulary)
        self._attention = tf.function(self._attention_weights)

    def _attention_weights(self):
        encoder = self.encoder
        tokens = encoder.token_embedding(self.inputs["input_ids"])
        x = encoder.embeddings_add(
            [
                tokens,
                encoder.segment_embedding(self.inputs["segment_ids"]),
                encoder.position_embedding(tokens),
            ]
        )
        x = encoder.embeddings_layer_norm(x)
        weights = []
        for layer in encoder.transformer_layers:
            x, scores = layer(
                x,
                padding_mask=self.inputs["input_mask"],
                return_attention_scores=True,
                training=False,
            )
            weights.append(tf.cast(scores[0], tf.float32))
        return weights

    def images(self):
        """`{"pictures/attention_layer_i": uint8 RGB image}` for every layer."""
        layers = self._attention()
        shown = self.shown
        cropped = f" (its first {shown} of {self.length} tokens)" if shown < self.length else ""
        return {
            f"pictures/attention_layer_{index}": attention_heads_image(
                weights.numpy()[:, :shown, :shown], self.tokens,
                title=f"Layer {index} of {len(layers)}: attention of each head{cropped}")
            for index, weights in enumerate(layers)
        }

    def write(self, writers, step):
        """Writes the images with `writers` (`SummaryWriters`) at `step`."""
        writers.images(writers.train, self.images(), step)


class MaskedLmSamples:
    """What a BERT pretraining model predicts at the masked positions of one
    fixed example, as a Markdown table for the Text tab.

    The example's input (with its [MASK] tokens), then a row a masked
    position: its input token, the original token, and the model's
    `top` tokens with their probabilities.

    Args:
        model: a `tfnlp.models.BertPretrainingModel`.
        example: a pretraining example (`input_ids`, `input_mask`,
            `segment_ids`, `masked_lm_positions`, `masked_lm_ids`,
            `masked_lm_weights`), `(length,)` or `(1, length)` each.
        vocabulary: the tokens of the ids, or None to show the ids.
        top: how many predictions a position lists.

    Example:

    >>> from tfnlp.models import BertConfig, BertEncoder, BertPretrainingModel
    >>> model = BertPretrainingModel(
    ...     BertEncoder(BertConfig.preset("tiny", num_layers=1, vocab_size=10)))
    >>> samples = MaskedLmSamples(model, {
    ...     "input_ids": [2, 4, 3], "input_mask": [1, 1, 1], "segment_ids": [0, 0, 0],
    ...     "masked_lm_positions": [1, 0], "masked_lm_ids": [7, 0],
    ...     "masked_lm_weights": [1.0, 0.0]})
    >>> samples.markdown().splitlines()[2]
    '| position | input | original | predictions |'
    """

    def __init__(self, model, example, vocabulary=None, top=TOP_PREDICTIONS):
        self.model = model
        self.vocabulary = vocabulary
        self.top = top
        self.inputs = _one_example(example, ("input_ids", "input_mask", "segment_ids",
                                             "masked_lm_positions"))
        weights = np.asarray(example["masked_lm_weights"]).reshape(-1)
        self.masked = np.flatnonzero(weights > 0)
        self.positions = np.asarray(example["masked_lm_positions"]).reshape(-1)
        self.originals = np.asarray(example["masked_lm_ids"]).reshape(-1)
        mask = np.asarray(example["input_mask"]).reshape(-1)
        self.input_ids = np.asarray(example["input_ids"]).reshape(-1)[:int(mask.sum())]

    def markdown(self):
        """The example's input and the table of predictions (Markdown)."""
        logits = self.model(self.inputs, training=False)["mlm_logits"][0].numpy()
        probabilities = np.exp(logits - logits.max(axis=-1, keepdims=True))
        probabilities /= probabilities.sum(axis=-1, keepdims=True)
        rows = []
        for index in self.masked:
            best = np.argsort(-probabilities[index])[:self.top]
            position = int(self.positions[index])
            predictions = ", ".join(
                f"{label} ({probabilities[index, token]:.2f})"
                for label, token in zip(token_labels(best, self.vocabulary), best))
            rows.append([position, *token_labels([self.input_ids[position]], self.vocabulary),
                         *token_labels([self.originals[index]], self.vocabulary), predictions])
        example = markdown_text(" ".join(token_labels(self.input_ids, self.vocabulary)))
        table = markdown_table(["position", "input", "original", "predictions"], rows)
        return f"**input:** {example}\n\n{table}"

    def write(self, writers, step):
        """Writes the table as `masked_lm_predictions` with `writers` at `step`."""
        writers.text(writers.train, {"masked_lm_predictions": self.markdown()}, step)


def sample_writer(*probes):
    """The `samples(writers, step)` callback of `trainer.training_loop.train`
    that has each probe (`AttentionProbe`, `MaskedLmSamples`) write its
    summaries."""

    def write(writers, step):
        for probe in probes:
            probe.write(writers, step)

    return write


class Profiler:
    """Traces steps `start` to `end` (`--profile_steps=START,END`) into `logdir`.

    Args:
        logdir: where the trace goes (TensorBoard's Profile tab reads it).
        profile_steps: "START,END" (1-based steps, inclusive), or "" for none.
    """

    def __init__(self, logdir, profile_steps=""):
        self.logdir = logdir
        self.start = self.end = None
        self.running = False
        if profile_steps:
            try:
                self.start, self.end = (int(part) for part in profile_steps.split(","))
            except ValueError:
                raise UsageError(
                    f"--profile_steps must be 'START,END' (two step numbers), "
                    f"got {profile_steps!r}."
                ) from None
            if not 1 <= self.start <= self.end:
                raise UsageError(
                    f"--profile_steps needs 1 <= START <= END, got {profile_steps!r}."
                )

    def before_step(self, step):
        """Call with the 1-based number of the step about to run."""
        if self.start is not None and step == self.start and not self.running:
            tf.profiler.experimental.start(self.logdir)
            self.running = True

    def step_trace(self, step):
        """A context manager to run step `step` (1-based) in: while tracing,
        it marks the step in the trace (`tf.profiler.experimental.Trace`
        with `step_num`), which the Profile tab's overview and step-time
        graph need; otherwise it does nothing."""
        if self.running:
            return tf.profiler.experimental.Trace("train", step_num=step, _r=1)
        return contextlib.nullcontext()

    def after_step(self, step):
        """Call with the 1-based number of the step just run."""
        if self.running and step >= self.end:
            self.stop()

    def stop(self):
        if self.running:
            tf.profiler.experimental.stop()
            self.running = False


class RunLogs:
    """Everything a run writes as it trains, opened and closed together.

    The TensorBoard writers (`writers.train`, `writers.eval`), one JSON line
    per training step (`train_log.jsonl`) and per evaluation
    (`eval_log.jsonl`), and the profiler of `profile_steps` ("START,END").
    On a worker that is not the chief every writer is a no-op.

    Args:
        model_dir: the run's directory.
        chief: whether this process writes.
        profile_steps: the steps to trace, "" for none.
    """

    def __init__(self, model_dir, chief=True, profile_steps=""):
        self.writers = SummaryWriters(model_dir, enabled=chief)
        self.train_log = run_files.JsonLog(
            os.path.join(model_dir, run_files.TRAIN_LOG_FILE), enabled=chief)
        self.eval_log = run_files.JsonLog(
            os.path.join(model_dir, run_files.EVAL_LOG_FILE), enabled=chief)
        self.profiler = Profiler(os.path.join(model_dir, run_files.TRAIN_SUMMARIES),
                                 profile_steps)

    def close(self):
        self.profiler.stop()
        self.writers.close()
        self.train_log.close()
        self.eval_log.close()
