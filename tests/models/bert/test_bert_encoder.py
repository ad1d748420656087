import keras
import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from tests.layer_test_helpers import assert_allclose_nested, to_numpy
from tests.model_test_helpers import check_model
from tests.models.bert.helpers import randomize_weights
from tfnlp.layers import TransformerEncoderBlock
from tfnlp.models import BertConfig, BertEncoder

BATCH, LENGTH = 3, 8
LENGTHS = [8, 5, 2]


def tiny_config(**overrides):
    fields = {"vocab_size": 97, "max_position_embeddings": 16}
    fields.update(overrides)
    return BertConfig.preset("tiny", **fields)


def make_inputs(lengths=LENGTHS, length=LENGTH, vocab_size=97, seed=0):
    rng = np.random.default_rng(seed)
    mask = (np.arange(length)[None, :] < np.asarray(lengths)[:, None]).astype("int32")
    input_ids = rng.integers(1, vocab_size, size=(len(lengths), length)).astype("int32")
    segment_ids = (np.arange(length)[None, :] >= np.asarray(lengths)[:, None] // 2)
    return {
        "input_ids": input_ids * mask,
        "input_mask": mask,
        "segment_ids": segment_ids.astype("int32") * mask,
    }


@pytest.fixture(scope="module")
def encoder():
    model = BertEncoder(tiny_config())
    randomize_weights(model)
    return model


def test_outputs_have_the_documented_keys_and_shapes(encoder):
    outputs = encoder(make_inputs())
    assert set(outputs) == {"sequence_output", "pooled_output", "encoder_outputs"}
    assert tuple(outputs["sequence_output"].shape) == (BATCH, LENGTH, 128)
    assert tuple(outputs["pooled_output"].shape) == (BATCH, 128)
    assert len(outputs["encoder_outputs"]) == 2
    for layer_output in outputs["encoder_outputs"]:
        assert tuple(layer_output.shape) == (BATCH, LENGTH, 128)
    assert_allclose_nested(outputs["encoder_outputs"][-1], outputs["sequence_output"])


def test_layers_and_constructor_arguments_are_attributes(encoder):
    config = tiny_config()
    assert encoder.config == config
    assert tuple(encoder.token_embedding.embeddings.shape) == (97, 128)
    assert encoder.token_embedding_matrix is encoder.token_embedding.embeddings
    assert tuple(encoder.segment_embedding.embeddings.shape) == (2, 128)
    assert tuple(encoder.position_embedding.embeddings.shape) == (16, 128)
    assert len(encoder.transformer_layers) == 2
    block = encoder.transformer_layers[0]
    assert isinstance(block, TransformerEncoderBlock)
    assert (block.num_heads, block.intermediate_dim, block.activation) == (2, 512, "gelu")
    assert block.layer_norm_epsilon == 1e-12 and block.norm_first is False
    assert encoder.embeddings_layer_norm.epsilon == 1e-12


def test_weights_start_from_a_truncated_normal_of_the_initializer_range():
    model = BertEncoder(tiny_config(initializer_range=0.05, vocab_size=2000))
    for variable in (
        model.token_embedding.embeddings,
        model.transformer_layers[0].self_attention.query_dense.kernel,
        model.transformer_layers[1].feedforward_intermediate_dense.kernel,
        model.pooled_dense.kernel,
    ):
        values = to_numpy(variable)
        assert np.abs(values).max() <= 2 * 0.05 + 1e-6, variable.path
        # A normal truncated at two standard deviations has std 0.88 sigma.
        assert 0.8 * 0.05 < values.std() < 0.95 * 0.05, variable.path


def test_dropout_rates_come_from_the_config():
    model = BertEncoder(tiny_config(hidden_dropout=0.2, attention_dropout=0.3))
    assert model.embeddings_dropout.rate == 0.2
    for block in model.transformer_layers:
        assert block.feedforward_dropout.rate == 0.2
        assert block.self_attention_dropout.rate == 0.2
        assert block.self_attention.attention_dropout.rate == 0.3
    revived = BertEncoder.from_config(model.get_config())
    assert revived.transformer_layers[1].self_attention.attention_dropout.rate == 0.3


def test_dropout_is_active_only_in_training(encoder):
    inputs = make_inputs()
    assert_allclose_nested(encoder(inputs), encoder(inputs, training=False))
    trained = to_numpy(encoder(inputs, training=True)["sequence_output"])
    assert np.abs(trained - to_numpy(encoder(inputs)["sequence_output"])).max() > 1e-3


def test_pooled_output_is_tanh_dense_of_the_first_token(encoder):
    outputs = encoder(make_inputs())
    kernel, bias = encoder.pooled_dense.get_weights()
    first_token = to_numpy(outputs["sequence_output"])[:, 0]
    np.testing.assert_allclose(
        to_numpy(outputs["pooled_output"]), np.tanh(first_token @ kernel + bias),
        atol=1e-5,
    )


def test_padding_never_changes_the_outputs_of_real_tokens(encoder):
    inputs = make_inputs()
    mask = inputs["input_mask"].astype(bool)
    outputs = encoder(inputs)
    # Other ids and segments at the padded positions, and more padding.
    noisy = {name: np.pad(value, [(0, 0), (0, 4)]) for name, value in inputs.items()}
    padding = ~np.pad(mask, [(0, 0), (0, 4)])
    rng = np.random.default_rng(5)
    noisy["input_ids"][padding] = rng.integers(1, 97, size=padding.sum())
    noisy["segment_ids"][padding] = 1
    noisy_outputs = encoder(noisy)
    for name in ("sequence_output",):
        np.testing.assert_allclose(
            to_numpy(noisy_outputs[name])[:, :LENGTH][mask],
            to_numpy(outputs[name])[mask], atol=1e-5,
        )
    np.testing.assert_allclose(
        to_numpy(noisy_outputs["pooled_output"]), to_numpy(outputs["pooled_output"]),
        atol=1e-5,
    )


def test_segment_ids_change_the_outputs(encoder):
    inputs = make_inputs()
    other = dict(inputs, segment_ids=np.zeros_like(inputs["segment_ids"]))
    difference = to_numpy(encoder(inputs)["sequence_output"]) - to_numpy(
        encoder(other)["sequence_output"]
    )
    assert np.abs(difference[0]).max() > 1e-3


@pytest.mark.parametrize("num_layers", [1, 3])
def test_query_positions_give_the_full_encoders_rows(num_layers):
    encoder = BertEncoder(tiny_config(num_layers=num_layers))
    randomize_weights(encoder, seed=num_layers + 1)
    inputs = make_inputs()
    positions = np.random.default_rng(0).integers(0, LENGTH, size=(len(LENGTHS), 4))
    full = encoder(inputs, training=False)
    queried = encoder.encode(inputs, query_positions=positions, training=False)
    expected_rows = np.take_along_axis(
        to_numpy(full["sequence_output"]), positions[..., None], axis=1)
    np.testing.assert_allclose(to_numpy(queried["sequence_output"]), expected_rows,
                               atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(to_numpy(queried["pooled_output"]),
                               to_numpy(full["pooled_output"]), atol=1e-5, rtol=1e-5)


def test_config_holds_the_bert_config(encoder):
    assert BertEncoder.from_config(encoder.get_config()).config == encoder.config


def test_shared_model_checks_and_jax_give_the_outputs_of_tensorflow(encoder, tmp_path):
    check_model(encoder, make_inputs(), tmp_path, jax=True, atol=2e-5)


def test_keras_save_and_load_as_a_layer_of_a_larger_model(encoder, tmp_path):
    inputs = make_inputs()
    symbolic = {
        name: keras.Input(shape=(None,), dtype="int32", name=name) for name in inputs
    }
    wrapper = keras.Model(symbolic, encoder(symbolic)["pooled_output"])
    wrapper.save(tmp_path / "wrapper.keras")
    loaded = keras.saving.load_model(tmp_path / "wrapper.keras")
    assert_allclose_nested(loaded(inputs), encoder(inputs)["pooled_output"])


def test_every_variable_gets_a_gradient(encoder):
    inputs = {name: tf.constant(value) for name, value in make_inputs().items()}
    with tf.GradientTape() as tape:
        outputs = encoder(inputs)
        loss = tf.reduce_sum(outputs["pooled_output"] ** 2)
        for index, layer_output in enumerate(outputs["encoder_outputs"]):
            weights = np.random.default_rng(index).normal(size=layer_output.shape)
            loss += tf.reduce_sum(layer_output * weights.astype("float32"))
    variables = encoder.trainable_variables
    gradients = tape.gradient(loss, variables)
    for variable, gradient in zip(variables, gradients):
        assert gradient is not None, variable.path
        gradient = tf.convert_to_tensor(gradient).numpy()
        assert np.all(np.isfinite(gradient)) and np.any(gradient != 0), variable.path


def test_compiles_with_xla(encoder):
    inputs = make_inputs()
    compiled = tf.function(encoder, jit_compile=True)
    tensors = {name: tf.constant(value) for name, value in inputs.items()}
    assert_allclose_nested(compiled(tensors), encoder(inputs), atol=1e-4, rtol=1e-4)


def test_matches_keras_hub_bert_backbone_with_its_weights():
    # keras-hub's BertBackbone uses the tanh GELU and names its layers as
    # BertEncoder does; copied layer by layer, the outputs must agree.
    reference = keras_hub.models.BertBackbone(
        vocabulary_size=97, num_layers=2, num_heads=2, hidden_dim=32,
        intermediate_dim=64, max_sequence_length=16,
    )
    ours = BertEncoder(BertConfig(
        vocab_size=97, num_layers=2, num_heads=2, hidden_size=32,
        intermediate_size=64, max_position_embeddings=16,
        hidden_activation="gelu_approximate",
    ))
    randomize_weights(reference, seed=3)
    for layer in reference.layers:
        if layer.weights:
            ours.get_layer(layer.name).set_weights(layer.get_weights())
    inputs = make_inputs()
    expected = reference({
        "token_ids": inputs["input_ids"], "segment_ids": inputs["segment_ids"],
        "padding_mask": inputs["input_mask"],
    })
    outputs = ours(inputs)
    for name in ("sequence_output", "pooled_output"):
        assert_allclose_nested(outputs[name], expected[name], atol=1e-5, rtol=1e-5)


def test_dtype_policy_reaches_every_layer_and_round_trips():
    model = BertEncoder(tiny_config(num_layers=1), dtype="mixed_bfloat16")
    outputs = model(make_inputs())
    assert keras.backend.standardize_dtype(outputs["sequence_output"].dtype) == "bfloat16"
    assert model.token_embedding.embeddings.dtype == "float32"
    for layer in (model, model.transformer_layers[0], model.pooled_dense):
        assert layer.dtype_policy.name == "mixed_bfloat16"
    revived = BertEncoder.from_config(model.get_config())
    assert revived.dtype_policy.name == "mixed_bfloat16"
    assert revived.transformer_layers[0].dtype_policy.name == "mixed_bfloat16"


def test_a_config_of_the_wrong_type_is_rejected():
    with pytest.raises(ValueError, match="must be a tfnlp.models.BertConfig"):
        BertEncoder("tiny")
    with pytest.raises(ValueError, match="Unknown BertConfig keys: layers"):
        BertEncoder({"layers": 2})


