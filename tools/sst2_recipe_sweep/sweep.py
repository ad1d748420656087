"""One fine-tuning recipe for all-MiniLM-L6-v2 on SST-2, in PyTorch, for
sweeping recipes on a GPU machine that has PyTorch and transformers but no
TensorFlow (the project's trainer is `trainer.finetune`; this is a proxy
of it: AdamW, a linear warmup over 10% of the steps then a linear decay to
zero, weight decay off LayerNorm and biases, mean pooling, dropout 0.1,
batches of 32, a classification layer initialised as the trainer's).

    python sweep.py NAME [key=value ...]    # the keys of DEFAULTS

Evaluates every `eval_every` steps on the held-out sentences
(`tools.sentence_holdout`) and on SST-2 dev, and appends one JSON line per
evaluation to $OUT/results.jsonl. `run.sh` runs the sweep of
docs/BERT.md, one process per recipe, all at once; `prepare.sh` makes the
folder it reads.
"""
import json
import os
import random
import sys
import time

import numpy as np
import torch
from tokenizers import Tokenizer
from transformers import BertModel

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.environ.get("OUT", "/tmp/out")
DEFAULTS = dict(lr=5e-5, steps=5400, batch=32, warmup=0.1, wd=0.01, llrd=1.0,
                pooling="mean", freeze_emb=0, seed=0, train="train_sent.tsv",
                bucket=0, eval_every=600, max_len=128, dropout=0.1, head_lr=0.0,
                ema=0.0, device="cuda")


def read_tsv(name):
    lines = open(os.path.join(HERE, name)).read().splitlines()[1:]
    return [(int(l.split("\t")[0]), l.split("\t")[1]) for l in lines]


def encode(tokenizer, rows, max_len):
    ids = [tokenizer.encode(t).ids[:max_len] for _, t in rows]
    return ids, np.array([l for l, _ in rows])


def pad(batch_ids):
    width = max(len(x) for x in batch_ids)
    ids = np.zeros((len(batch_ids), width), np.int64)
    for i, x in enumerate(batch_ids):
        ids[i, :len(x)] = x
    return ids


class Classifier(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.bert = BertModel.from_pretrained(os.path.join(HERE, "model"), torch_dtype=torch.float32,
                                              hidden_dropout_prob=cfg["dropout"],
                                              attention_probs_dropout_prob=cfg["dropout"])
        self.pooling = cfg["pooling"]
        self.dropout = torch.nn.Dropout(cfg["dropout"])
        self.head = torch.nn.Linear(384, 2)
        torch.nn.init.normal_(self.head.weight, std=0.02)
        torch.nn.init.zeros_(self.head.bias)

    def forward(self, ids):
        mask = (ids != 0)
        out = self.bert(input_ids=ids, attention_mask=mask.long())
        if self.pooling == "mean":
            m = mask.unsqueeze(-1).to(out.last_hidden_state.dtype)
            pooled = (out.last_hidden_state * m).sum(1) / m.sum(1)
        elif self.pooling == "cls":
            pooled = out.last_hidden_state[:, 0]
        else:
            pooled = out.pooler_output
        return self.head(self.dropout(pooled))


def param_groups(model, cfg):
    groups = []
    layers = 6
    for name, p in model.named_parameters():
        if cfg["freeze_emb"] and "word_embeddings" in name:
            p.requires_grad = False
            continue
        if name.startswith("head"):
            depth = layers + 1
        elif ".encoder.layer." in name:
            depth = int(name.split(".encoder.layer.")[1].split(".")[0]) + 1
        elif "embeddings" in name:
            depth = 0
        else:  # pooler
            depth = layers + 1
        scale = cfg["llrd"] ** (layers + 1 - depth)
        lr = cfg["lr"] * scale
        if name.startswith("head") and cfg["head_lr"]:
            lr = cfg["head_lr"]
        no_decay = name.endswith("bias") or "LayerNorm" in name
        groups.append({"params": [p], "lr": lr, "base_lr": lr,
                       "weight_decay": 0.0 if no_decay else cfg["wd"]})
    return groups


def evaluate(model, ids, labels, device):
    model.eval()
    correct = 0
    order = np.argsort([len(x) for x in ids])
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16, enabled=device == "cuda"):
        for start in range(0, len(ids), 128):
            idx = order[start:start + 128]
            logits = model(torch.from_numpy(pad([ids[i] for i in idx])).to(device))
            correct += int((logits.argmax(-1).cpu().numpy() == labels[idx]).sum())
    model.train()
    return correct / len(ids)


