"""The signatures of a language-model SavedModel: prompts in, text out, and
text scored.

`LanguageModelSignatures` builds them from a decoder-only model and its
tokenizer (`signatures` lists their inputs and outputs); they need
TensorFlow and the tensorflow-text ops only.
"""

import tensorflow as tf

from tfnlp.decoding import RandomSampling
from tfnlp.export.input_rules import InputRules, input_rules_file

PROMPTS = "prompts"
TEXTS = "texts"
OPTIONS = ("temperature", "top_k", "top_p", "max_new_tokens", "seed", "stop")
DEFAULTS = {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "max_new_tokens": 64,
            "seed": -1, "stop": ""}


class LanguageModelSignatures(tf.Module):
    """Text generation and scoring with a decoder-only language model.

    Args:
        model: a `tfnlp.models.GPTCausalLM` (anything with its `generate`,
            `max_sequence_length` and a call giving logits).
        tokenizer: the `tfnlp.text.LanguageModelTokenizer` of the model's
            data.
        max_new_tokens: the most tokens a request may generate (the
            decoding loop's static bound); the prompt keeps at most
            `max_sequence_length - max_new_tokens + 1` ids.
        defaults: the options `generate` uses and `generate_with_options`
            falls back to (`DEFAULTS`' keys; missing ones take `DEFAULTS`).
        repetition_penalty: the decoder's repetition penalty (1.0: none).
        max_stop_tokens: the most ids of a stop string that ends generation
            early (the static width of the stop sequences); longer ones
            only cut the completion.
        suppressed_token_ids: the ids never generated; None for the
            tokenizer's `non_text_ids`.

    Example:

        signatures = LanguageModelSignatures(model, tokenizer, max_new_tokens=128,
                                             defaults={"temperature": 0.8, "top_p": 0.9})
        signatures.complete(["ROMEO:"], seed=1)          # ['\\nWhat ...']
        signatures.complete(["ROMEO:"], seed=1, stop="\\n")  # ['']
        write_next_version(export_dir, signatures.signatures(),
                           {"tokenizer": tokenizer}, signatures.extra_files())

    References:
        - [Holtzman et al., 2020. The Curious Case of Neural Text
          Degeneration](https://arxiv.org/abs/1904.09751) (nucleus sampling)
        - [TensorFlow Serving's SignatureDefs](
          https://www.tensorflow.org/tfx/serving/signature_defs)
    """

    def __init__(self, model, tokenizer, max_new_tokens=256, defaults=None,
                 repetition_penalty=1.0, max_stop_tokens=16, suppressed_token_ids=None):
        super().__init__()
        if not 1 <= max_new_tokens < model.max_sequence_length:
            raise ValueError(
                f"max_new_tokens={max_new_tokens} must be at least 1 and below the model's "
                f"max_sequence_length={model.max_sequence_length}, which prompt and "
                "continuation share."
            )
        if model.vocabulary_size != tokenizer.vocabulary_size:
            raise ValueError(
                f"The model has {model.vocabulary_size} token embeddings but the tokenizer "
                f"{tokenizer.vocabulary_size} ids: they are not the model and tokenizer of one "
                "run. Give the tokenizer of the data the model was trained on."
            )
        self.model = model
        self.tokenizer = tokenizer
        self.max_new_tokens = int(max_new_tokens)
        self.max_prompt_tokens = model.max_sequence_length - self.max_new_tokens + 1
        self.defaults = {**DEFAULTS, **(defaults or {})}
        self.defaults["max_new_tokens"] = min(int(self.defaults["max_new_tokens"]),
                                              self.max_new_tokens)
        if max_stop_tokens < 1:
            raise ValueError(
                f"max_stop_tokens={max_stop_tokens} must be at least 1: it is the most ids "
                "of a stop string that ends generation early."
            )
        self.max_stop_tokens = int(max_stop_tokens)
        if suppressed_token_ids is None:
            suppressed_token_ids = tokenizer.non_text_ids
        self.decoder = RandomSampling(repetition_penalty=repetition_penalty,
                                      suppressed_token_ids=suppressed_token_ids)

    # === Generation ===

    def prompt_ids(self, prompts):
        """`(ids, lengths)`: each prompt after the end-of-document id, its
        last `max_prompt_tokens` ids, right-padded to that width."""
        ids = self.tokenizer.tokenize(prompts)
        start = tf.fill([ids.nrows(), 1], tf.constant(self.tokenizer.end_of_document_id,
                                                      ids.dtype))
        ids = tf.concat([start, ids], axis=1)
        lengths = tf.minimum(tf.cast(ids.row_lengths(), tf.int32), self.max_prompt_tokens)
        # The last `length` ids of each row, shifted to its start.
        starts = tf.cast(ids.row_lengths(), tf.int32) - lengths
        positions = starts[:, None] + tf.range(self.max_prompt_tokens)[None, :]
        padded = ids.to_tensor(default_value=0, shape=[None, None])
        padded = tf.pad(padded, [[0, 0], [0, self.max_prompt_tokens]])
        kept = tf.gather(padded, positions, batch_dims=1)
        inside = tf.range(self.max_prompt_tokens)[None, :] < lengths[:, None]
        return tf.where(inside, kept, tf.zeros_like(kept)), lengths

    def stop_sequences(self, stops):
        """The decoder's stop sequences of the stop strings.

        A first id that detokenizes to nothing (SentencePiece's "▁" before
        a stop string that starts without a word) is left out: the
        generated text need not have a space there.

        Args:
            stops: string `[batch]`, "" for none.

        Returns:
            `(ids, lengths)`: int32 `[batch, max_stop_tokens]`, the ids of
            each stop string, right-padded, and int32 `[batch]`, their
            number, 0 where they cannot end generation (an empty stop
            string, one of more than `max_stop_tokens` ids, or one whose
            ids do not detokenize back to it).

        Example:

            ids, lengths = signatures.stop_sequences(tf.constant(["\\n\\n", ""]))
            lengths   # [2, 0] with the character tokenizer
        """
        ids = self.tokenizer.tokenize(stops)
        first_is_empty = tf.equal(self.tokenizer.detokenize(ids[:, :1]), "")
        positions = tf.ragged.range(ids.row_lengths())
        ids = tf.ragged.boolean_mask(ids, tf.logical_not(
            tf.logical_and(tf.equal(positions, 0), first_is_empty[:, None])))
        lengths = tf.cast(ids.row_lengths(), tf.int32)
        exact = tf.equal(self.tokenizer.detokenize(ids), stops)
        usable = tf.logical_and(exact, lengths <= self.max_stop_tokens)
        padded = ids.to_tensor(default_value=0, shape=[None, self.max_stop_tokens])
        return padded, tf.where(usable, lengths, 0)

    def generate_ids(self, prompts, temperature, top_k, top_p, max_new_tokens, seed,
                     stop=None):
        """`(ids, lengths)` of the continuations, per-example options (a
        `stop` string tensor ends each row at its stop string's ids).

        A prompt is tokenized in the graph, after the end-of-document id
        that begins every document of the training data, and its last
        `max_prompt_tokens` ids are kept (`prompt_ids`). The continuation is
        sampled (`tfnlp.decoding.RandomSampling`, with the key/value cache)
        until the end-of-document id, the stop string or `max_new_tokens`,
        never with the tokenizer's ids that stand for no text
        (`non_text_ids`: padding, unknown, begin-of-sequence).

        The stop string ends generation early through its ids
        (`stop_sequences`; `stop_sequence_ids` of `tfnlp.decoding`): a row
        stops as soon as its generated ids end with them. With the character
        tokenizer this is exact: generation stops right after the stop
        string's first occurrence. With SentencePiece or WordPiece the model
        may generate the stop string under another segmentation than its own
        (one piece across the stop string and the text around it, a
        word-start piece where the stop string has none, or the reverse):
        generation then goes on, and the completion is still cut at the
        first occurrence (`cut_at_stop`). A stop string whose ids do not
        detokenize back to it (characters the vocabulary lacks, WordPiece's
        lower-casing and spacing) or that has more than `max_stop_tokens`
        ids only cuts the completion.
        """
        prompt_ids, prompt_lengths = self.prompt_ids(prompts)
        stops = {}
        if stop is not None:
            stop_ids, stop_lengths = self.stop_sequences(stop)
            stops = {"stop_sequence_ids": stop_ids, "stop_sequence_lengths": stop_lengths}
        max_new_tokens = tf.clip_by_value(tf.cast(max_new_tokens, tf.int32), 1,
                                          self.max_new_tokens)
        result = self.model.generate(
            prompt_ids, prompt_lengths, self.decoder, self.max_new_tokens,
            max_lengths=max_new_tokens,
            seed=_row_seeds(seed),
            temperature=tf.maximum(tf.cast(temperature, tf.float32), 1e-6),
            top_k=tf.maximum(tf.cast(top_k, tf.int32), 0),
            top_p=tf.clip_by_value(tf.cast(top_p, tf.float32), 1e-6, 1.0),
            **stops,
        )
        return result["ids"][:, 0, :], result["lengths"][:, 0]

    def generate_with_options(self, prompts, temperature, top_k, top_p, max_new_tokens, seed,
                              stop):
        """`{"completions", "new_tokens"}` with every option per example.

        `python -m tfnlp.serve` fills the options a request leaves out with
        the recorded defaults and refuses values out of range (400), as the
        export records them (`tfnlp.export.input_rules`). A `seed` of 0 or
        more reproduces a sample, alone or in any batch.
        """
        ids, lengths = self.generate_ids(prompts, temperature, top_k, top_p, max_new_tokens,
                                         seed, stop)
        text = self.tokenizer.detokenize(ids)
        return {"completions": cut_at_stop(text, stop), "new_tokens": tf.cast(lengths, tf.int32)}

    def generate(self, prompts):
        """`generate_with_options` with the recorded defaults."""
        rows = tf.shape(prompts)[0]
        options = {name: tf.fill([rows], tf.constant(value, dtype=_OPTION_DTYPES[name]))
                   for name, value in self.defaults.items() if name in OPTIONS}
        return self.generate_with_options(prompts, **options)

    def complete(self, prompts, **options):
        """The continuations of a list of prompts as Python strings (eager;
        the options as in `generate_with_options`, the defaults otherwise)."""
        rows = len(prompts)
        values = {name: tf.fill([rows], tf.constant(options.get(name, self.defaults[name]),
                                                    dtype=_OPTION_DTYPES[name]))
                  for name in OPTIONS}
        outputs = self._generate_function(tf.constant(prompts), **values)
        return [text.decode("utf-8", "replace") for text in outputs["completions"].numpy()]

    # === Scoring ===

    def score(self, texts):
        """`{"log_likelihood", "token_count"}` of each text: its total
        log-probability under the model (natural log), every token predicted
        from those before it (the first from the end-of-document id), over
        at most `max_sequence_length` tokens, and how many tokens were
        scored."""
        ids = self.tokenizer.tokenize(texts)
        start = tf.fill([ids.nrows(), 1], tf.constant(self.tokenizer.end_of_document_id,
                                                      ids.dtype))
        ids = tf.concat([start, ids], axis=1)[:, : self.model.max_sequence_length + 1]
        lengths = tf.cast(ids.row_lengths(), tf.int32)
        dense = tf.cast(ids.to_tensor(default_value=0), tf.int32)
        logits = tf.cast(self.model(dense[:, :-1]), tf.float32)
        targets = dense[:, 1:]
        log_probs = -tf.nn.sparse_softmax_cross_entropy_with_logits(labels=targets,
                                                                    logits=logits)
        scored = tf.range(tf.shape(targets)[1])[None, :] < (lengths - 1)[:, None]
        return {
            "log_likelihood": tf.reduce_sum(tf.where(scored, log_probs, 0.0), axis=1),
            "token_count": lengths - 1,
        }

    # === Export ===

    @property
    def _generate_function(self):
        if not hasattr(self, "_generate_with_options"):
            self._generate_with_options = tf.function(
                self.generate_with_options, input_signature=[
                    tf.TensorSpec([None], tf.string, name=PROMPTS),
                    *(tf.TensorSpec([None], _OPTION_DTYPES[name], name=name)
                      for name in OPTIONS)])
        return self._generate_with_options

    def signatures(self):
        """The concrete functions to save, by signature name.

        | signature | inputs | outputs |
        |---|---|---|
        | `serving_default`, `generate` | `prompts`: string `[batch]` | `completions`: string `[batch]`; `new_tokens`: int32 `[batch]` (the stop string's tokens included) |
        | `generate_with_options` | `prompts`; per example: `temperature` float32, `top_k` int32, `top_p` float32, `max_new_tokens` int32, `seed` int64 (< 0: a random one), `stop` string ("" for none; generation ends once it is generated, and the completion is cut before its first occurrence) | as `generate` |
        | `score` | `texts`: string `[batch]` | `log_likelihood`: float32 `[batch]` (natural log); `token_count`: int32 `[batch]` |

        `generate` uses the defaults recorded at export (`defaults`);
        `generate_with_options` takes every option per example.
        """
        generate = tf.function(
            self.generate, input_signature=[tf.TensorSpec([None], tf.string, name=PROMPTS)]
        ).get_concrete_function()
        return {
            "serving_default": generate,
            "generate": generate,
            "generate_with_options": self._generate_function.get_concrete_function(),
            "score": tf.function(
                self.score, input_signature=[tf.TensorSpec([None], tf.string, name=TEXTS)]
            ).get_concrete_function(),
        }

    def extra_files(self):
        """`{name: bytes}` for the SavedModel's `assets.extra/`: the
        defaults of `generate_with_options`' options and their ranges
        (`tfnlp.export.input_rules`)."""
        ranges = {"temperature": {"above": 0}, "top_k": {"at_least": 0},
                  "top_p": {"above": 0, "at_most": 1},
                  "max_new_tokens": {"at_least": 1, "at_most": self.max_new_tokens}}
        defaults = {name: self.defaults[name] for name in OPTIONS}
        return input_rules_file({"generate_with_options": InputRules(defaults, ranges)})


