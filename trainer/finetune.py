"""`python -m trainer.finetune --task=classification|token_classification|span`:
`python -m trainer.train` with that task (`trainer.tasks.finetuning`)."""

from tfnlp.command_line import run_main
from trainer.train import task_main

main = task_main("classification", __name__)

if __name__ == "__main__":
    run_main(main)
