"""`python -m trainer.pretrain`: `python -m trainer.train --task=pretraining`.

    python -m trainer.pretrain --train_data='DATA/pretraining-*' --model_dir=RUN --config=base
"""

from tfnlp.command_line import run_main
from trainer.train import task_main

main = task_main("pretraining", __name__)

if __name__ == "__main__":
    run_main(main)