_OPTION_DTYPES = {"temperature": tf.float32, "top_k": tf.int32, "top_p": tf.float32,
                  "max_new_tokens": tf.int32, "seed": tf.int64, "stop": tf.string}


def _row_seeds(seed):
    """int32 `(batch, 2)` seeds of int64 `(batch,)`: the seed's two 32-bit
    words, or random words where the seed is negative."""
    seed = tf.cast(seed, tf.int64)
    random = tf.random.uniform(tf.shape(seed), 0, 2**31 - 1, dtype=tf.int64)
    seed = tf.where(seed < 0, random, seed)
    low = tf.cast(tf.bitwise.bitwise_and(seed, 0x7FFFFFFF), tf.int32)
    high = tf.cast(tf.bitwise.right_shift(seed, 31), tf.int32)
    return tf.stack([low, high], axis=1)


def cut_at_stop(texts, stops):
    """Each text up to (not including) the first occurrence of its stop
    string; texts whose stop is "" are whole."""

    def cut(pair):
        text, stop = pair
        return tf.cond(tf.equal(stop, ""), lambda: text,
                       lambda: tf.strings.split(tf.expand_dims(text, 0), sep=stop,
                                                maxsplit=1).flat_values[0])

    return tf.map_fn(cut, (texts, stops), fn_output_signature=tf.string)
