"""A small German→English Transformer made of tfnlp.layers, on Multi30k.

The path so far: `pipelines.wordpiece_vocab` (Beam) learns a WordPiece
vocabulary for each language from the training text, `tfnlp.text.BertTokenizer`
tokenizes inside `tf.data`, and a Transformer built from `tfnlp.layers` is
trained, decoded with its key/value cache and scored with sacreBLEU.
"""

import os
import warnings

import keras
import numpy as np
import sacrebleu
import tensorflow as tf
from keras import ops

from pipelines import wordpiece_vocab
from tfnlp import layers
from tfnlp.text import BertTokenizer

MAX_LENGTH = 32


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
    """`{"train": (german, english), "val": (german, english)}` lines."""
    counts = {"train": train_pairs, "val": eval_pairs}
    return {
        split: tuple(
            read_lines(os.path.join(data_dir, "mt", f"{split}.{language}"), counts[split])
            for language in ("de", "en")
        )
        for split in ("train", "val")
    }


def learn_vocabularies(train_lines, output_dir, vocab_size):
    """Runs the Beam vocabulary job on each language's training sentences
    (written to `output_dir/train.{de,en}`, the pairs the model sees)."""
    tokenizers = {}
    for language, lines in zip(("de", "en"), train_lines):
        text_file = os.path.join(output_dir, f"train.{language}")
        with open(text_file, "w", encoding="utf-8") as file:
            file.write("\n".join(lines) + "\n")
        vocab_file = os.path.join(output_dir, f"vocab.{language}.txt")
        stats = wordpiece_vocab.main([
            f"--input_file={text_file}",
            f"--output_file={vocab_file}",
            f"--vocab_size={vocab_size}",
        ])
        print(f"WordPiece vocabulary ({language}): {stats['vocabulary_size']} tokens from "
              f"{stats['input']['lines_used']} lines, [UNK] share {stats['unk_share']:.4%}")
        tokenizers[language] = BertTokenizer(vocab_file, lower_case=True)
    return tokenizers


def encode(tokenizer, lines, add_start):
    """Token ids, cut to fit, with [SEP] as the end (and [CLS] as the start)."""
    ids = tokenizer.tokenize(tf.constant(lines))[:, : MAX_LENGTH - 2]
    parts = [ids, tf.fill([ids.nrows(), 1], tf.constant(tokenizer.sep_id, tf.int64))]
    if add_start:
        parts.insert(0, tf.fill([ids.nrows(), 1], tf.constant(tokenizer.cls_id, tf.int64)))
    ids = tf.concat(parts, axis=1)
    length = MAX_LENGTH + (1 if add_start else 0)
    return ids.to_tensor(default_value=0, shape=[None, length]).numpy().astype("int32")


def until_end(ids, end_id):
    """The generated ids before the first `end_id`."""
    ids = list(ids)
    return ids[: ids.index(end_id)] if end_id in ids else ids


def decode(tokenizer, ids):
    """Text of generated ids, stopping at the first [SEP]."""
    ids = [until_end(row, tokenizer.sep_id) for row in ids]
    return [text.decode("utf-8")
            for text in tokenizer.detokenize(tf.ragged.constant(ids, dtype=tf.int64)).numpy()]


def normalized(tokenizer, lines):
    """References in the tokenizer's normal form (lower-cased, split)."""
    return [text.decode("utf-8")
            for text in tokenizer.detokenize(tokenizer.tokenize(tf.constant(lines))).numpy()]


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
        source_mask = ops.not_equal(source_ids, 0)
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


def greedy_decode(model, source_ids, start_id, end_id, use_cache):
    """Greedy decoding; with `use_cache`, one position per step over a cache.

    Returns the generated ids and the last layer's cross-attention weights
    (averaged over heads) for each generated position.
    """
    batch = source_ids.shape[0]
    encoded, source_mask = model.encode(source_ids)
    generated = np.full((batch, 1), start_id, "int32")
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
        if np.all(np.any(generated == end_id, axis=1)):
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
    tokenizers = learn_vocabularies(data["train"], args.output_dir, args.vocab_size)
    german, english = tokenizers["de"], tokenizers["en"]
    train_de, train_en = data["train"]
    val_de, val_en = data["val"]
    source = encode(german, train_de, add_start=False)
    target = encode(english, train_en, add_start=True)
    print(f"Multi30k de→en: {len(train_de)} training pairs, "
          f"{np.mean(np.sum(source > 0, axis=1)):.1f} German word pieces per sentence")

    model = Translator(german.vocab_size, english.vocab_size)
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0),
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

    val_source = encode(german, val_de, add_start=False)
    special = {"start_id": english.cls_id, "end_id": english.sep_id}
    cached_ids, alignments = greedy_decode(model, val_source, use_cache=True, **special)
    with warnings.catch_warnings():
        # The first uncached step attends over a single key; Keras warns that
        # a softmax over one element is always 1, which is right here.
        warnings.filterwarnings("ignore", message="You are using a softmax")
        uncached_ids, _ = greedy_decode(model, val_source[:8], use_cache=False, **special)
    cache_agrees = bool(np.array_equal(cached_ids[:8, : uncached_ids.shape[1]], uncached_ids))
    hypotheses = decode(english, cached_ids)
    references = normalized(english, val_en)
    bleu = sacrebleu.corpus_bleu(hypotheses, [references], tokenize="none")

    print("\nSample translations (each English piece ← the German piece it attended to most):")
    for row in range(3):
        source_pieces = [t.decode() for t in german.id_to_token(
            [i for i in val_source[row] if i != 0]).numpy()]
        generated = until_end(cached_ids[row], english.sep_id)
        pieces = [t.decode() for t in english.id_to_token(generated).numpy()]
        aligned = [f"{piece}←{source_pieces[int(np.argmax(alignments[row, position, : len(source_pieces)]))]}"
                   for position, piece in enumerate(pieces)]
        print(f"  de:  {val_de[row]}\n  ref: {val_en[row]}\n  out: {hypotheses[row]}\n"
              f"  attention: {' '.join(aligned)}\n")
    print(f"Cached decoding gives the same tokens as full recomputation: {cache_agrees}")
    print(f"BLEU on {len(val_de)} validation sentences (lower-cased, tokenized): {bleu.score:.1f}")

    path = os.path.join(args.output_dir, "model.keras")
    model.save(path)
    reloaded = keras.saving.load_model(path)
    probe = {"source_ids": val_source[:4], "target_ids": cached_ids[:4, :2]}
    reload_agrees = bool(np.allclose(reloaded(probe), model(probe), atol=1e-5))
    print(f"Saved {path}; the reloaded model gives the same logits: {reload_agrees}")
    return {
        "train_pairs": len(train_de),
        "epochs": args.epochs,
        "vocabulary_sizes": {"de": german.vocab_size, "en": english.vocab_size},
        "loss_per_epoch": [round(float(v), 4) for v in history.history["loss"]],
        "accuracy_per_epoch": [round(float(v), 4) for v in history.history["accuracy"]],
        "validation_bleu": round(bleu.score, 2),
        "cached_decoding_matches_full": cache_agrees,
        "reloaded_model_matches": reload_agrees,
        "samples": [{"de": val_de[i], "reference": val_en[i], "output": hypotheses[i]}
                    for i in range(3)],
    }
