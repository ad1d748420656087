#!/bin/bash
# The sweep of docs/BERT.md: one process per recipe, all at once on one GPU.
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,memory.used --format=csv
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1
run() { python3 sweep.py "$@" > "/tmp/log_$1.txt" 2>&1 & }
run base lr=5e-5
run lr1e4 lr=1e-4
run lr2e4 lr=2e-4
run lr3e5 lr=3e-5
run lr1e4_llrd lr=1e-4 llrd=0.8
run lr2e4_llrd lr=2e-4 llrd=0.8
run lr1e4_cls lr=1e-4 pooling=cls
run lr1e4_frz lr=1e-4 freeze_emb=1
run lr1e4_bkt lr=1e-4 bucket=1
run lr1e4_s1 lr=1e-4 seed=1
run lr1e4_ema lr=1e-4 ema=0.999
run lr1e4_b16 lr=1e-4 batch=16 steps=10800 eval_every=1200
run lr1e4_8k lr=1e-4 steps=8000 eval_every=800
run lr1e4_full lr=1e-4 train=sst2-train.tsv
wait
tail -n 3 /tmp/log_*.txt | grep -v "^{" | tail -40
cp /tmp/log_base.txt $OUT/ 2>/dev/null
