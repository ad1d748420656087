"""`python -m trainer.translate`: `python -m trainer.train --task=translation`.

    python -m trainer.translate --train_data='DATA/translation-*' --model_dir=RUN --config=tiny
"""

from tfnlp.command_line import run_main
from trainer.train import task_main

main = task_main("translation", __name__)

if __name__ == "__main__":
    run_main(main)
