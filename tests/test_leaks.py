"""Leak checks: many encode/decode/assign rounds of large inputs leave memory flat,
and so do decodes that fail halfway (the error path must release what it built).

Memory is measured with tracemalloc (which also sees the compiled codec's
PyMem_* buffers and every object it creates) and with the process RSS.  A
leak of one small object per round shows up as growth proportional to the
number of rounds, so each check compares two equally long runs after warm-up.
"""

import gc
import os
import tracemalloc

import pytest

import kwire
from kwire.errors import DecodeError, LimitExceededError

from tests._twins import IMPLS, codec_module


def _rss():
    with open(f"/proc/{os.getpid()}/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _growth(fn, rounds):
    """Traced bytes still held after ``rounds`` more calls than a warmed-up baseline."""
    for _ in range(max(3, rounds // 10)):
        fn()
    gc.collect()
    tracemalloc.start()
    try:
        for _ in range(rounds):
            fn()
        gc.collect()
        base = tracemalloc.get_traced_memory()[0]
        for _ in range(rounds):
            fn()
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()


def test_the_growth_measure_sees_a_leak_of_one_small_object_per_round():
    kept = []
    assert _growth(lambda: kept.append(bytes(100)), 150) > 16 * 1024
    assert _growth(lambda: bytes(100), 150) < 16 * 1024


def _big_join_group_response(k, n=1000):
    members = [k.JoinGroupResponseMember(member_id=f"member-{i}-\u00e9", group_instance_id=f"i{i}" if i % 2 else None,
                                         metadata=bytes(40)) for i in range(n)]
    return k.JoinGroupResponse(generation_id=7, protocol_type="consumer", protocol_name="range", leader="member-0",
                               member_id="member-1", members=members, unknown_tagged_fields={9: b"x"})


@pytest.mark.parametrize("impl", IMPLS)
def test_encode_decode_of_large_messages_is_flat(impl):
    k = codec_module(impl)
    msg = _big_join_group_response(k)
    body = msg.encode(9)
    rounds = 200 if impl == "cython" else 8

    def once():
        assert k.JoinGroupResponse.decode(body, 9).encode(9) == body
        assert k.JoinGroupResponse.decode(body, 9, views=True).encode(9) == body

    assert _growth(once, rounds) < 16 * 1024
    if "asan" in os.environ.get("LD_PRELOAD", ""):
        return  # ASan's quarantine keeps freed memory resident by design
    rss0 = _rss()
    for _ in range(rounds * 3):
        once()
    assert _rss() - rss0 < 16 * 2**20


@pytest.mark.parametrize("impl", IMPLS)
def test_failing_decodes_release_what_they_built(impl):
    k = codec_module(impl)
    body = _big_join_group_response(k, 300).encode(9)
    bad_utf8 = bytearray(body)
    bad_utf8[bad_utf8.index(b"member-250") + 2] = 0xFF  # fails deep inside members[250]
    cases = [
        (bytes(bad_utf8), {}, DecodeError),
        (body[:-40], {}, DecodeError),                    # truncated in the last member
        (body, {"max_elements": 299}, LimitExceededError),
        (body + b"\x00", {}, DecodeError),                # everything built, then trailing bytes
    ]
    cases += [(data, {**kw, "views": True}, err) for data, kw, err in cases]  # the views made are released too
    rounds = 150 if impl == "cython" else 6

    def once():
        for data, kw, err in cases:
            try:
                k.JoinGroupResponse.decode(data, 9, **kw)
            except err:
                pass
            else:
                raise AssertionError("expected a decode error")

    assert _growth(once, rounds) < 16 * 1024


@pytest.mark.parametrize("impl", IMPLS)
def test_decoding_releases_the_callers_buffer(impl):
    # A held buffer export would make the bytearray unresizable ("BufferError:
    # Existing exports of data") -- on success and on every error path.
    k = codec_module(impl)
    body = _big_join_group_response(k, 20).encode(9)
    for data in (body, body[:-3], body + b"\x00"):
        ba = bytearray(data)
        try:
            k.JoinGroupResponse.decode(ba, 9)
        except DecodeError:
            pass
        ba.append(0)
        try:
            # Views are of a copy of any input but bytes: they hold no export of the caller's buffer.
            viewed = k.JoinGroupResponse.decode(ba, 9, views=True)
        except DecodeError:
            viewed = None
        ba.append(0)
        del viewed
        mv = memoryview(bytearray(data))
        try:
            k.JoinGroupResponse.decode(mv, 9, max_elements=1)
        except DecodeError:
            pass
        mv.release()


@pytest.mark.parametrize("impl", IMPLS)
def test_decoded_objects_are_freed_with_their_last_reference(impl):
    # Instances keep their class alive: a leaked instance per round would show
    # as refcount growth on the classes, and as live objects of the type.
    import sys

    k = codec_module(impl)
    body = _big_join_group_response(k, 50).encode(9)
    classes = (k.JoinGroupResponse, k.JoinGroupResponseMember)
    for _ in range(5):
        k.JoinGroupResponse.decode(body, 9)
    gc.collect()
    before = [sys.getrefcount(c) for c in classes]
    for _ in range(200):
        k.JoinGroupResponse.decode(body, 9)
        try:
            k.JoinGroupResponse.decode(body[:-10], 9)
        except DecodeError:
            pass
    gc.collect()
    assert [sys.getrefcount(c) for c in classes] == before
    assert not [o for o in gc.get_objects() if type(o) in classes]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("strategy", ["range", "roundrobin", "sticky", "cooperative-sticky"])
def test_repeated_assignments_are_flat(impl, strategy):
    topics = [f"topic-{t}" for t in range(20)]
    members = [kwire.GroupMember(f"consumer-{m}", None, kwire.Subscription(
        topics=topics, owned_partitions=[kwire.SubscriptionTopicPartition(topic=topics[m % 20], partitions=[m % 7])],
        generation_id=3)) for m in range(60)]
    ppt = {t: 50 for t in topics}
    rounds = 6 if impl == "cython" else 2

    def once():
        result = kwire.assign(strategy, members, ppt, implementation=impl)
        assert sum(len(v) for v in result.values()) > 0

    assert _growth(once, rounds) < 64 * 1024
