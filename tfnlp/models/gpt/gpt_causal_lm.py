"""The GPT language model: the backbone and the output embedding."""

import keras
import numpy as np
from keras import ops

from tfnlp.models.generative_model import GenerativeModel
from tfnlp.models.gpt import huggingface
from tfnlp.models.gpt.gpt_backbone import GPT_PRESETS, GPTBackbone, split_inputs
from tfnlp.models.preset_model import constructor_argument_names


@keras.saving.register_keras_serializable(package="tfnlp")
class GPTCausalLM(GenerativeModel):
    """A GPT-2-style language model: the logits of each next token.

    A `GPTBackbone` (built from the same arguments, as `self.backbone`)
    gives the final hidden states, and the token embedding, transposed,
    projects them to the vocabulary: `logits = h · Eᵀ`, one matrix for the
    input and the output embedding (as GPT-2, without a bias), or, with
    `tie_word_embeddings=False`, an output embedding of its own.

    For `tfnlp.decoding`, the model caches the keys and values of every
    block: `initial_cache(batch_size, max_length)` makes an empty cache,
    `prefill(token_ids, cache)` fills it for a prompt in one forward pass,
    and `decode_step(token_ids, cache, index)` is the decoders' step
    function. Cached decoding gives the logits of the full forward pass.
    `generate(prompt_ids, prompt_lengths, decoder, max_new_tokens)`
    continues a batch of prompts.

    Args:
        vocabulary_size, num_layers, num_heads, hidden_dim,
        intermediate_dim, max_sequence_length, dropout, attention_dropout,
        layer_norm_epsilon, activation, initializer_range, position_encoding,
        query_key_norm, zero_output_projections, embedding_shortcuts: the
            backbone's (see `GPTBackbone`).
        tie_word_embeddings: project to the vocabulary with the token
            embedding (GPT-2's); False for an output embedding of its own
            (`output_embedding`, zero at the start as in the speedrun).
        logit_soft_cap: squash the logits into `(-cap, cap)` with `cap *
            tanh(logits / cap)` (Gemma 2's and the speedrun's soft-capping);
            None for raw logits.
        end_token_id: the token that ends a generated sequence (GPT-2's
            `<|endoftext|>` is 50256); None for none, so that generation
            runs to `max_new_tokens`.
        dtype: the dtype policy of the layers (for example
            "mixed_bfloat16"); the logits are float32 whatever it is.
        **kwargs: standard `keras.Model` arguments.

    Call arguments:
        inputs: int token ids `(batch, length)`, or a dict with `token_ids`
            and `padding_mask` (see `GPTBackbone`).
        training: whether dropout is active.

    Returns:
        float32 logits `(batch, length, vocabulary_size)`: at position `i`,
        those of the token at `i + 1`.

    Example:

    >>> import numpy as np
    >>> from tfnlp.decoding import GreedySearch
    >>> model = GPTCausalLM.from_preset("tiny", vocabulary_size=50)
    >>> tuple(model(np.array([[5, 6, 7]])).shape)
    (1, 3, 50)
    >>> cache = model.initial_cache(batch_size=1, max_length=4)
    >>> logits, cache = model.prefill(np.array([[5, 6, 7]]), cache)
    >>> next_logits, cache = model.decode_step(np.array([8]), cache, index=3)
    >>> tuple(next_logits.shape)
    (1, 50)
    >>> result = model.generate(np.array([[5, 6, 7], [8, 9, 0]]), np.array([3, 2]),
    ...                         GreedySearch(), max_new_tokens=4)
    >>> tuple(result["ids"].shape)
    (2, 1, 4)

    References:
        - [Radford et al., 2019. Language Models are Unsupervised Multitask
          Learners](https://openai.com/research/better-language-models)
          (GPT-2)
        - [Press & Wolf, 2017. Using the Output Embedding to Improve
          Language Models](https://arxiv.org/abs/1608.05859) (tied
          embeddings)
        - [Pope et al., 2022. Efficiently Scaling Transformer Inference](
          https://arxiv.org/abs/2211.05102) (the key/value cache, prefill
          and decoding)
    """

    presets = GPT_PRESETS

    def __init__(
        self,
        vocabulary_size,
        num_layers=12,
        num_heads=12,
        hidden_dim=768,
        intermediate_dim=None,
        max_sequence_length=1024,
        dropout=0.1,
        attention_dropout=None,
        layer_norm_epsilon=1e-5,
        activation="gelu_approximate",
        initializer_range=0.02,
        position_encoding="learned",
        query_key_norm=False,
        zero_output_projections=False,
        embedding_shortcuts=False,
        tie_word_embeddings=True,
        logit_soft_cap=None,
        end_token_id=None,
        dtype=None,
        **kwargs,
    ):
        super().__init__(dtype=dtype, **kwargs)
        self.backbone = GPTBackbone(
            vocabulary_size=vocabulary_size,
            num_layers=num_layers,
            num_heads=num_heads,
            hidden_dim=hidden_dim,
            intermediate_dim=intermediate_dim,
            max_sequence_length=max_sequence_length,
            dropout=dropout,
            attention_dropout=attention_dropout,
            layer_norm_epsilon=layer_norm_epsilon,
            activation=activation,
            initializer_range=initializer_range,
            position_encoding=position_encoding,
            query_key_norm=query_key_norm,
            zero_output_projections=zero_output_projections,
            embedding_shortcuts=embedding_shortcuts,
            dtype=self.dtype_policy,
            name="backbone",
        )
        # The backbone's arguments are this model's too (its config).
        for name in constructor_argument_names(GPTBackbone):
            setattr(self, name, getattr(self.backbone, name))
        self.tie_word_embeddings = tie_word_embeddings
        self.output_embedding = None
        if not tie_word_embeddings:
            self.output_embedding = keras.layers.Embedding(
                vocabulary_size, hidden_dim, embeddings_initializer="zeros",
                dtype=self.dtype_policy, name="output_embedding")
            self.output_embedding.build((None, None))
        self.logit_soft_cap = logit_soft_cap
        self.end_token_id = end_token_id
        self.built = True

    @classmethod
    def from_huggingface(cls, path, **overrides):
        """The model of a Hugging Face GPT-2 checkpoint directory
        (`config.json` + `model.safetensors`, see
        `tfnlp.models.gpt.huggingface`); `overrides` change constructor
        arguments (dropout, dtype, ...) but not the sizes."""
        checkpoint = huggingface.read_checkpoint(path)
        model = cls(**{**checkpoint.arguments, "end_token_id": checkpoint.end_token_id,
                       **huggingface.checked_overrides(overrides, path)})
        huggingface.load_backbone_weights(model.backbone, checkpoint.tensors, path)
        return model

    @property
    def max_positions(self):
        """The longest sequence the model decodes: `max_sequence_length`."""
        return self.max_sequence_length

    # === Forward pass ===

    def call(self, inputs, training=None):
        token_ids, padding_mask = split_inputs(inputs)
        return self.logits(self.backbone.forward(token_ids, padding_mask, training=training)[0])

    def logits(self, hidden_states):
        """The output projection `h · Eᵀ`, in float32 (soft-capped with
        `logit_soft_cap`)."""
        table = self.output_embedding
        if table is None:
            table = self.backbone.token_embedding
        embeddings = ops.cast(table.embeddings, hidden_states.dtype)
        logits = ops.cast(ops.matmul(hidden_states, ops.transpose(embeddings)), "float32")
        if self.logit_soft_cap:
            logits = self.logit_soft_cap * ops.tanh(logits / self.logit_soft_cap)
        return logits

    # === Incremental decoding (the step contract of tfnlp.decoding) ===

    def initial_cache(self, batch_size, max_length):
        """An empty cache for `batch_size` sequences of up to `max_length`
        positions (see `GPTBackbone.initial_cache`)."""
        return self.backbone.initial_cache(batch_size, max_length)

    def prefill(self, token_ids, cache, index=0):
        """Writes the keys and values of `token_ids` (int `(batch,
        length)`, at positions `index` to `index + length - 1`) into
        `cache` in one forward pass.

        Returns:
            `(logits, cache)`: float32 `(batch, length, vocabulary_size)`,
            the logits of the token after each position, and the cache.
        """
        hidden_states, cache = self.backbone.forward(
            ops.cast(token_ids, "int32"), cache=cache, index=index)
        return self.logits(hidden_states), cache

    def decode_step(self, token_ids, cache, index):
        """One decoding step: the logits `(batch, vocabulary_size)` of the
        token after `token_ids` (int `(batch,)`, at position `index`), and
        the cache with this position's keys and values written in."""
        logits, cache = self.prefill(ops.cast(token_ids, "int32")[:, None], cache, index)
        return logits[:, 0, :], cache

    def generate(self, prompt_ids, prompt_lengths, decoder, max_new_tokens,
                 **decoder_arguments):
        """Continues a batch of prompts with a `tfnlp.decoding` decoder.

        The prompts' common part (all but the last token of the shortest
        prompt) is prefilled in one forward pass; the decoder then feeds
        each row the rest of its prompt and generates after it, so that
        prompts of different lengths decode side by side as each would
        alone. Generation stops at `end_token_id`, after
        `max_new_tokens`, or (greedy search and sampling) once a row's
        generated tokens end with its stop sequence.

        Args:
            prompt_ids: int `(batch, prompt_length)`, right-padded.
            prompt_lengths: int `(batch,)`, the prompts' lengths (at least
                1); None when every prompt fills `prompt_length`. When it
                is a symbolic tensor (inside a traced function) nothing is
                prefilled, since the prefill's length must be static.
            decoder: a `tfnlp.decoding` decoder (greedy, beam search,
                sampling).
            max_new_tokens: the static bound on the generated tokens;
                `prompt_length + max_new_tokens - 1` positions must fit
                `max_sequence_length`.
            **decoder_arguments: the decoder's other call arguments
                (`max_lengths`, `stop_sequence_ids` and
                `stop_sequence_lengths`, a sampler's `seed`,
                `temperature`, ...).

        Returns:
            The decoder's result dict: `ids` `(batch, num_sequences,
            max_new_tokens)` (the generated tokens only, ending with
            `end_token_id` when it is generated, 0-padded after), `lengths`
            and `scores`.
        """
        prompt_ids = ops.cast(prompt_ids, "int32")
        prompt_length = prompt_ids.shape[1]
        cache_length = prompt_length + max_new_tokens - 1
        self.check_positions(cache_length, "the cache length (prompt_length + max_new_tokens - 1)")
        first_index = prefill_length(prompt_lengths, prompt_length)
        cache = self.initial_cache(ops.shape(prompt_ids)[0], cache_length)
        if first_index:
            cache = self.prefill(prompt_ids[:, :first_index], cache)[1]
        return self.run_decoder(
            decoder, cache, None, self.generation_end_id, max_new_tokens,
            prompt_ids=prompt_ids, prompt_lengths=prompt_lengths, first_index=first_index,
            **decoder_arguments)

    @property
    def generation_end_id(self):
        """`end_token_id`, or `vocabulary_size` without one: an id outside
        the logits, which no decoder generates."""
        return self.vocabulary_size if self.end_token_id is None else self.end_token_id


def prefill_length(prompt_lengths, prompt_length):
    """The positions every prompt shares but the shortest one's last: the
    static `first_index` of the decoders. `prompt_length - 1` without
    `prompt_lengths`; 0 when they are not known until run time."""
    if prompt_lengths is None:
        return prompt_length - 1
    try:
        lengths = np.asarray(ops.convert_to_numpy(prompt_lengths))
    except (NotImplementedError, TypeError, ValueError):
        return 0
    return int(np.clip(lengths.min(), 1, prompt_length)) - 1
