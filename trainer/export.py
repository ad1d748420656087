"""SavedModel export of a trained encoder (refined by the export issue)."""

import tensorflow as tf

_INPUT_NAMES = ("input_ids", "input_mask", "segment_ids")


class _EncoderModule(tf.Module):
    def __init__(self, encoder):
        super().__init__()
        self.encoder = encoder

    @tf.function(
        input_signature=[
            tf.TensorSpec([None, None], tf.int32, name=name) for name in _INPUT_NAMES
        ]
    )
    def serve(self, input_ids, input_mask, segment_ids):
        outputs = self.encoder(
            {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids},
            training=False,
        )
        return {
            "pooled_output": tf.cast(outputs["pooled_output"], tf.float32),
            "sequence_output": tf.cast(outputs["sequence_output"], tf.float32),
        }


def export_encoder(encoder, export_dir):
    """Writes `encoder` as a SavedModel with a `serving_default` signature.

    The signature takes int32 `input_ids`, `input_mask` and `segment_ids`
    of shape `(batch, length)` and returns float32 `pooled_output`
    `(batch, hidden_size)` and `sequence_output` `(batch, length,
    hidden_size)`.

    Args:
        encoder: a `tfnlp.models.BertEncoder`.
        export_dir: the SavedModel directory (created).

    Returns:
        `export_dir`.
    """
    module = _EncoderModule(encoder)
    tf.saved_model.save(module, export_dir, signatures={"serving_default": module.serve})
    return export_dir
