"""A small German→English Transformer made of tfnlp.layers, on Multi30k.

Word-level vocabularies keep the demo self-contained until the WordPiece
tokenizer (the Text issue) lands; the model is what is on show.
"""

import collections
import os
import re
import warnings

import keras
import numpy as np
import sacrebleu
import tensorflow as tf
from keras import ops

from tfnlp import layers

PAD, UNK, START, END = 0, 1, 2, 3
SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[START]", "[END]"]
MAX_LENGTH = 24
WORD_PATTERN = re.compile(r"\w+|[^\w\s]")


def words(line):
    return WORD_PATTERN.findall(line.lower())


def read_lines(path, count):
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"{path} is missing. The demo reads the Multi30k files of the "
            "shared data folder; pass --data_dir=DIR where DIR/mt/ holds "
            "train.de, train.en, val.de and val.en."
        )
    with open(path, encoding="utf-8") as file:
        return [line.rstrip("\n") for _, line in zip(range(count), file)]


def load_multi30k(data_dir, train_pairs, eval_pairs):
    folder = os.path.join(data_dir, "mt")
    return {
        split: (
            read_lines(os.path.join(folder, f"{split}.de"), count),
            read_lines(os.path.join(folder, f"{split}.en"), count),
        )
        for split, count in (("train", train_pairs), ("val", eval_pairs))
    }


class Vocabulary:
    """Word ↔ id for the demo: the most frequent training words, plus specials."""

    def __init__(self, sentences, size):
        counts = collections.Counter(w for line in sentences for w in words(line))
        self.tokens = SPECIAL_TOKENS + [w for w, _ in counts.most_common(size)]
        self.ids = {token: index for index, token in enumerate(self.tokens)}

    def encode(self, line, add_start=False):
        ids = [self.ids.get(word, UNK) for word in words(line)][: MAX_LENGTH - 2]
        return ([START] if add_start else []) + ids + [END]

    def decode(self, ids):
        tokens = []
        for index in ids:
            if index == END:
                break
            tokens.append(self.tokens[index])
        return " ".join(tokens)


def pad(sequences, length=MAX_LENGTH):
    array = np.zeros((len(sequences), length), "int32")
    for row, sequence in enumerate(sequences):
        array[row, : len(sequence)] = sequence[:length]
    return array


@keras.saving.register_keras_serializable(package="tfnlp_demo")
class Translator(keras.Model):
    """Encoder-decoder Transformer: tfnlp blocks, sinusoidal positions."""

    def __init__(self, source_vocabulary_size, target_vocabulary_size,
                 hidden_dim=64, num_layers=2, num_heads=4, **kwargs):
        super().__init__(**kwargs)
        self.source_vocabulary_size = source_vocabulary_size
        self.target_vocabulary_size = target_vocabulary_size
        self.hidden_dim = hidden_dim
        self.num_layers = num_layers
        self.num_heads = num_heads
        self.source_embedding = keras.layers.Embedding(source_vocabulary_size, hidden_dim)
        self.target_embedding = keras.layers.Embedding(target_vocabulary_size, hidden_dim)
        self.positions = layers.SinusoidalPositionEncoding()
        self.encoder_blocks = [
            layers.TransformerEncoderBlock(num_heads, 4 * hidden_dim, dropout=0.1)
            for _ in range(num_layers)
        ]
        self.decoder_blocks = [
            layers.TransformerDecoderBlock(num_heads, 4 * hidden_dim, dropout=0.1)
            for _ in range(num_layers)
        ]
        self.output_projection = keras.layers.Dense(target_vocabulary_size)

    def embed(self, embedding, ids, start_index=0):
        x = embedding(ids) * np.sqrt(self.hidden_dim).astype("float32")
        return x + self.positions(x, start_index=start_index)

    def encode(self, source_ids, training=None):
        source_mask = ops.not_equal(source_ids, PAD)
        x = self.embed(self.source_embedding, source_ids)
        for block in self.encoder_blocks:
            x = block(x, padding_mask=source_mask, training=training)
        return x, source_mask

    def call(self, inputs, training=None):
        encoded, source_mask = self.encode(inputs["source_ids"], training)
        y = self.embed(self.target_embedding, inputs["target_ids"])
        for block in self.decoder_blocks:
            y = block(y, encoded, encoder_padding_mask=source_mask, training=training)
        return self.output_projection(y)

    def get_config(self):
        config = super().get_config()
        config.update({
            "source_vocabulary_size": self.source_vocabulary_size,
            "target_vocabulary_size": self.target_vocabulary_size,
            "hidden_dim": self.hidden_dim,
            "num_layers": self.num_layers,
            "num_heads": self.num_heads,
        })
        return config


