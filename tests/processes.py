"""Child processes a test starts (a `kwire serve`, a client script): stopping them by pid, and reading their
output lines with a deadline."""

import json
import os
import queue
import signal
import subprocess
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# How long a client process gets to print a line a test waits for.
TIMEOUT_S = 40


def stop_process(proc, grace_s=5, kill_wait_s=10):
    """Stop a server a test started: SIGTERM, then SIGKILL by pid if it has not exited within ``grace_s``."""
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


class Proc:
    """A child process whose output lines are collected by a thread; its stderr goes to ``log``, whose tail
    failures quote."""

    def __init__(self, args, log, server_log=None):
        self.log = log
        self.server_log = server_log
        with open(log, "w") as err:
            self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                         text=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT))
        self.lines = Lines(self.proc.stdout)
        self.assignment = None

    def tail(self, n=15, log=None):
        log = log or self.log
        with open(log, errors="replace") as f:
            lines = f.read().splitlines()[-n:]
        who = f" (pid {self.proc.pid}, exit {self.proc.poll()})" if log == self.log else ""
        return f"\n--- {os.path.basename(log)}{who} ---\n" + "\n".join(lines)

    def _note(self, line):
        if line.startswith("ASSIGN "):
            self.assignment = tuple(json.loads(line[7:]))

    def drain(self):
        out = []
        while (line := self.lines.take(0)) is not None:
            self._note(line)
            out.append(line)
        return out

    def expect(self, prefix, timeout=TIMEOUT_S):
        end = time.monotonic() + timeout
        while (left := end - time.monotonic()) > 0:
            line = self.lines.take(min(left, 0.1))
            if line is not None:
                self._note(line)
                if line.startswith(prefix):
                    return line
        raise AssertionError(f"no {prefix!r} line within {timeout} s; lines {self.lines.history[-20:]}{self.tail()}")

    def send(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def stop(self):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(TIMEOUT_S)
