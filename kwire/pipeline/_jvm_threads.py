"""The embedded JVM's just-in-time compilers at the lowest CPU priority while the migration stage replays.

In a ``local[N]`` session the JVM and the N Python workers share the machine's N cores.  For tens of seconds
after it starts, the JVM compiles the code each stage made hot (reading the cache, the Arrow writers, Parquet)
in background threads.  In the migration stage, whose tasks are Python replays side by side on every core,
HotSpot's C2 compiler thread took 100-200 ms of CPU in each 0.3 s window of replay on two cores, so each
replay had about two thirds of a core.  :func:`compilers_yielding` runs the compiler threads at nice 19 for
such a stage: they compile in the time the workers leave (Linux gives a nice-19 thread about 1.5% of a core
beside a nice-0 one), and get their priority back after it.

Not for the whole session: the decode stage's JVM code (its Parquet writer) runs beside the Python decoders
and needs its compiled form soon; with the compilers at nice 19 from the start, decode took twice as long on
two cores.

Linux only (a thread's nice value is its own there, and ``/proc`` names the threads); elsewhere nothing
changes.  Only the JVM this process started is touched: a session kwire starts runs its JVM as a child of the
driver (``spark-submit`` execs ``java``).  A thread's priority is lowered only where it can be given back:
an unprivileged process may raise a nice value but not lower it again (below ``20 - RLIMIT_NICE``), and a
session's compilers left at nice 19 would slow every later decode in it.  A compiler thread HotSpot adds
meanwhile is started by a compiler thread and inherits its nice value; it gets the others' back too.  The
JDK's own flags (``-XX:ThreadPriorityPolicy=1 -XX:CompilerThreadPriority=19``) last for the JVM's life, and
move every other JVM thread to the JDK's table of nice values.
"""

from __future__ import annotations

import contextlib
import os

#: The nice value the compiler threads get while the Python workers' stage runs: the lowest priority.
COMPILER_NICE = 19
#: How HotSpot names its compiler threads (``C2 CompilerThread0``, cut to the 15 characters Linux keeps).
_COMPILER_PREFIXES = ("C1 CompilerThre", "C2 CompilerThre")


def _read(path):
    try:
        with open(path) as fh:
            return fh.read()
    except OSError:
        return None


def child_jvms(parent=None, proc="/proc"):
    """Process ids of the ``java`` processes whose parent is ``parent`` (this process by default)."""
    parent = os.getpid() if parent is None else parent
    found = []
    try:
        names = os.listdir(proc)
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        stat = _read(f"{proc}/{name}/stat")
        if stat is None:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ')'.
        head, _, rest = stat.rpartition(")")
        fields = rest.split()
        if len(fields) > 1 and int(fields[1]) == parent and head.partition("(")[2] == "java":
            found.append(int(name))
    return found


def compiler_threads(pid, proc="/proc"):
    """Thread ids of JVM ``pid``'s just-in-time compiler threads."""
    try:
        tids = os.listdir(f"{proc}/{pid}/task")
    except OSError:
        return []
    return [int(tid) for tid in tids
            if (_read(f"{proc}/{pid}/task/{tid}/comm") or "").startswith(_COMPILER_PREFIXES)]


def _all_compiler_threads(parent, proc):
    return [tid for pid in child_jvms(parent, proc) for tid in compiler_threads(pid, proc)]


def _nice_of(tid):
    try:
        return os.getpriority(os.PRIO_PROCESS, tid)
    except OSError:
        return None   # gone since it was listed


def _set_nice(tid, nice):
    try:
        os.setpriority(os.PRIO_PROCESS, tid, nice)
        return True
    except OSError:
        return False   # gone since it was listed, or not ours to change


def may_lower_nice_to(nice):
    """Whether this process may set a thread's nice value back down to ``nice`` (root, or within
    ``RLIMIT_NICE``, whose soft limit r allows nice values down to 20 - r)."""
    if os.geteuid() == 0:
        return True
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NICE)[0]
    except (ImportError, AttributeError, OSError, ValueError):
        return False
    return soft == resource.RLIM_INFINITY or nice >= 20 - soft


@contextlib.contextmanager
def compilers_yielding(nice=COMPILER_NICE, parent=None, proc="/proc"):
    """Within the block, the compiler threads of every JVM this process started run at ``nice`` (one
    already at ``nice`` or above is left alone); after it, each has its own nice value back, and one added
    meanwhile the lowest of theirs.  Nothing changes where the values could not be given back
    (:func:`may_lower_nice_to`).  Yields ``{thread id: nice value before}`` of the threads changed."""
    listed = _all_compiler_threads(parent, proc) if hasattr(os, "setpriority") else []
    before = {}
    for tid in listed:
        value = _nice_of(tid)
        if value is not None and value < nice:
            before[tid] = value
    if before and not may_lower_nice_to(min(before.values())):
        before = {}
    changed = {tid: value for tid, value in before.items() if _set_nice(tid, nice)}
    try:
        yield changed
    finally:
        if changed:
            fallback = min(changed.values())
            for tid in _all_compiler_threads(parent, proc):
                if tid in changed:
                    _set_nice(tid, changed[tid])
                elif tid not in listed and _nice_of(tid) == nice:
                    _set_nice(tid, fallback)   # started meanwhile by a compiler thread at ``nice``
