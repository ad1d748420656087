"""`python -m trainer.distill`: `python -m trainer.train --task=distillation`.

    python -m trainer.distill --train_data='TRANSFER/train-*' --model_dir=RUN --student=bilstm
"""

from tfnlp.command_line import run_main
from trainer.train import task_main

main = task_main("distillation", __name__)

if __name__ == "__main__":
    run_main(main)
