"""The embedded JVM's just-in-time compilers at the lowest CPU priority.

In a ``local[N]`` session the JVM and the N Python workers share the machine's N cores.  The JVM compiles
the code each stage makes hot (reading the cache, the Arrow writers, Parquet) in background threads, for tens
of seconds after it starts: HotSpot's C2 compiler thread took 100-150 ms of CPU in each 0.3 s window in which
the migration stage's two tasks replayed on two cores, so each task got two thirds of a core.  The Python
workers are what the stages wait for; the compiled code is wanted, but not before them.  So the compiler
threads run at nice 19: they compile in the time the workers leave, and take little of a core a worker is
using (Linux's scheduler gives a nice-19 thread about 1.5% of a core beside a nice-0 one).

Linux only (a thread's nice value is its own there, and ``/proc`` names the threads); elsewhere nothing
changes.  Only the JVM this process started is touched: a session kwire starts runs its JVM as a child of
the driver (``spark-submit`` execs ``java``).  The JDK has flags for this
(``-XX:ThreadPriorityPolicy=1 -XX:CompilerThreadPriority=19``), but that policy also moves every other JVM
thread to the JDK's own table of nice values, some above the workers' when run as root, and warns on every
start when not.  A compiler thread HotSpot adds later is started by a compiler thread, and inherits its nice
value.
"""

from __future__ import annotations

import os

#: The nice value given to the compiler threads: the lowest priority.
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


def lower_compiler_priority(nice=COMPILER_NICE, parent=None, proc="/proc"):
    """Set the nice value of the compiler threads of every JVM this process started to ``nice`` (never
    raising a thread's priority).  Returns how many threads were changed."""
    if not hasattr(os, "setpriority"):
        return 0
    changed = 0
    for pid in child_jvms(parent, proc):
        for tid in compiler_threads(pid, proc):
            try:
                if os.getpriority(os.PRIO_PROCESS, tid) < nice:
                    os.setpriority(os.PRIO_PROCESS, tid, nice)
                    changed += 1
            except OSError:
                pass   # gone since it was listed, or not ours to change
    return changed
