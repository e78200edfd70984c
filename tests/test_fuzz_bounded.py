"""A bounded differential fuzzing pass, the decoder limits, and fuzz-found regressions.

The oracle is fuzz/differential.py (compiled codec == pure twin, typed
errors only, re-encoding reproduces the input's canonical form, max_elements
exact); see docs/RELIABILITY.md.  CI runs a deterministic mutation loop over
the committed corpus (fuzz/corpus/) and, when atheris is installed, a short
coverage-guided run per family.  Long campaigns: fuzz/fuzz_codec.py.
"""

import os
import struct
import subprocess
import sys
import time
import tracemalloc

import pytest

import kwire
from kwire.errors import DecodeError, FrameTooLargeError, LimitExceededError
from kwire.codec import FrameSplitter, split_frames

from tests._twins import IMPLS, codec_module
from tests.conftest import REPO

FUZZ = os.path.join(REPO, "fuzz")
sys.path.insert(0, FUZZ)

import differential  # noqa: E402
import mutate  # noqa: E402

FAMILIES = differential.FAMILIES
# Mutants per family: about 35 s in all on an idle 2-core machine, about 2 min on a loaded one.
MUTANTS = {"api": 100000, "headers": 40000, "frames": 60000, "consumer": 60000, "records": 60000, "cluster": 30000,
           "batch": 4000}  # a batch input is a capture of ~15 frames, decoded into Arrow twice
# A decode may take this long on one input before it counts as a hang; fuzz
# inputs are a few hundred bytes, so anything near it is pathological.
PER_INPUT_SECONDS = 1.0
# Memory a decode may use: fixed overhead plus a bounded cost per input byte
# (a 1-byte flexible struct becomes a Python object of ~100-200 bytes).
MEMORY_BASE = 256 * 1024
MEMORY_PER_BYTE = 1024

needs_both = pytest.mark.skipif(len(IMPLS) < 2, reason="differential tests need the compiled codec")


@needs_both
@pytest.mark.parametrize("family", FAMILIES)
def test_seed_corpus(family):
    stats = {}
    seeds = mutate.load_corpus(family)
    assert seeds, f"fuzz/corpus/{family} is empty"
    for data in seeds:
        differential.check(family, data, stats)
    assert stats.get("decoded", 0) > 0, stats


@needs_both
@pytest.mark.slow  # ~40 s in all: .ci/run runs the slow tests after the README's test command
@pytest.mark.parametrize("family", FAMILIES)
def test_deterministic_mutation_pass(family):
    stats = {}
    slowest = (0.0, b"")
    for n, data in enumerate(mutate.inputs(family, MUTANTS[family], seed=0)):
        t0 = time.perf_counter()
        try:
            differential.check(family, data, stats)
        except differential.Finding as e:
            raise AssertionError(f"{family} input {n} ({data.hex()}): {e}") from None
        dt = time.perf_counter() - t0
        if dt > slowest[0]:
            slowest = (dt, data)
    assert slowest[0] < PER_INPUT_SECONDS, f"{family}: {slowest[0]:.2f}s on {slowest[1].hex()}"
    # The loop must reach both outcomes, or it is not testing the decoders.
    assert stats.get("decoded", 0) > 100 and stats.get("errors", 0) > 100, stats


@needs_both
@pytest.mark.parametrize("family", FAMILIES)
def test_memory_is_bounded_by_input_size(family):
    # Every 25th mutant under tracemalloc (which sees PyMem_* of the compiled
    # codec as well): peak use must stay proportional to the input.
    worst = (0.0, b"")
    for n, data in enumerate(mutate.inputs(family, 1500, seed=1)):
        if n % 25:
            continue
        tracemalloc.start()
        try:
            differential.check(family, data)
            _cur, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        ratio = (peak - MEMORY_BASE) / max(len(data), 1)
        if ratio > worst[0]:
            worst = (ratio, data)
    assert worst[0] <= MEMORY_PER_BYTE, f"{family}: {worst[0]:.0f} bytes per input byte on {worst[1].hex()}"


