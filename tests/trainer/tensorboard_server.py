"""The real `tensorboard` command of the virtual environment, started on a
run's logs, and its HTTP API: what the TensorBoard tabs would show.

`TensorBoardServer(logdir)` is a context manager: it starts `tensorboard
--logdir=LOGDIR --host=127.0.0.1 --port=0` (a free port, which the
command prints), waits until the logs are loaded, answers `get`/`post`
with the decoded JSON (or bytes), and stops the process on exit.
"""

import gzip
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request

from tests.trainer import helpers

# TensorBoard imports TensorFlow as it starts (seconds on a loaded 2-core
# machine); the logs are read once it serves.
START_TIMEOUT_SECONDS = 120
_ADDRESS = re.compile(r"(http://127\.0\.0\.1:\d+)/")


def tensorboard_command():
    """The `tensorboard` script beside this Python (the venv's)."""
    return os.path.join(os.path.dirname(sys.executable), "tensorboard")


class TensorBoardServer:
    """`tensorboard --logdir=logdir` on a free local port, for a `with` block.

    Args:
        logdir: the folder TensorBoard reads (a run's `model_dir`).
    """

    def __init__(self, logdir):
        self.logdir = str(logdir)
        self.process = None
        self.address = None
        self.output = []

    def __enter__(self):
        self.process = subprocess.Popen(
            [tensorboard_command(), f"--logdir={self.logdir}", "--host=127.0.0.1", "--port=0",
             # The Python data path: the event files are read in the server
             # itself, without the Rust data server.
             "--load_fast=false", "--reload_interval=0"],
            env=helpers.environment(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True)
        found = threading.Event()
        threading.Thread(target=self._read_output, args=(found,), daemon=True).start()
        if not found.wait(START_TIMEOUT_SECONDS):
            self.__exit__(None, None, None)
            raise AssertionError(
                f"tensorboard did not print its address within {START_TIMEOUT_SECONDS} s:\n"
                + "".join(self.output[-40:]))
        self._wait_for_runs()
        return self

    def _read_output(self, found):
        for line in self.process.stdout:
            self.output.append(line)
            match = _ADDRESS.search(line)
            if match and not found.is_set():
                self.address = match.group(1)
                found.set()

    def _wait_for_runs(self):
        """Until the first load of the logs is done (`/data/runs` lists some)."""
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self.get("/data/runs"):
                return
            time.sleep(0.2)
        raise AssertionError(f"tensorboard lists no run of {self.logdir}.")

    def __exit__(self, *exception):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def get(self, path, data=None):
        """The answer to GET `path` (POST of the JSON `data` when given):
        decoded JSON, or the bytes of anything else (an image)."""
        request = urllib.request.Request(self.address + path)
        if data is not None:
            request.data = json.dumps(data).encode("utf-8")
            request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=60) as response:
            body = response.read()
            if response.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if response.headers.get_content_type() == "application/json":
                return json.loads(body)
            return body

    def tags(self, plugin):
        """`{run: set of tags}` of the scalars, images or text plugin."""
        answer = self.get(f"/data/plugin/{plugin}/tags")
        return {run: set(tags) for run, tags in answer.items()}

    def tag_groups(self, *plugins):
        """The groups of the tags of `plugins` ("scalars", "images") in the
        order TensorBoard shows them: a tag's group is its part before the
        first "/" (the whole tag without one), and the groups are sorted by
        name. The Scalars tab shows the scalars' groups and opens the
        first three; the Time Series tab, which TensorBoard opens first,
        shows those of the scalars and images and opens the first two."""
        return sorted({tag.split("/", 1)[0] for plugin in plugins
                       for tags in self.tags(plugin).values() for tag in tags})

    def hparams(self):
        """`(experiment, session groups)` of the HParams plugin."""
        experiment = self.get("/data/plugin/hparams/experiment", {"experimentName": ""})
        groups = self.get("/data/plugin/hparams/session_groups", {
            "experimentName": "", "startIndex": 0, "sliceSize": 100,
            "allowedStatuses": ["STATUS_UNKNOWN", "STATUS_SUCCESS", "STATUS_FAILURE",
                                "STATUS_RUNNING"],
            "colParams": []})
        return experiment, groups.get("sessionGroups", [])
