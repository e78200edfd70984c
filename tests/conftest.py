"""Shared fixtures: every codec test runs against both implementations (``tests/_twins.py`` says which)."""

import os
import queue
import threading
import time

import pytest

from tests._twins import IMPLS, codec_module

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(params=IMPLS)
def codec(request):
    """The codec module of one implementation (same class names in both)."""
    return codec_module(request.param)


@pytest.fixture(scope="session")
def both_codecs():
    """All available implementations, for tests that compare them."""
    return [codec_module(i) for i in IMPLS]


def stop_process(proc, grace_s=5, kill_wait_s=10):
    """Stop a server a test started: SIGTERM, then SIGKILL by pid if it has not exited within ``grace_s``."""
    import signal
    import subprocess

    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(kill_wait_s)


class Lines:
    """The lines a child process writes to a pipe, read by a daemon thread so that no test blocks on a
    ``readline`` with no deadline: :meth:`expect` gives up after its timeout.  ``history`` keeps every line
    taken from the pipe, in order."""

    def __init__(self, stream):
        self._queue = queue.Queue()
        self.history = []
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream):
        for line in stream:
            self._queue.put(line.rstrip("\n"))

    def take(self, timeout):
        """The next line, or None after ``timeout`` seconds."""
        try:
            line = self._queue.get(timeout=timeout)
        except queue.Empty:
            return None
        self.history.append(line)
        return line

    def expect(self, prefix, timeout, why=""):
        """The first line starting with ``prefix`` (lines before it are consumed), within ``timeout`` s.
        ``why`` (a string, or a callable giving one when it fails, such as a log's tail) ends the message."""
        end = time.monotonic() + timeout
        while (left := end - time.monotonic()) > 0:
            line = self.take(min(left, 0.1))
            if line is not None and line.startswith(prefix):
                return line
        raise AssertionError(f"no {prefix!r} line within {timeout} s; lines so far {self.history[-20:]}"
                             + (why() if callable(why) else why))
