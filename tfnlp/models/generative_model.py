"""The base of the models that generate text through `tfnlp.decoding`."""

from tfnlp.models.preset_model import PresetModel


class GenerativeModel(PresetModel):
    """Base of the models that decode: the seq2seq models and the decoder LMs.

    On top of `PresetModel` (named presets, the config round trip, stacks of
    blocks kept one attribute each), a generative model follows the step
    contract of `tfnlp.decoding` (see `tfnlp.decoding.contract`):

    - `decode_step(token_ids, cache, index) -> (logits, cache)`: the logits
      of the token after `token_ids` (int32 `(batch,)`, at position
      `index`), and the cache with that position written in;
    - an `initial_cache(...)` whose every leaf has the batch on axis 0.

    Each family's `generate` builds the cache and the start tokens from its
    own inputs (a source sentence, a prompt) and hands them to
    `run_decoder`, the one place where a model drives a decoder.
    `max_positions` is the number of positions the model can decode (None:
    no bound); `run_decoder` refuses to decode past it.

    Not a model to use by itself.

    Example:

    A model whose cache counts the steps, decoded greedily:

    >>> from keras import ops
    >>> from tfnlp.decoding import GreedySearch
    >>> class Countdown(GenerativeModel):
    ...     max_positions = 8
    ...     def decode_step(self, token_ids, cache, index):
    ...         steps = cache["steps"] + 1
    ...         logits = ops.one_hot(ops.where(steps >= 3, 1, 2), 4)
    ...         return logits, {"steps": steps}
    >>> model = Countdown()
    >>> result = model.run_decoder(GreedySearch(), {"steps": ops.zeros((2,), "int32")},
    ...                            start_ids=ops.zeros((2,), "int32"), end_id=1, max_length=5)
    >>> ops.convert_to_numpy(result["ids"])[:, 0].tolist()
    [[2, 2, 1, 0, 0], [2, 2, 1, 0, 0]]

    References:
        - [Radford et al., 2019. Language Models are Unsupervised Multitask
          Learners](https://openai.com/research/better-language-models)
          (generation as repeated next-token prediction)
    """

    #: The number of positions the model can decode; None for no bound.
    max_positions = None

    def decode_step(self, token_ids, cache, index):
        """One step of the `tfnlp.decoding` contract; see the class doc."""
        raise NotImplementedError(f"{type(self).__name__} must implement `decode_step()`.")

    def check_positions(self, positions, argument):
        """Raises unless `positions` (a Python int: the positions a call
        decodes, as `argument` in the caller's words) fit `max_positions`."""
        if self.max_positions is not None and positions > self.max_positions:
            raise ValueError(
                f"{argument}={positions} is longer than the model's "
                f"max_sequence_length={self.max_positions}. Ask for at most "
                f"{self.max_positions} positions, or build the model with a "
                "larger max_sequence_length."
            )

    def run_decoder(self, decoder, cache, start_ids, end_id, max_length, **decoder_arguments):
        """Runs `decoder` on `decode_step` from `cache`.

        Args:
            decoder: a `tfnlp.decoding` decoder (greedy, beam search,
                sampling).
            cache: the initial cache (batch on axis 0 of every leaf).
            start_ids: int32 `(batch,)`, the token at the decoder's first
                position.
            end_id: the token that ends a sequence.
            max_length: the decoder's static bound on generated tokens.
            **decoder_arguments: the decoder's other call arguments
                (`max_lengths`, a prompt, ...).

        Returns:
            The decoder's result: `ids` `(batch, num_sequences, length)`,
            `lengths` and `scores`.
        """
        return decoder(self.decode_step, cache, start_ids, end_id, max_length,
                       **decoder_arguments)
