"""Stage progress: a live line with an estimate of the time left on a
terminal, one line per finished stage otherwise (a log, a pipe, CI).

Progress is read from Spark's public status tracker: every job a stage
starts runs in a job group named after it, and the stage's tasks done and
total are summed over the Spark stages of that group's jobs.  The estimate is
the elapsed time scaled by the tasks left, which is what is known before the
first tasks finish; it shows only once some have.
"""

from __future__ import annotations

import sys
import threading
import time


def format_seconds(seconds):
    """``1:05`` / ``1:02:05``: a clock reading, for elapsed and left."""
    seconds = int(round(max(seconds, 0)))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    """``with progress.stage("decode") as st: ...; st.done(frames=n)``.

    ``stream``: where lines go (stderr by default); ``live``: redraw one line
    while a stage runs (default: when ``stream`` is a terminal)."""

    def __init__(self, spark_context=None, stream=None, live=None, interval=0.5):
        self.sc = spark_context
        self.stream = stream if stream is not None else sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.interval = interval

    def stage(self, name):
        return _Stage(self, name)

    def write(self, text):
        self.stream.write(text)
        self.stream.flush()


class _Stage:
    def __init__(self, progress, name):
        self.p = progress
        self.name = name
        self.counts = {}
        self.seconds = None
        self._stop = threading.Event()
        self._thread = None

    def __enter__(self):
        self.t0 = time.perf_counter()
        if self.p.sc is not None:
            self.p.sc.setJobGroup(f"kwire-{self.name}", f"kwire pipeline: {self.name}")
        if self.p.live:
            self._thread = threading.Thread(target=self._draw, daemon=True)
            self._thread.start()
        return self

    def done(self, **counts):
        """Row counts to print with the stage's time (frames=..., members=...)."""
        self.counts.update(counts)

    def tasks(self):
        """(tasks finished, tasks known) over this stage's Spark jobs so far."""
        if self.p.sc is None:
            return 0, 0
        tracker = self.p.sc.statusTracker()
        done = total = 0
        for job_id in tracker.getJobIdsForGroup(f"kwire-{self.name}"):
            job = tracker.getJobInfo(job_id)
            if job is None:
                continue
            # A finished job's stages that reused an earlier shuffle were
            # skipped: they keep their task count and never complete one.
            finished = str(job.status) in ("SUCCEEDED", "FAILED")
            for stage_id in job.stageIds:
                info = tracker.getStageInfo(stage_id)
                if info is not None:
                    done += info.numCompletedTasks
                    total += info.numCompletedTasks if finished else info.numTasks
        return done, total

    def _line(self):
        elapsed = time.perf_counter() - self.t0
        done, total = self.tasks()
        text = f"{self.name}: {format_seconds(elapsed)} elapsed"
        if total:
            text += f", {done}/{total} tasks"
            if 0 < done < total:
                text += f", about {format_seconds(elapsed * (total - done) / done)} left"
        return text

    def _draw(self):
        while not self._stop.wait(self.p.interval):
            self.p.write("\r\x1b[K" + self._line())

    def __exit__(self, exc_type, exc, tb):
        self.seconds = time.perf_counter() - self.t0
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.p.sc is not None:
            # Later jobs (the report's small ones) belong to no stage.
            self.p.sc.setLocalProperty("spark.jobGroup.id", None)
        rows = "".join(f", {v:,} {k}" for k, v in self.counts.items())
        status = " (failed)" if exc_type is not None else ""
        self.p.write(("\r\x1b[K" if self.p.live else "") + f"{self.name}: {self.seconds:.1f} s{rows}{status}\n")
        return False
