"""`python -m tfnlp.serve --model_dir=EXPORT_DIR`: serves every version of a
model over TensorFlow Serving's REST API until interrupted.

Example:

    python -m tfnlp.serve --model_dir=exports/classifier --port=8501
    curl -d '{"instances": ["a fine film"]}' \\
        http://127.0.0.1:8501/v1/models/classifier:predict
"""

import logging
import os
import signal
import sys

from tfnlp.quiet_start import import_quietly

import_quietly(("tensorflow",))

from tfnlp.command_line import ArgumentParser, UsageError, check_input_directory, run_main  # noqa: E402
from tfnlp.serve.http_server import ModelServer, logger  # noqa: E402
from tfnlp.serve.model_store import ModelLoadError, ModelStore  # noqa: E402


def parse_flags(argv=None):
    """Parses the command line (`sys.argv[1:]` by default)."""
    parser = ArgumentParser(
        prog="python -m tfnlp.serve",
        description="Serves every version of a SavedModel export directory "
                    "over TensorFlow Serving's REST API.",
    )
    parser.add_argument("--model_dir", required=True,
                        help="Export directory holding <version>/saved_model.pb.")
    parser.add_argument("--model_name", default=None,
                        help="Name in the request paths; default: basename of --model_dir.")
    parser.add_argument("--host", default="127.0.0.1",
                        help="Address to listen on; 0.0.0.0 for every interface.")
    parser.add_argument("--port", type=int, default=8501,
                        help="Port to listen on; 0 picks a free port.")
    parser.add_argument("--max_batch_size", type=int, default=16,
                        help="Most rows in one merged predict call (1: no merging).")
    parser.add_argument("--batch_timeout_micros", type=int, default=2000,
                        help="Longest a request waits for others to join its batch.")
    parser.add_argument("--max_body_bytes", type=int, default=10 * 2**20,
                        help="Largest request body accepted; larger ones get 413.")
    parser.add_argument("--max_string_bytes", type=int, default=2**16,
                        help="Longest string input accepted, in bytes.")
    parser.add_argument("--max_instances_per_request", type=int, default=128,
                        help="Most instances (rows) in one predict request; more get 413. "
                             "A request runs in batches of --max_batch_size rows.")
    parser.add_argument("--max_new_tokens", type=int, default=None,
                        help="Most new tokens a text-generation request may ask for "
                             "(the max_new_tokens input); more get 400. Default: the "
                             "export's own limit.")
    parser.add_argument("--request_timeout", type=float, default=10.0,
                        help="Seconds a request body may take to arrive; a slower or "
                             "truncated one gets 408.")
    flags = parser.parse_args(argv)
    if not 0 <= flags.port <= 65535:
        parser.error(f"--port must be between 0 (any free port) and 65535, not {flags.port}.")
    for name in ("max_batch_size", "max_body_bytes", "max_string_bytes",
                 "max_instances_per_request", "max_new_tokens"):
        if getattr(flags, name) is not None and getattr(flags, name) < 1:
            parser.error(f"--{name} must be at least 1, not {getattr(flags, name)}.")
    if flags.batch_timeout_micros < 0:
        parser.error(f"--batch_timeout_micros must be 0 or more, not {flags.batch_timeout_micros}.")
    if not flags.request_timeout > 0:
        parser.error(f"--request_timeout must be more than 0 seconds, not {flags.request_timeout}.")
    return flags


def _interrupt(signal_number, frame):
    raise KeyboardInterrupt


def build_server(flags):
    """The `ModelServer` of parsed flags: the model loaded, the port bound,
    not serving yet.

    Raises:
        UsageError: with a message saying what to fix, when the model cannot
            be loaded or the port cannot be bound.
    """
    try:
        model_store = ModelStore(flags.model_dir, flags.model_name)
    except ModelLoadError as error:
        raise UsageError(f"--model_dir={flags.model_dir}: {error}") from error
    try:
        return ModelServer(
            model_store, host=flags.host, port=flags.port,
            max_batch_size=flags.max_batch_size,
            batch_timeout_micros=flags.batch_timeout_micros,
            max_body_bytes=flags.max_body_bytes,
            max_string_bytes=flags.max_string_bytes,
            max_instances_per_request=flags.max_instances_per_request,
            request_timeout=flags.request_timeout,
            max_new_tokens=flags.max_new_tokens,
        )
    except OSError as error:
        raise UsageError(
            f"cannot listen on {flags.host}:{flags.port} ({error}). "
            "Pick another --port (0 picks a free one) or --host."
        ) from error


def main(argv=None):
    """Loads the model, then serves until interrupted (Ctrl-C or SIGTERM).

    Raises:
        UsageError: with a message saying what to fix, when the model cannot
            be loaded or the port cannot be bound.
    """
    flags = parse_flags(argv)
    check_input_directory("--model_dir", flags.model_dir,
                          "an export directory holding <version>/saved_model.pb")
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    server = build_server(flags)
    logger.info("Serving model %s versions %s at %s",
                server.model_store.name, server.model_store.versions, server.url)
    signal.signal(signal.SIGTERM, _interrupt)  # Stop cleanly, as on Ctrl-C.
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        logger.info("Interrupted; stopping.")
    finally:
        server.server_close()


if __name__ == "__main__":
    run_main(main)
    # The server has stopped cleanly. Leave without the interpreter's final
    # teardown: TensorFlow's and tensorflow-text's resources (the
    # SentencePiece model of a translation export) can abort in their
    # destructors at exit (seen once in CI as SIGABRT right after "stopping"),
    # which would report a clean stop as a crash.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
