"""Text: BERT tokenizers, vocabularies and input packing.

- `BertTokenizer`: the in-graph tokenizer (a Keras layer on tensorflow-text),
  for tf.data, models and SavedModels;
- `PlainBertTokenizer`: the same ids in plain Python, for Beam workers that
  do not load TensorFlow;
- `pack_inputs`, `load_vocabulary`, `write_vocabulary`, `SPECIAL_TOKENS`;
- `CharacterTokenizer` (in-graph) and `PlainCharacterTokenizer` (plain
  Python): the character vocabularies of the language-model data;
- `WordTokenizer` (in-graph words: lower-cased, punctuation split off, a
  `StringLookup` vocabulary), `split_words`, `word_counts`,
  `build_word_vocabulary`, `read_word_list`, `write_word_vocabulary`: the word-level
  students of distillation;
- `load_language_model_tokenizer(data_dir)`: the in-graph tokenizer of a
  `pipelines.lm_data` output directory (a `LanguageModelTokenizer`), from
  its `tokenizer.json` (`TokenizerDescriptor`).

Modules that need TensorFlow load on first use (`tfnlp.lazy_imports`).
"""

from tfnlp.lazy_imports import lazy_attributes

__getattr__, __dir__ = lazy_attributes(__name__, {
    "BertTokenizer": "bert_tokenizer",
    "PlainBertTokenizer": "plain_bert_tokenizer",
    "SentencePieceTokenizer": "sentencepiece_tokenizer",
    "pack_inputs": "packing",
    "SPECIAL_TOKENS": "vocabulary",
    "load_vocabulary": "vocabulary",
    "write_vocabulary": "vocabulary",
    "normalization": "normalization",
    "CharacterTokenizer": "character_tokenizer",
    "PlainCharacterTokenizer": "plain_character_tokenizer",
    "LanguageModelTokenizer": "language_model_tokenizer",
    "load_language_model_tokenizer": "language_model_tokenizer",
    "TokenizerDescriptor": "tokenizer_descriptor",
    "WORD_VECTOR_FORMATS": "word_vectors",
    "WordVectorAlignment": "word_vectors",
    "WordVectorFileError": "word_vectors",
    "align_word_vectors": "word_vectors",
    "detect_word_vector_format": "word_vectors",
    "iterate_word_vectors": "word_vectors",
    "read_word_vectors": "word_vectors",
    "TransferSetAugmenter": "augmentation",
    "AugmentationStatistics": "augmentation",
    "count_words": "augmentation",
    "WordTokenizer": "word_tokenizer",
    "split_words": "word_tokenizer",
    "word_counts": "word_tokenizer",
    "build_word_vocabulary": "word_tokenizer",
    "read_word_list": "word_tokenizer",
    "write_word_vocabulary": "word_tokenizer",
})
