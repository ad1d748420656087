"""TensorBoard logs of a training job: scalars, hparams, attention heatmaps.

The job writes `model_dir/train/` and `model_dir/eval/` event files with
`tf.summary`. Besides the scalars it logs the run's hyperparameters (the
TensorBoard HParams plugin) and, every so often, the attention weights of
one fixed example: for each layer one image, its heads side by side, each
head a `length x length` heatmap (row: the attending token, column: the
attended one) in the viridis colour map, scaled per head to its largest
weight.
"""

import os

import numpy as np
import tensorflow as tf
from tensorboard.plugins.hparams import api as hparams_api

from tfnlp.command_line import UsageError
from trainer import run_files

# Viridis at 0, .25, .5, .75 and 1; interpolated linearly in between.
_VIRIDIS = np.array(
    [
        [0.267, 0.005, 0.329],
        [0.229, 0.322, 0.546],
        [0.128, 0.567, 0.551],
        [0.369, 0.789, 0.383],
        [0.993, 0.906, 0.144],
    ],
    "float32",
)


class SummaryWriters:
    """The `train` and `eval` `tf.summary` writers under `model_dir`.

    A process that is not the chief gets no-op writers, so that only one
    worker of a cluster writes.

    Args:
        model_dir: the job's directory.
        enabled: False for no-op writers.
    """

    def __init__(self, model_dir, enabled=True):
        if enabled:
            self.train = tf.summary.create_file_writer(
                os.path.join(model_dir, run_files.TRAIN_SUMMARIES))
            self.eval = tf.summary.create_file_writer(
                os.path.join(model_dir, run_files.EVAL_SUMMARIES))
        else:
            self.train = self.eval = tf.summary.create_noop_writer()

    def scalars(self, writer, values, step):
        """Writes each `name: value` of `values` as a scalar at `step`."""
        with writer.as_default(step=step):
            for name, value in values.items():
                tf.summary.scalar(name, value)
        writer.flush()

    def hparams(self, values):
        """Records the run's hyperparameters (the HParams dashboard)."""
        clean = {
            name: value if isinstance(value, (bool, int, float, str)) else str(value)
            for name, value in values.items()
            if value is not None
        }
        with self.train.as_default():
            hparams_api.hparams(clean)
        self.train.flush()

    def images(self, values, step):
        """Writes each `name: [1, height, width, 3] image` of `values`."""
        with self.train.as_default(step=step):
            for name, image in values.items():
                tf.summary.image(name, image, max_outputs=1)
        self.train.flush()

    def close(self):
        for writer in (self.train, self.eval):
            writer.close()


def colour_map(values):
    """Maps values in [0, 1] to viridis RGB colours (`[..., 3]` float32)."""
    values = tf.clip_by_value(tf.cast(values, tf.float32), 0.0, 1.0)
    position = values * (len(_VIRIDIS) - 1)
    lower = tf.minimum(tf.cast(tf.floor(position), tf.int32), len(_VIRIDIS) - 2)
    fraction = (position - tf.cast(lower, tf.float32))[..., None]
    table = tf.constant(_VIRIDIS)
    return tf.gather(table, lower) * (1.0 - fraction) + tf.gather(table, lower + 1) * fraction


def attention_image(attention, pixels_per_token=None):
    """One layer's attention weights as a `[1, height, width, 3]` image.

    Args:
        attention: `(num_heads, length, length)` weights of one example.
        pixels_per_token: the side of each weight's square; by default large
            enough for a 128-pixel-high image.

    Returns:
        The heads side by side (left to right), separated by a white column,
        each scaled to its largest weight and coloured with viridis.
    """
    attention = tf.convert_to_tensor(attention, tf.float32)
    length = int(attention.shape[-1])
    if pixels_per_token is None:
        pixels_per_token = max(1, 128 // max(length, 1))
    scaled = attention / (tf.reduce_max(attention, axis=[1, 2], keepdims=True) + 1e-9)
    image = colour_map(scaled)  # (heads, length, length, 3)
    image = tf.repeat(tf.repeat(image, pixels_per_token, axis=1), pixels_per_token, axis=2)
    separator = tf.ones_like(image[:, :, :1, :])
    image = tf.concat([image, separator], axis=2)[:, :, :, :]
    heads = tf.unstack(image, axis=0)
    return tf.concat(heads, axis=1)[None, :, :-1, :]


class AttentionProbe:
    """The attention weights of each encoder layer on one fixed example.

    Runs the encoder's embeddings and then each `TransformerEncoderBlock`
    with `return_attention_scores=True` (inference mode), on the real
    tokens of the example only (padding cropped).

    Args:
        encoder: a `tfnlp.models.BertEncoder`.
        example: a dict with `input_ids` and `segment_ids` (and
            `input_mask`) of one example, `(length,)` or `(1, length)`.
    """

    def __init__(self, encoder, example):
        self.encoder = encoder
        mask = np.asarray(example["input_mask"]).reshape(-1)
        length = int(mask.sum()) or mask.size
        self.inputs = {
            name: tf.constant(np.asarray(example[name]).reshape(1, -1)[:, :length], tf.int32)
            for name in ("input_ids", "segment_ids", "input_mask")
        }
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
        """`{"attention/layer_i": image}` for every layer."""
        return {
            f"attention/layer_{index}": attention_image(weights)
            for index, weights in enumerate(self._attention())
        }


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
