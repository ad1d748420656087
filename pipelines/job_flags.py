"""The command-line flags that several Beam jobs of `pipelines` share:
where the output goes (`--output_dir`), in how many TFRecord files
(`--num_shards`), compressed or not (`--gzip`), and the longest input line
read (`--max_line_bytes`). Each function takes only what differs between
the jobs. Imports neither Beam nor TensorFlow."""

from tfnlp.command_line import add_boolean_flag


def add_output_dir_flag(group, contents):
    """Adds the required `--output_dir`: "Where `contents` go."."""
    group.add_argument("--output_dir", required=True, help=f"Where {contents} go.")


def add_num_shards_flag(group, default, files="TFRecord files"):
    """Adds `--num_shards` of a job that sorts each shard in one worker's
    memory: how many `files` it writes."""
    group.add_argument("--num_shards", type=int, default=default,
                       help=f"{files} (each sorted in one worker's memory: keep shards "
                            "below a few hundred MB).")


def add_gzip_flag(group):
    """Adds `--gzip` (default false): gzip-compressed TFRecords."""
    add_boolean_flag(group, "gzip", False, "Write gzip-compressed TFRecords.")


def add_max_line_bytes_flag(group, condition=""):
    """Adds `--max_line_bytes` (default 1,000,000); `condition`, when
    given, says when it applies ("With --document_boundary=blank_line")."""
    lines = f"{condition}, longer lines" if condition else "Longer lines"
    group.add_argument("--max_line_bytes", type=int, default=1_000_000,
                       help=f"{lines} are skipped (and counted).")
