"""The embedded JVM's compiler threads at the lowest CPU priority (kwire/pipeline/_jvm_threads.py), on a
made-up ``/proc`` whose thread ids are real processes of this test (the Spark session's own JVM:
tests/test_pipeline_spark.py)."""

import os
import subprocess
import sys

import pytest

from kwire.pipeline._jvm_threads import COMPILER_NICE, child_jvms, compiler_threads, lower_compiler_priority

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="thread nice values: Linux only")


def _process(proc, pid, comm, ppid, threads=()):
    folder = proc / str(pid)
    (folder / "task").mkdir(parents=True)
    (folder / "stat").write_text(f"{pid} ({comm}) S {ppid} {pid} {pid} 0 -1 4194560 0 0\n")
    for tid, name in threads:
        (folder / "task" / str(tid)).mkdir()
        (folder / "task" / str(tid) / "comm").write_text(name + "\n")


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
    started = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) for _ in range(3)]
    yield [p.pid for p in started]
    for p in started:
        p.kill()
        p.wait()


def test_the_compilers_get_the_lowest_priority_and_nothing_else_changes(tmp_path, sleepers):
    c2, c1, other = sleepers
    before = os.getpriority(os.PRIO_PROCESS, other)
    assert before < COMPILER_NICE
    _process(tmp_path, 100, "java", os.getpid(), [(c2, "C2 CompilerThre"), (c1, "C1 CompilerThre"),
                                                  (other, "Executor task l")])
    _process(tmp_path, 200, "java", 1, [(other, "C2 CompilerThre")])   # not this process's JVM
    assert lower_compiler_priority(proc=str(tmp_path)) == 2
    assert os.getpriority(os.PRIO_PROCESS, c2) == COMPILER_NICE
    assert os.getpriority(os.PRIO_PROCESS, c1) == COMPILER_NICE
    assert os.getpriority(os.PRIO_PROCESS, other) == before
    assert lower_compiler_priority(proc=str(tmp_path)) == 0   # done once


def test_a_thread_already_lower_is_not_raised(tmp_path, sleepers):
    c2 = sleepers[0]
    os.setpriority(os.PRIO_PROCESS, c2, COMPILER_NICE)
    _process(tmp_path, 100, "java", os.getpid(), [(c2, "C2 CompilerThre")])
    assert lower_compiler_priority(nice=10, proc=str(tmp_path)) == 0
    assert os.getpriority(os.PRIO_PROCESS, c2) == COMPILER_NICE


def test_a_thread_gone_since_it_was_listed_is_skipped(tmp_path, sleepers):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    _process(tmp_path, 100, "java", os.getpid(), [(gone.pid, "C2 CompilerThre"), (sleepers[0], "C1 CompilerThre")])
    assert lower_compiler_priority(proc=str(tmp_path)) == 1
