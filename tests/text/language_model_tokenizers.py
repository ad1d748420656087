"""Tokenizers of the language-model job for tests, one of each kind, from
text embedded here (no shared data): `TokenizerSpec`s and data directories
holding their files and `tokenizer.json`, as `pipelines.lm_data` writes
them (`lm_tokenizers.write_tokenizer`).
"""

import collections

from pipelines import lm_tokenizers, sentencepiece_model
from tfnlp.text import plain_character_tokenizer

# Some lines of Tiny Shakespeare (public domain), with the layout a
# language model sees: line breaks, a blank line, double spaces, indentation.
TEXT = """First Citizen:
Before we proceed any further, hear me speak.

All:
Speak, speak.

First Citizen:
You are all resolved rather to die than to famish?

All:
Resolved. resolved.

First Citizen:
First, you know Caius Marcius is chief enemy to the people.
  We know't, we know't.
MENENIUS:  Why, masters, my good friends, mine honest neighbours,
Will you undo yourselves?
"""
# Text whose characters TEXT lacks, and bytes of several widths.
UNSEEN = "Zoë — café ☃ 日本\t\U0001F600"
WORDPIECE_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "first", "citizen", ":",
                    "before", "we", "pro", "##ceed", "any", "further", ",", "hear", "me",
                    "speak", ".", "all", "you", "are", "##s", "re", "##sol", "##ved", "?")


def character_spec(text=TEXT, min_count=1):
    tokens = plain_character_tokenizer.character_vocabulary(
        collections.Counter(text), min_count)
    return lm_tokenizers.TokenizerSpec(
        "character", plain_character_tokenizer.character_vocabulary_bytes(tokens))


def sentencepiece_spec(model_type="bpe", vocab_size=400):
    """A model learned as the job learns one (identity normalization,
    spaces kept, byte fallback) from TEXT's lines, repeated."""
    options = sentencepiece_model.SentencePieceOptions(
        vocab_size=vocab_size, model_type=model_type, normalization_rule_name="identity",
        remove_extra_whitespaces=False)
    lines = [line for line in TEXT.split("\n") if line.strip()] * 20
    return lm_tokenizers.TokenizerSpec(
        "sentencepiece", sentencepiece_model.train_sentencepiece(lines, options))


def wordpiece_spec(lower_case=True):
    contents = "".join(token + "\n" for token in WORDPIECE_TOKENS).encode("utf-8")
    return lm_tokenizers.TokenizerSpec("wordpiece", contents, lower_case, WORDPIECE_TOKENS)


SPECS = {"character": character_spec, "sentencepiece": sentencepiece_spec,
         "wordpiece": wordpiece_spec}


def data_directory(folder, spec):
    """Writes the spec's file and `tokenizer.json` into `folder`; returns it."""
    folder.mkdir(parents=True, exist_ok=True)
    lm_tokenizers.write_tokenizer(spec, str(folder))
    return folder
