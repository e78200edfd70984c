"""The compiled assignor kernels release the GIL, so a coordinator's other
threads (heartbeats, socket I/O) keep running during a 1M-partition assignment.

Measure: a ticker thread sleeps 0.2 ms and counts, while the main thread
runs the work with ``sys.setswitchinterval(1.0)``.  With that interval a
thread holding the GIL keeps it for a second, so the ticker can only tick
while the main thread is in a ``with nogil`` section (or in NumPy code that
releases the GIL).  Ticks per second of work, relative to the ticker's idle
rate, is the share of the work that let other threads run.  Pure Python and
a compiled codec call are the control: they hold the GIL, and the measure
must see that.  (The pure-Python kernels are no control: they are NumPy
code, which releases the GIL too.)
"""

import sys
import threading
import time

import numpy as np
import pytest

from kwire.assignors import ArrayGroup, assign_arrays
from kwire.assignors._arrays import load_kernels

from tests._twins import IMPLS

pytestmark = pytest.mark.skipif(len(IMPLS) < 2, reason="needs the compiled kernels")

TOPICS, PARTITIONS, MEMBERS = 100, 10_000, 1000  # 1M partitions


def _group():
    topics = sorted(f"topic-{t:04d}" for t in range(TOPICS))
    members = [f"consumer-{m:05d}" for m in range(MEMBERS)]
    return ArrayGroup(topics, np.full(TOPICS, PARTITIONS, dtype=np.int32), members,
                      np.arange(MEMBERS + 1, dtype=np.int64) * TOPICS,
                      np.tile(np.arange(TOPICS, dtype=np.int32), MEMBERS))


def _share_of_time_others_ran(fn, seconds):
    ticks = [0]
    stop = [False]

    def ticker():
        while not stop[0]:
            time.sleep(0.0002)
            ticks[0] += 1

    th = threading.Thread(target=ticker, daemon=True)
    th.start()
    try:
        t0, c0 = time.perf_counter(), ticks[0]
        time.sleep(0.2)
        idle_rate = (ticks[0] - c0) / (time.perf_counter() - t0)
        old = sys.getswitchinterval()
        sys.setswitchinterval(1.0)
        try:
            c0, t0 = ticks[0], time.perf_counter()
            while time.perf_counter() - t0 < seconds:
                fn()
            elapsed, done = time.perf_counter() - t0, ticks[0] - c0
        finally:
            sys.setswitchinterval(old)
    finally:
        stop[0] = True
        th.join()
    return done / (idle_rate * elapsed)


def _kernel_calls(impl):
    # The kernels as assign_range/assign_roundrobin call them, on 1M partitions.
    group = _group()
    k = load_kernels("rangerr", impl)
    order = group.member_sort_order()
    tp_indptr, tp_members = k.subscribers_by_topic(TOPICS, group.sub_indptr, group.sub_topics, order)
    topic_order = np.arange(TOPICS, dtype=np.int32)
    rank = np.empty(MEMBERS, dtype=np.int32)
    rank[order] = np.arange(MEMBERS, dtype=np.int32)
    return {
        "subscribers_by_topic": lambda: k.subscribers_by_topic(TOPICS, group.sub_indptr, group.sub_topics, order),
        "range_plain": lambda: k.range_plain(MEMBERS, group.partition_counts, tp_indptr, tp_members, topic_order),
        "roundrobin": lambda: k.roundrobin(MEMBERS, group.partition_counts, tp_indptr, tp_members, topic_order, rank),
    }


@pytest.mark.parametrize("kernel", ["range_plain", "roundrobin"])
def test_range_and_roundrobin_kernels_let_other_threads_run(kernel):
    share = _share_of_time_others_ran(_kernel_calls("cython")[kernel], seconds=0.6)
    assert share > 0.3, f"other threads ran {share:.0%} of the time"


def test_the_measure_sees_work_that_holds_the_gil():
    # Pure Python, and a compiled call that never releases the GIL (decoding
    # a 1000-member JoinGroupResponse): other threads must barely run.
    import kwire.codec._codec_c as codec

    body = codec.JoinGroupResponse(members=[codec.JoinGroupResponseMember(member_id=str(i))
                                            for i in range(1000)]).encode(9)
    assert _share_of_time_others_ran(lambda: sum(range(200_000)), seconds=0.4) < 0.1
    assert _share_of_time_others_ran(lambda: codec.JoinGroupResponse.decode(body, 9), seconds=0.4) < 0.1


@pytest.mark.parametrize("strategy", ["range", "roundrobin"])
def test_a_million_partition_assignment_does_not_stall_other_threads(strategy):
    group = _group()
    assign_arrays(strategy, group)  # caches (member order, hashes) are per group, as in a real leader
    share = _share_of_time_others_ran(lambda: assign_arrays(strategy, group), seconds=0.6)
    assert share > 0.2, f"other threads ran {share:.0%} of the time"


def _uneven_group(partitions_per_topic):
    # Each member on a random half of the topics: sticky's general path, whose
    # balancing pass scans every partition and does so without the GIL.
    rng = np.random.default_rng(1)
    subs = [np.sort(rng.choice(TOPICS, TOPICS // 2, replace=False)).astype(np.int32) for _ in range(MEMBERS)]
    indptr = np.zeros(MEMBERS + 1, np.int64)
    indptr[1:] = np.cumsum([len(s) for s in subs])
    return ArrayGroup(sorted(f"topic-{t:04d}" for t in range(TOPICS)),
                      np.full(TOPICS, partitions_per_topic, dtype=np.int32),
                      [f"consumer-{m:05d}" for m in range(MEMBERS)], indptr, np.concatenate(subs))


def test_sticky_general_path_lets_other_threads_run():
    # 100k partitions keeps the call near 0.2 s; the 1M version (benches/
    # bench_sticky.py) takes seconds, and its share of GIL-free time is higher.
    group = _uneven_group(1000)
    share = _share_of_time_others_ran(lambda: assign_arrays("cooperative-sticky", group), seconds=0.8)
    assert share > 0.2, f"other threads ran {share:.0%} of the time"