@needs_both
@pytest.mark.slow  # ~35 s in all, coverage-guided
@pytest.mark.parametrize("family", FAMILIES)
def test_atheris_bounded_run(family, tmp_path):
    pytest.importorskip("atheris")
    work = tmp_path / family
    work.mkdir()
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, os.path.join(FUZZ, "fuzz_codec.py"), family, "-runs=6000", "-timeout=10",
           "-rss_limit_mb=2048", "-max_len=2048", f"-artifact_prefix={tmp_path}/", "-seed=1",
           str(work), os.path.join(FUZZ, "corpus", family)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-30:])
    assert proc.returncode == 0, tail
    assert "Done 6000 runs" in proc.stderr, tail


# ---------------------------------------------------------------------------
# Limits
# ---------------------------------------------------------------------------

def _join_group_response(k, members, tags=None):
    return k.JoinGroupResponse(
        members=[k.JoinGroupResponseMember(member_id=f"m{i}", metadata=b"x") for i in range(members)],
        unknown_tagged_fields=tags)


@pytest.mark.parametrize("impl", IMPLS)
def test_max_elements_counts_every_array_element_and_tagged_field(impl):
    k = codec_module(impl)
    body = _join_group_response(k, 10, {7: b"", 9: b"ab"}).encode(9)
    assert k.JoinGroupResponse.decode(body, 9, max_elements=12) == k.JoinGroupResponse.decode(body, 9)
    with pytest.raises(LimitExceededError) as info:
        k.JoinGroupResponse.decode(body, 9, max_elements=11)
    assert info.value.path == "" and "tagged fields" in info.value.reason
    with pytest.raises(LimitExceededError) as info:
        k.JoinGroupResponse.decode(body, 9, max_elements=9)
    assert info.value.path == "members" and isinstance(info.value, DecodeError)
    # Nested arrays draw on the same budget.
    sub = k.Subscription(topics=["a", "b"], owned_partitions=[
        k.SubscriptionTopicPartition(topic="a", partitions=[0, 1, 2])]).encode(3)
    k.Subscription.decode(sub, max_elements=6)
    with pytest.raises(LimitExceededError) as info:
        k.Subscription.decode(sub, max_elements=5)
    assert info.value.path == "owned_partitions[0].partitions"


@pytest.mark.parametrize("impl", IMPLS)
def test_max_elements_is_validated(impl):
    k = codec_module(impl)
    body = k.HeartbeatRequest(group_id="g").encode(0)
    assert k.HeartbeatRequest.decode(body, 0, max_elements=0).group_id == "g"
    assert k.HeartbeatRequest.decode(body, 0, max_elements=2**80).group_id == "g"
    for bad, err in ((-1, ValueError), (1.0, TypeError), (True, TypeError), ("3", TypeError)):
        with pytest.raises(err):
            k.HeartbeatRequest.decode(body, 0, max_elements=bad)


@pytest.mark.parametrize("impl", IMPLS)
def test_hostile_counts_fail_fast_without_allocating(impl):
    k = codec_module(impl)
    # JoinGroupResponse v9 with a compact member count of 2^32 - 1 and of 2^31 - 1 (varint),
    # then the classic int32 2^31 - 1 of v5: ~40 bytes declaring billions of members.
    head9 = k.JoinGroupResponse(protocol_type="consumer", protocol_name="range").encode(9)[:-2]
    head5 = k.JoinGroupResponse(protocol_name="range").encode(5)[:-4]
    hostile = [(9, head9 + b"\xff\xff\xff\xff\x0f" + bytes(8)),
               (9, head9 + b"\x80\x80\x80\x80\x08" + bytes(8)),
               (5, head5 + struct.pack(">i", 2**31 - 1) + bytes(8))]
    for version, body in hostile:
        assert len(body) < 64
        tracemalloc.start()
        t0 = time.perf_counter()
        try:
            with pytest.raises(DecodeError, match="cannot fit"):
                k.JoinGroupResponse.decode(body, version)
            _cur, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert time.perf_counter() - t0 < 0.5
        assert peak < 64 * 1024


