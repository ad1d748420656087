"""Keras layers written with `keras.ops`, so they run on any Keras backend."""

from tfnlp.layers.activations import get_activation
from tfnlp.layers.bahdanau_attention import BahdanauAttention
from tfnlp.layers.dropout import Dropout
from tfnlp.layers.gather import gather_positions
from tfnlp.layers.global_attention import GlobalAttention
from tfnlp.layers.lstm_encoder import LSTMEncoder
from tfnlp.layers.luong_attention import LuongAttention
from tfnlp.layers.masking import causal_mask, masked_softmax
from tfnlp.layers.multi_head_attention import MultiHeadAttention
from tfnlp.layers.position_embedding import PositionEmbedding
from tfnlp.layers.rotary_embedding import RotaryEmbedding
from tfnlp.layers.scalar_mix import ScalarMix
from tfnlp.layers.scaled_dot_product_attention import scaled_dot_product_attention
from tfnlp.layers.sinusoidal_position_encoding import SinusoidalPositionEncoding
from tfnlp.layers.transformer_decoder_block import TransformerDecoderBlock
from tfnlp.layers.transformer_encoder_block import TransformerEncoderBlock