def greedy_decode(model, source_ids, use_cache):
    """Greedy decoding; with `use_cache`, one position per step over a cache.

    Returns the generated ids and the last layer's cross-attention weights
    (averaged over heads) for each generated position.
    """
    batch = source_ids.shape[0]
    encoded, source_mask = model.encode(source_ids)
    generated = np.full((batch, 1), START, "int32")
    head_dim = model.hidden_dim // model.num_heads
    caches = [np.zeros((batch, 2, MAX_LENGTH, model.num_heads, head_dim), "float32")
              for _ in model.decoder_blocks]
    alignments = []
    for index in range(MAX_LENGTH - 1):
        if use_cache:
            y = model.embed(model.target_embedding, generated[:, -1:], start_index=index)
        else:
            y = model.embed(model.target_embedding, generated)
        for layer_index, block in enumerate(model.decoder_blocks):
            kwargs = {"encoder_padding_mask": source_mask, "return_attention_scores": True}
            if use_cache:
                y, scores, caches[layer_index] = block(
                    y, encoded, self_attention_cache=caches[layer_index],
                    self_attention_cache_update_index=index, **kwargs)
            else:
                y, scores = block(y, encoded, **kwargs)
        logits = model.output_projection(y[:, -1])
        next_ids = np.argmax(ops.convert_to_numpy(logits), axis=-1).astype("int32")
        alignments.append(ops.convert_to_numpy(ops.mean(scores["cross_attention"][:, :, -1], axis=1)))
        generated = np.concatenate([generated, next_ids[:, None]], axis=1)
        if np.all(np.any(generated == END, axis=1)):
            break
    return generated[:, 1:], np.stack(alignments, axis=1)


def make_dataset(source, target, batch_size, seed):
    target_in, target_out = target[:, :-1], target[:, 1:]
    dataset = tf.data.Dataset.from_tensor_slices(
        ({"source_ids": source, "target_ids": target_in}, target_out)
    )
    return dataset.shuffle(len(source), seed=seed).batch(batch_size)


def run(data, args):
    keras.utils.set_random_seed(args.seed)
    train_de, train_en = data["train"]
    val_de, val_en = data["val"]
    source_vocabulary = Vocabulary(train_de, 4000)
    target_vocabulary = Vocabulary(train_en, 3000)
    source = pad([source_vocabulary.encode(line) for line in train_de])
    target = pad([target_vocabulary.encode(line, add_start=True) for line in train_en],
                 MAX_LENGTH + 1)
    print(f"Multi30k de→en: {len(train_de)} training pairs, vocabularies "
          f"{len(source_vocabulary.tokens)} (de) / {len(target_vocabulary.tokens)} (en)")

    model = Translator(len(source_vocabulary.tokens), len(target_vocabulary.tokens))
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=PAD),
        metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
        jit_compile=True,
    )
    history = model.fit(
        make_dataset(source, target, args.batch_size, args.seed),
        epochs=args.epochs,
        shuffle=False,  # the dataset shuffles itself, seeded
        verbose=2,
        callbacks=[keras.callbacks.TensorBoard(os.path.join(args.output_dir, "tensorboard"))],
    )

    val_source = pad([source_vocabulary.encode(line) for line in val_de])
    cached_ids, alignments = greedy_decode(model, val_source, use_cache=True)
    with warnings.catch_warnings():
        # The first uncached step attends over a single key; Keras warns that
        # a softmax over one element is always 1, which is right here.
        warnings.filterwarnings("ignore", message="You are using a softmax")
        uncached_ids, _ = greedy_decode(model, val_source[:8], use_cache=False)
    cache_agrees = bool(np.array_equal(cached_ids[:8, : uncached_ids.shape[1]], uncached_ids))
    hypotheses = [target_vocabulary.decode(ids) for ids in cached_ids]
    references = [" ".join(words(line)) for line in val_en]
    bleu = sacrebleu.corpus_bleu(hypotheses, [references], tokenize="none")

    print("\nSample translations (each English word → the German word it attended to most):")
    for row in range(3):
        source_words = words(val_de[row])[: MAX_LENGTH - 2] + ["[END]"]
        generated = hypotheses[row].split()
        aligned = [f"{word}←{source_words[int(np.argmax(alignments[row, position, : len(source_words)]))]}"
                   for position, word in enumerate(generated)]
        print(f"  de:  {val_de[row]}\n  ref: {val_en[row]}\n  out: {hypotheses[row]}\n"
              f"  attention: {' '.join(aligned)}\n")
    print(f"Cached decoding gives the same tokens as full recomputation: {cache_agrees}")
    print(f"BLEU on {len(val_de)} validation sentences (lower-cased words): {bleu.score:.1f}")

    path = os.path.join(args.output_dir, "model.keras")
    model.save(path)
    reloaded = keras.saving.load_model(path)
    probe = {"source_ids": val_source[:4], "target_ids": pad([[START]] * 4)}
    reload_agrees = bool(np.allclose(reloaded(probe), model(probe), atol=1e-5))
    print(f"Saved {path}; the reloaded model gives the same logits: {reload_agrees}")
    return {
        "train_pairs": len(train_de),
        "epochs": args.epochs,
        "loss_per_epoch": [round(float(v), 4) for v in history.history["loss"]],
        "accuracy_per_epoch": [round(float(v), 4) for v in history.history["accuracy"]],
        "validation_bleu": round(bleu.score, 2),
        "cached_decoding_matches_full": cache_agrees,
        "reloaded_model_matches": reload_agrees,
        "samples": [{"de": val_de[i], "reference": val_en[i], "output": hypotheses[i]}
                    for i in range(3)],
    }