def main():
    name = sys.argv[1]
    cfg = dict(DEFAULTS)
    for kv in sys.argv[2:]:
        k, v = kv.split("=")
        cfg[k] = type(DEFAULTS[k])(v)
    device = cfg["device"]
    random.seed(cfg["seed"]); np.random.seed(cfg["seed"]); torch.manual_seed(cfg["seed"])
    tokenizer = Tokenizer.from_file(os.path.join(HERE, "model", "tokenizer.json"))
    tokenizer.no_padding(); tokenizer.no_truncation()
    train_ids, train_labels = encode(tokenizer, read_tsv(cfg["train"]), cfg["max_len"])
    sets = {s: encode(tokenizer, read_tsv(f), cfg["max_len"])
            for s, f in (("heldout", "heldout_sent.tsv"), ("dev", "sst2-dev.tsv"))}
    model = Classifier(cfg).to(device)
    optimizer = torch.optim.AdamW(param_groups(model, cfg), eps=1e-6, fused=device == "cuda")
    ema = None
    if cfg["ema"]:
        ema = {k: v.detach().clone() for k, v in model.state_dict().items()}
    warmup = int(cfg["warmup"] * cfg["steps"])
    rng = np.random.default_rng(cfg["seed"])

    def batches():
        while True:
            order = rng.permutation(len(train_ids))
            chunks = [order[i:i + cfg["batch"]] for i in range(0, len(order), cfg["batch"])]
            if cfg["bucket"]:  # batches of one length bucket, as trainer.finetune makes them
                by_bucket = {}
                for i in order:
                    width = len(train_ids[i])
                    b = next(bb for bb in (16, 32, 64, 128) if width <= bb)
                    by_bucket.setdefault(b, []).append(i)
                chunks = [np.array(v[i:i + cfg["batch"]]) for v in by_bucket.values()
                          for i in range(0, len(v), cfg["batch"])]
                rng.shuffle(chunks)
            yield from chunks

    start = time.time()
    for step, idx in zip(range(1, cfg["steps"] + 1), batches()):
        if step <= warmup:
            factor = step / max(1, warmup)
        else:
            factor = max(0.0, (cfg["steps"] - step) / max(1, cfg["steps"] - warmup))
        for g in optimizer.param_groups:
            g["lr"] = g["base_lr"] * factor
        ids = torch.from_numpy(pad([train_ids[i] for i in idx])).to(device)
        labels = torch.from_numpy(train_labels[idx]).to(device)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=device == "cuda"):
            logits = model(ids)
        loss = torch.nn.functional.cross_entropy(logits.float(), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if ema is not None:
            with torch.no_grad():
                for k, v in model.state_dict().items():
                    if v.dtype.is_floating_point:
                        ema[k].mul_(cfg["ema"]).add_(v, alpha=1 - cfg["ema"])
        if step % cfg["eval_every"] == 0 or step == cfg["steps"]:
            record = {"name": name, "step": step, "seconds": round(time.time() - start, 1)}
            for s, (ids_, labels_) in sets.items():
                record[s] = round(evaluate(model, ids_, labels_, device), 4)
            if ema is not None:
                live = {k: v.detach().clone() for k, v in model.state_dict().items()}
                model.load_state_dict(ema)
                for s, (ids_, labels_) in sets.items():
                    record["ema_" + s] = round(evaluate(model, ids_, labels_, device), 4)
                model.load_state_dict(live)
            record["cfg"] = {k: v for k, v in cfg.items() if v != DEFAULTS[k]}
            with open(os.path.join(OUT, "results.jsonl"), "a") as f:
                f.write(json.dumps(record) + "\n")
            print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
