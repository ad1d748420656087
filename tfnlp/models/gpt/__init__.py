"""The GPT family: decoder-only Transformer language models (GPT-2).

- `GPTBackbone`: token ids to the final hidden states (pre-LN
  `TransformerDecoderBlock`s without cross-attention);
- `GPTCausalLM`: the backbone and the tied output embedding; the step
  contract of `tfnlp.decoding` with a key/value cache (`initial_cache`,
  `prefill`, `decode_step`) and `generate` from prompts;
- `GPTSequenceClassifier`: a classifier on the last real token;
- `GPT_PRESETS`: `tiny`, `mini`, `char` and `gpt2`, named dicts of
  constructor arguments;
- `huggingface`: Hugging Face GPT-2 checkpoints (`from_huggingface`).
"""

from tfnlp.models.gpt.gpt_backbone import GPT_PRESETS, GPTBackbone
from tfnlp.models.gpt.gpt_causal_lm import GPTCausalLM
from tfnlp.models.gpt.gpt_sequence_classifier import GPTSequenceClassifier