def test_frame_splitter_refuses_an_oversized_frame_on_its_size_prefix_alone():
    sp = FrameSplitter(max_frame_size=1 << 20)
    with pytest.raises(FrameTooLargeError) as info:
        sp.feed(struct.pack(">i", (1 << 20) + 1))
    assert info.value.frames == [] and sp.pending == 4
    # The stream is dead from then on: nothing more is buffered.
    with pytest.raises(FrameTooLargeError):
        sp.feed(b"x" * 1000)
    assert sp.pending == 4
    with pytest.raises(FrameTooLargeError):
        FrameSplitter().feed(struct.pack(">i", 2**31 - 1))
    with pytest.raises(DecodeError):
        FrameSplitter().feed(struct.pack(">i", -5))


def test_frame_splitter_never_reserves_a_declared_size():
    # A frame declared at the default maximum (100 MiB) but not yet sent costs
    # only the bytes received, and frames before a bad prefix are handed back.
    good = kwire.encode_request(kwire.HeartbeatRequest(group_id="g"), 0, 1)
    sp = FrameSplitter()
    tracemalloc.start()
    try:
        frames = sp.feed(good + struct.pack(">i", kwire.codec.DEFAULT_MAX_FRAME_SIZE) + b"abc")
        _cur, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert frames == [good] and sp.pending == 7 and peak < 64 * 1024
    with pytest.raises(FrameTooLargeError) as info:
        split_frames(good + good + struct.pack(">i", 101), max_frame_size=100)
    assert info.value.frames == [good, good]
    frames, rest = split_frames(good + struct.pack(">i", 10**6), max_frame_size=10**6)
    assert frames == [good] and rest == struct.pack(">i", 10**6)


# ---------------------------------------------------------------------------
# Regressions found by the fuzzers (docs/RELIABILITY.md lists them)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("impl", IMPLS)
def test_unknown_tag_above_int32_survives_reencoding(impl):
    """Found by fuzzing: tags >= 2^31 decoded but were refused on encoding (as int32)."""
    k = codec_module(impl)
    # HeartbeatResponse v4: throttle_time_ms, error_code, then one tagged
    # field with tag 2^31 (varint 80 80 80 80 08) and no data.
    body = bytes(4) + bytes(2) + b"\x01" + b"\x80\x80\x80\x80\x08" + b"\x00"
    msg = k.HeartbeatResponse.decode(body, 4)
    assert msg.unknown_tagged_fields == {2**31: b""}
    assert msg.encode(4) == body


@pytest.mark.parametrize("impl", IMPLS)
def test_heartbeat_response_to_a_request_of_negative_version(impl):
    """Found by fuzzing the batch decoder: the compiled twin's Heartbeat fast
    path read a response to a request that claimed version -253 as a v1-v3
    response and reported error code 0, where the pure twin (and
    kwire.decode_response) refuse the version."""
    pytest.importorskip("pyarrow")
    import batch_oracle
    from kwire._impl import load

    request = bytearray(kwire.encode_request(kwire.HeartbeatRequest(group_id="g", member_id="m"), 1, 27))
    request[6:8] = struct.pack(">h", -253)
    response = struct.pack(">iii", 10, 27, 0) + bytes(2)  # a well-formed v1-v3 Heartbeat response
    records = [(0, 0, False, bytes(request)), (1, 0, False, response)]
    batch = load("batch", impl, "kwire.codec")
    rows, waiting = batch_oracle._run(batch, [records])
    assert waiting == 0
    assert rows[1]["request_seq"] == 0 and rows[1]["error_code"] is None
    assert rows[1]["decode_error"].startswith("UnsupportedVersionError")
    differential.check("batch", bytes([0]) + batch_oracle.encode(records))
