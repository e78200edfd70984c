"""The embedded JVM's compiler threads at the lowest CPU priority while the migration stage replays
(kwire/pipeline/_jvm_threads.py), on a made-up ``/proc`` whose thread ids are real processes of this test."""

import os
import subprocess
import sys

import pytest

from kwire.pipeline import _jvm_threads
from kwire.pipeline._jvm_threads import (COMPILER_NICE, child_jvms, compiler_threads, compilers_yielding,
                                         may_lower_nice_to)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="thread nice values: Linux only")


def _process(proc, pid, comm, ppid, threads=()):
    folder = proc / str(pid)
    (folder / "task").mkdir(parents=True, exist_ok=True)
    (folder / "stat").write_text(f"{pid} ({comm}) S {ppid} {pid} {pid} 0 -1 4194560 0 0\n")
    for tid, name in threads:
        (folder / "task" / str(tid)).mkdir()
        (folder / "task" / str(tid) / "comm").write_text(name + "\n")


def _nice(tid):
    return os.getpriority(os.PRIO_PROCESS, tid)


def test_only_the_java_children_of_the_parent_are_found(tmp_path):
    _process(tmp_path, 100, "java", 7)
    _process(tmp_path, 101, "java", 8)               # another parent's JVM
    _process(tmp_path, 102, "python3", 7)            # a child that is not a JVM
    _process(tmp_path, 103, "a (java) thing", 7)     # parentheses and spaces in the name are read right
    (tmp_path / "self").mkdir()                      # not a process folder
    assert child_jvms(7, str(tmp_path)) == [100]
    assert child_jvms(9, str(tmp_path)) == []
    assert child_jvms(7, str(tmp_path / "missing")) == []


def test_the_compiler_threads_are_told_by_name(tmp_path):
    _process(tmp_path, 100, "java", 7, [(100, "java"), (110, "C2 CompilerThre"), (111, "C1 CompilerThre"),
                                        (112, "GC Thread#0"), (113, "Executor task l")])
    assert sorted(compiler_threads(100, str(tmp_path))) == [110, 111]
    assert compiler_threads(999, str(tmp_path)) == []


@pytest.fixture
def sleepers():
    """Processes that stand for threads: their ids take nice values as a thread's do."""
    started = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) for _ in range(4)]
    yield [p.pid for p in started]
    for p in started:
        p.kill()
        p.wait()


@pytest.fixture
def restorable():
    """As where the values can be given back (root, or RLIMIT_NICE allows it); the test's processes are its
    own children, so it can set their values either way only as root."""
    if os.geteuid() != 0:
        pytest.skip("giving a nice value back needs root here")


def test_the_compilers_yield_within_the_block_and_get_their_priority_back(tmp_path, sleepers, restorable):
    c2, c1, other, elsewhere = sleepers
    base = _nice(c2)   # this test's own (0, or more under `nice`)
    os.setpriority(os.PRIO_PROCESS, c1, base + 3)
    _process(tmp_path, 100, "java", os.getpid(), [(c2, "C2 CompilerThre"), (c1, "C1 CompilerThre"),
                                                  (other, "Executor task l")])
    _process(tmp_path, 200, "java", 1, [(elsewhere, "C2 CompilerThre")])   # not this process's JVM
    with compilers_yielding(proc=str(tmp_path)) as changed:
        assert changed == {c2: base, c1: base + 3}
        assert (_nice(c2), _nice(c1), _nice(other), _nice(elsewhere)) == (COMPILER_NICE, COMPILER_NICE, base, base)
    assert (_nice(c2), _nice(c1), _nice(other), _nice(elsewhere)) == (base, base + 3, base, base)


def test_a_compiler_thread_started_within_the_block_gets_the_others_priority(tmp_path, sleepers, restorable):
    c2, late, already, _ = sleepers
    base = _nice(c2)
    os.setpriority(os.PRIO_PROCESS, already, COMPILER_NICE)
    _process(tmp_path, 100, "java", os.getpid(), [(c2, "C2 CompilerThre"), (already, "C1 CompilerThre")])
    with compilers_yielding(proc=str(tmp_path)) as changed:
        assert changed == {c2: base}   # one already at the lowest priority is left as it is
        # HotSpot starts a compiler thread from a compiler thread, whose nice value it inherits.
        os.setpriority(os.PRIO_PROCESS, late, COMPILER_NICE)
        (tmp_path / "100" / "task" / str(late)).mkdir()
        (tmp_path / "100" / "task" / str(late) / "comm").write_text("C2 CompilerThre\n")
    assert (_nice(c2), _nice(late), _nice(already)) == (base, base, COMPILER_NICE)


def test_a_thread_gone_meanwhile_is_skipped(tmp_path, sleepers, restorable):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    _process(tmp_path, 100, "java", os.getpid(), [(gone.pid, "C2 CompilerThre"), (sleepers[0], "C1 CompilerThre")])
    base = _nice(sleepers[0])
    with compilers_yielding(proc=str(tmp_path)) as changed:
        assert changed == {sleepers[0]: base}
    assert _nice(sleepers[0]) == base


def test_nothing_changes_where_the_priority_could_not_be_given_back(tmp_path, sleepers, monkeypatch):
    monkeypatch.setattr(_jvm_threads, "may_lower_nice_to", lambda nice: False)
    _process(tmp_path, 100, "java", os.getpid(), [(sleepers[0], "C2 CompilerThre")])
    before = _nice(sleepers[0])
    with compilers_yielding(proc=str(tmp_path)) as changed:
        assert changed == {}
        assert _nice(sleepers[0]) == before


def test_who_may_give_a_priority_back(monkeypatch):
    import resource

    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(resource, "getrlimit", lambda what: (0, 0))
    assert not may_lower_nice_to(0) and not may_lower_nice_to(19)
    monkeypatch.setattr(resource, "getrlimit", lambda what: (20, 20))   # nice values down to 0
    assert may_lower_nice_to(0) and not may_lower_nice_to(-1)
    monkeypatch.setattr(resource, "getrlimit", lambda what: (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    assert may_lower_nice_to(-20)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(resource, "getrlimit", lambda what: (0, 0))
    assert may_lower_nice_to(-20)
