"""`python -m trainer.lm`: `python -m trainer.train --task=language_model`.

    python -m trainer.lm --train_data='DATA/train-*' --model_dir=RUN --config=tiny
"""

from tfnlp.command_line import run_main
from trainer.train import task_main

main = task_main("language_model", __name__)

if __name__ == "__main__":
    run_main(main)
