"""Shared helpers of the BERT model tests."""

from tfnlp.models import BertConfig


def tiny_config(**overrides):
    """The small `BertConfig` of the model tests (1 layer of width 16, 2
    heads, a vocabulary of 61, 16 positions), with `overrides`."""
    fields = {
        "vocab_size": 61, "hidden_size": 16, "num_layers": 1, "num_heads": 2,
        "intermediate_size": 32, "max_position_embeddings": 16,
    }
    fields.update(overrides)
    return BertConfig(**fields)
