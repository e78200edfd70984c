"""The batch decoder: request/response pairing, malformed frames, both twins, zero-copy views."""

import struct

import pytest

pa = pytest.importorskip("pyarrow")

import pyarrow.compute as pc  # noqa: E402

import kwire  # noqa: E402
from kwire import _impl  # noqa: E402
from kwire.pipeline._capture import CaptureWriter, read_capture  # noqa: E402
from kwire.codec import batch_decoder  # noqa: E402
from kwire.pipeline import _decode as decode_module  # noqa: E402
from kwire.pipeline._decode import binary_views, decode_capture, decode_table  # noqa: E402
from kwire.pipeline._synth import synth  # noqa: E402
from tests._twins import IMPLS  # noqa: E402

from tests.pipeline_captures import metadata_request, metadata_response  # noqa: E402

CONSUMER_GROUP_HEARTBEAT, CONSUMER_GROUP_DESCRIBE = (int(kwire.codec.ApiKey.CONSUMER_GROUP_HEARTBEAT),
                                                     int(kwire.codec.ApiKey.CONSUMER_GROUP_DESCRIBE))


def _write(path, rows):
    """rows: (conn, direction, frame[, truncated]) in capture order; ts = 1000 * index."""
    with CaptureWriter(path) as w:
        for i, r in enumerate(rows):
            conn, direction, frame = r[:3]
            w.append(1000 * i, conn, direction, frame, truncated=r[3] if len(r) > 3 else False)
    return path


def _hb_req(corr, member="m-1", gen=3, version=4):
    return kwire.encode_request(kwire.HeartbeatRequest(group_id="g", generation_id=gen, member_id=member),
                                version, correlation_id=corr, client_id="c")


def _hb_resp(corr, err=0, version=4):
    return kwire.encode_response(kwire.HeartbeatResponse(error_code=err), version, correlation_id=corr)


def _join_req(corr, member=""):
    sub = kwire.Subscription(topics=["b", "a"]).encode(3)
    return kwire.encode_request(kwire.JoinGroupRequest(
        group_id="g", session_timeout_ms=10000, rebalance_timeout_ms=60000, member_id=member,
        protocol_type="consumer", protocols=[kwire.JoinGroupRequestProtocol(name="range", metadata=sub)]),
        9, correlation_id=corr, client_id="c")


def _join_resp(corr, member):
    sub = kwire.Subscription(topics=["b", "a"]).encode(3)
    return kwire.encode_response(kwire.JoinGroupResponse(
        generation_id=4, protocol_type="consumer", protocol_name="range", leader=member, member_id=member,
        members=[kwire.JoinGroupResponseMember(member_id=member, metadata=sub)]), 9, correlation_id=corr)


@pytest.mark.parametrize("impl", IMPLS)
def test_responses_pair_with_their_request_per_connection(tmp_path, impl):
    # The same correlation id on two connections, answered out of order.
    path = _write(tmp_path / "c.parquet", [
        (1, 0, _join_req(5)),
        (2, 0, _hb_req(5, member="m-2", gen=7)),
        (2, 1, _hb_resp(5, err=27)),
        (1, 1, _join_resp(5, "m-1")),
        (1, 0, _hb_req(6, gen=4)),
        (1, 1, _hb_resp(6)),
    ])
    rows = decode_capture(path, impl).to_pylist()
    assert [r["api_key"] for r in rows] == [11, 12, 12, 11, 12, 12]
    hb = rows[2]
    assert (hb["error_code"], hb["member_id"], hb["generation_id"], hb["request_seq"]) == (27, "m-2", 7, 1)
    assert hb["request_ts"] == rows[1]["ts"]
    join = rows[3]
    assert join["members"] == [{"member_id": "m-1", "group_instance_id": None, "topics": ["b", "a"]}]
    assert (join["generation_id"], join["leader"], join["protocol_name"], join["group_id"]) == (4, "m-1", "range", "g")
    assert rows[0]["topics"] == ["b", "a"] and rows[0]["protocols"] == ["range"]
    assert rows[0]["session_timeout_ms"] == 10000 and rows[0]["client_id"] == "c"
    assert all(r["decode_error"] is None for r in rows)


@pytest.mark.parametrize("impl", IMPLS)
def test_sync_assignments_are_decoded_and_responses_inherit_the_member(tmp_path, impl):
    a = kwire.Assignment(assigned_partitions=[kwire.AssignmentTopicPartition(topic="t", partitions=[2, 0])]).encode(3)
    req = kwire.encode_request(kwire.SyncGroupRequest(
        group_id="g", generation_id=4, member_id="m-1", protocol_type="consumer", protocol_name="range",
        assignments=[kwire.SyncGroupRequestAssignment(member_id="m-1", assignment=a),
                     kwire.SyncGroupRequestAssignment(member_id="m-2", assignment=b"")]), 5, correlation_id=9)
    resp = kwire.encode_response(kwire.SyncGroupResponse(protocol_type="consumer", protocol_name="range",
                                                         assignment=a), 5, correlation_id=9)
    rows = decode_capture(_write(tmp_path / "c.parquet", [(1, 0, req), (1, 1, resp)]), impl).to_pylist()
    assert rows[0]["assignments"] == [{"member_id": "m-1", "topic": "t", "partitions": [2, 0]}]
    assert rows[1]["assignments"] == [{"member_id": "m-1", "topic": "t", "partitions": [2, 0]}]
    assert (rows[1]["generation_id"], rows[1]["error_code"]) == (4, 0)


@pytest.mark.parametrize("impl", IMPLS)
def test_malformed_frames_become_rows_with_an_error(tmp_path, impl):
    good = _hb_req(1)
    bad_utf8 = bytearray(_hb_req(2, member="m-X"))
    bad_utf8[bad_utf8.index(b"m-X") + 2] = 0xFF
    other_req = struct.pack(">ihhih", 10, 17, 1, 3, -1)  # SaslHandshake v1 header: an api kwire has no codec for
    rows = decode_capture(_write(tmp_path / "c.parquet", [
        (1, 0, good[:-3], True),           # capture stopped mid-frame
        (1, 1, _hb_resp(1)),                # its response still pairs
        (1, 0, bytes(bad_utf8)),
        (1, 1, b"\x00\x00"),                # shorter than a response header
        (1, 1, _hb_resp(99)),               # nobody asked
        (1, 0, b"\xff\xff\xff\xff" + good[4:]),  # negative size prefix
        (1, 0, other_req),                  # an api the pipeline ignores
        (1, 1, struct.pack(">ii", 4, 3)),
        (1, 0, good[:4] + b"\x00\x0c\x00\x63" + good[8:]),  # Heartbeat v99
    ]), impl).to_pylist()
    errors = [r["decode_error"] for r in rows]
    assert errors[0].startswith("DecodeError: size prefix says") and rows[0]["truncated"]
    assert errors[1] is None and rows[1]["api_key"] == 12
    assert "invalid UTF-8" in errors[2]
    assert "shorter than a header" in errors[3]
    assert errors[4].startswith("unpaired response")
    assert errors[5].startswith("DecodeError")
    assert errors[6] is None and rows[6]["api_key"] == 17 and rows[6]["group_id"] is None
    assert errors[7] is None and rows[7]["api_key"] == 17
    assert errors[8].startswith("UnsupportedVersionError")


@pytest.mark.parametrize("impl", IMPLS)
def test_truncated_flag_is_reported_even_when_bytes_parse(tmp_path, impl):
    rows = decode_capture(_write(tmp_path / "c.parquet", [(1, 0, _hb_req(1), True), (1, 1, _hb_resp(1), True),
                                                         (1, 0, _join_req(2), True)]), impl).to_pylist()
    assert [r["decode_error"] for r in rows] == ["truncated frame"] * 3
    assert [r["api_key"] for r in rows] == [12, 12, 11]


@pytest.mark.skipif(_impl.NO_EXTENSIONS, reason="compiled decoder not built")
def test_heartbeat_fast_path_falls_back_on_tagged_fields(tmp_path):
    resp = kwire.HeartbeatResponse(error_code=27)
    resp.unknown_tagged_fields = {5: b"xy"}
    frame = kwire.encode_response(resp, 4, correlation_id=1)
    capture = _write(tmp_path / "c.parquet", [(1, 0, _hb_req(1)), (1, 1, frame), (1, 0, _hb_req(2, version=0)),
                                             (1, 1, _hb_resp(2, err=25, version=0))])
    compiled, pure = decode_capture(capture, "cython"), decode_capture(capture, "python")
    assert compiled.equals(pure)
    assert compiled.column("error_code").to_pylist() == [None, 27, None, 25]


def _resized(frame, body):
    """``frame``'s size prefix over a new ``body`` (everything after the prefix)."""
    return struct.pack(">i", len(body)) + body


def _heartbeat_request_variants():
    """Heartbeat requests of every version, for the compiled twin's fast
    path: the ones it reads itself and the ones it must leave to the codec
    (non-ASCII strings, lengths past one varint byte, tagged fields, nulls
    where none are allowed, trailing bytes)."""
    out = []
    for version in range(5):
        instances = [None, "i-1", ""] if version >= 3 else [None]
        for member in ("m-1", "", "m\u00e9", "\U0001f600", "x" * 126, "y" * 127, "z" * 300):
            for instance in instances:
                for client in ("c", None, "cl\u00ef"):
                    out.append(kwire.encode_request(
                        kwire.HeartbeatRequest(group_id="g\u00e4" if member == "" else "g", generation_id=-7,
                                               member_id=member, group_instance_id=instance),
                        version, correlation_id=len(out), client_id=client))
    plain = _hb_req(0, version=4)
    head = 4 + 8 + 2 + 1  # size, key/version/correlation, client id "c"
    tagged_body = kwire.HeartbeatRequest(group_id="g", generation_id=1, member_id="m")
    tagged_body.unknown_tagged_fields = {3: b"ab"}
    out += [
        kwire.encode_request(tagged_body, 4, correlation_id=1000, client_id="c"),
        _resized(plain, plain[4:head] + b"\x01\x05\x01z" + plain[head + 1:]),    # a tagged field in the header
        _resized(plain, plain[4:] + b"\x00"),                                       # a byte after the body
        _resized(plain, plain[4:head + 1] + b"\x00" + plain[head + 3:]),            # null group id (compact)
        _resized(plain, plain[4:-1]),                                               # tagged fields missing
    ]
    v0 = _hb_req(0, version=0)
    out += [_resized(v0, v0[4:head - 1] + b"\xff\xff" + v0[head + 2:]),            # null group id (int16)
            _resized(v0, v0[4:head - 1] + b"\xff\xfe" + v0[head + 2:])]            # length -2
    return out


@pytest.mark.skipif(_impl.NO_EXTENSIONS, reason="compiled decoder not built")
@pytest.mark.parametrize("batch_rows", [65536, 3])
def test_heartbeat_requests_read_by_the_fast_path_or_the_codec_alike(tmp_path, batch_rows):
    requests = _heartbeat_request_variants()
    frames = []
    for corr, frame in enumerate(requests):
        # Every request answered, some right away and some after later requests (other batches when small).
        frame = frame[:8] + struct.pack(">i", corr) + frame[12:]
        frames.append((1, 0, frame))
        if corr % 3:
            frames.append((1, 1, _hb_resp(corr, err=corr % 30, version=min(4, frame[7]))))
    frames += [(1, 1, _hb_resp(corr, version=min(4, requests[corr][7]))) for corr in range(0, len(requests), 3)]
    table = read_capture(_write(tmp_path / "c.parquet", frames))
    compiled = decode_table(table, "cython", batch_rows=batch_rows)
    pure = decode_table(table, "python")
    for name in compiled.schema.names:
        assert compiled.column(name).to_pylist() == pure.column(name).to_pylist(), name
    rows = compiled.to_pylist()
    by_corr = {}
    for r in rows:
        by_corr.setdefault(r["correlation_id"], []).append(r)
    for corr, frame in enumerate(requests[:-7]):
        version = frame[7]
        msg = kwire.HeartbeatRequest.decode(frame[4 + 8 + 2 + max(0, struct.unpack(">h", frame[12:14])[0])
                                              + (1 if version >= 4 else 0):], version)
        request, response = by_corr[corr]
        assert request["decode_error"] is None and response["decode_error"] is None
        for r in (request, response):
            assert (r["group_id"], r["member_id"], r["group_instance_id"], r["generation_id"]) == \
                (msg.group_id, msg.member_id, msg.group_instance_id, -7)
        assert response["request_seq"] == request["seq"] and response["api_version"] == version
    tagged_body, tagged_header, *broken = (by_corr[corr][0] for corr in range(len(requests) - 7, len(requests)))
    # Tagged fields are the codec's to read past: the fast path declines them.
    assert tagged_body["decode_error"] is None and tagged_body["member_id"] == "m"
    assert tagged_header["decode_error"] is None and tagged_header["client_id"] == "c"
    assert all(r["decode_error"].startswith("DecodeError") for r in broken), [r["decode_error"] for r in broken]


@pytest.mark.skipif(_impl.NO_EXTENSIONS, reason="compiled decoder not built")
@pytest.mark.parametrize("seed", range(3))
def test_pairing_of_reused_ids_out_of_order_and_unanswered_matches_the_pure_twin(tmp_path, seed):
    # The compiled twin pairs in a hash table of its own: correlation ids reused while a request
    # waits (the newer one wins), responses out of order or missing, and connection ids past 32
    # bits (once folded into one int64 with the correlation id, where 2**40 + 1 read as 1).
    import random

    rnd = random.Random(seed)
    conns = [1, 2, 3, 2**40 + 1, -5]
    frames, waiting = [], []
    for _ in range(3000):
        conn = rnd.choice(conns)
        if waiting and rnd.random() < 0.45:
            c, corr, version = waiting.pop(rnd.randrange(len(waiting)) if rnd.random() < 0.3 else 0)
            frames.append((c, 1, _hb_resp(corr, err=corr % 7, version=version)))
        elif rnd.random() < 0.05:
            frames.append((conn, 1, _hb_resp(rnd.randrange(40))))  # nobody asked, or a stale id
        else:
            corr, version = rnd.randrange(40), rnd.choice([0, 3, 4])
            frames.append((conn, 0, _hb_req(corr, member=f"m-{conn}-{corr}", gen=rnd.randrange(9), version=version)))
            waiting.append((conn, corr, version))
    with CaptureWriter(tmp_path / "c.parquet") as w:
        for i, (conn, direction, frame) in enumerate(frames):
            w.append(1000 * i, conn, direction, frame)
    table = read_capture(tmp_path / "c.parquet")
    pure = decode_table(table, "python")
    assert pure.column("decode_error").null_count < pure.num_rows  # unpaired responses among them
    for batch_rows in (65536, 257, 16):
        compiled = decode_table(table, "cython", batch_rows=batch_rows)
        for name in compiled.schema.names:
            assert compiled.column(name).to_pylist() == pure.column(name).to_pylist(), (batch_rows, name)


@pytest.mark.skipif(_impl.NO_EXTENSIONS, reason="compiled decoder not built")
def test_twins_agree_on_damaged_synthetic_traffic(tmp_path):
    path = tmp_path / "s.parquet"
    synth(path, groups=8, seed=3, duration_s=120, corrupt_rate=0.02)
    table = read_capture(path)
    compiled = decode_table(table, "cython")
    assert compiled.equals(decode_table(table, "python"))
    errors = compiled.column("decode_error").drop_null()
    assert 0 < len(errors) < compiled.num_rows // 10
    # Metadata responses are among them, decoded (damaged ones: test_twins_agree_on_metadata_frames).
    rows = compiled.filter(pc.equal(compiled.column("api_key"), 3)).to_pylist()
    assert sum(r["partition_counts"] is not None for r in rows) > 20


def test_batch_boundaries_do_not_break_pairing(tmp_path):
    path = tmp_path / "s.parquet"
    synth(path, groups=3, seed=2, duration_s=60)
    table = read_capture(path)
    whole = decode_table(table)
    assert decode_table(table, batch_rows=7).equals(whole)
    assert whole.column("decode_error").null_count == whole.num_rows


@pytest.mark.parametrize("impl", IMPLS)
def test_a_partition_written_to_parquet_reads_back_as_the_decoded_table(tmp_path, impl):
    import pyarrow.parquet as pq
    from pyarrow import fs

    path = tmp_path / "s.parquet"
    synth(path, groups=4, seed=5, duration_s=90, corrupt_rate=0.02)
    table = read_capture(path).sort_by([("conn", "ascending"), ("seq", "ascending")])
    want = decode_table(table, impl)
    mod = batch_decoder(impl)
    out = str(tmp_path / "part.parquet")
    # Small batches and row groups: pairing and the connection count cross both boundaries.
    frames, errors, connections = decode_module.decode_to_parquet(
        table.to_batches(max_chunksize=100), mod.Pairing(), fs.LocalFileSystem(), out, str(tmp_path / ".part.tmp"),
        mod, row_group_rows=250)
    got = pq.read_table(out)
    assert got.schema.equals(mod.FRAMES_SCHEMA)
    assert pq.ParquetFile(out).num_row_groups > 1
    assert got.sort_by("seq").equals(want)
    assert frames == want.num_rows
    assert 0 < errors == want.num_rows - want.column("decode_error").null_count
    assert connections == len(pc.unique(table.column("conn")))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["part.parquet", "s.parquet"]


def test_a_partition_that_fails_leaves_no_file(tmp_path):
    from pyarrow import fs

    path = tmp_path / "s.parquet"
    synth(path, groups=2, seed=1, duration_s=30)
    table = read_capture(path).sort_by([("conn", "ascending"), ("seq", "ascending")])
    mod = batch_decoder()

    def failing():
        yield table.to_batches()[0]
        raise RuntimeError("the task was lost")

    with pytest.raises(RuntimeError):
        decode_module.decode_to_parquet(failing(), mod.Pairing(), fs.LocalFileSystem(), str(tmp_path / "p.parquet"),
                                        str(tmp_path / ".p.tmp"), mod)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.parquet"]
    # An empty partition is a file with the schema and no rows, which Spark's reader takes.
    assert decode_module.decode_to_parquet(iter(()), mod.Pairing(), fs.LocalFileSystem(), str(tmp_path / "e.parquet"),
                                           str(tmp_path / ".e.tmp"), mod) == (0, 0, 0)
    import pyarrow.parquet as pq

    empty = pq.read_table(tmp_path / "e.parquet")
    assert empty.num_rows == 0 and empty.schema.equals(mod.FRAMES_SCHEMA)


def test_binary_views_share_the_arrow_buffers():
    arr = pa.array([b"abc", b"", b"defg", b"h"], pa.binary()).slice(1, 3)
    offsets, values = binary_views(arr)
    assert list(offsets) == [3, 3, 7, 8]
    assert bytes(values[offsets[1]:offsets[2]]) == b"defg"
    assert values.ctypes.data == arr.buffers()[2].address
    assert offsets.ctypes.data == arr.buffers()[1].address + 4 * arr.offset


def test_decoder_module_follows_the_switch():
    import os

    mod = batch_decoder()
    assert mod.__name__ == ("kwire.codec._batch_py" if _impl.NO_EXTENSIONS else "kwire.codec._batch_c")
    if not _impl.NO_EXTENSIONS:
        assert os.path.splitext(mod.__file__)[1] in (".so", ".pyd"), mod.__file__
    assert batch_decoder("python").FRAMES_SCHEMA.equals(mod.FRAMES_SCHEMA)


@pytest.mark.parametrize("impl", IMPLS)
def test_other_protocol_types_are_not_read_as_consumer_payloads(tmp_path, impl):
    # Kafka Connect groups use the same apis with payloads of their own.
    req = kwire.encode_request(kwire.SyncGroupRequest(
        group_id="connect-cluster", generation_id=2, member_id="w-1", protocol_type="connect", protocol_name="sessioned",
        assignments=[kwire.SyncGroupRequestAssignment(member_id="w-1", assignment=b"\x00\x01{not consumer}")]),
        5, correlation_id=1)
    resp = kwire.encode_response(kwire.SyncGroupResponse(protocol_type="connect", protocol_name="sessioned",
                                                         assignment=b"\x00\x01{not consumer}"), 5, correlation_id=1)
    rows = decode_capture(_write(tmp_path / "c.parquet", [(1, 0, req), (1, 1, resp)]), impl).to_pylist()
    assert [(r["decode_error"], r["assignments"], r["protocol_type"]) for r in rows] == [(None, None, "connect")] * 2


def test_the_decoder_comes_from_the_codecs_public_loader():
    from kwire.errors import ArgumentValueError

    assert batch_decoder("python").__name__ == "kwire.codec._batch_py"
    if not _impl.NO_EXTENSIONS:
        assert batch_decoder("cython").__name__ == "kwire.codec._batch_c"
    # what the pipeline decodes with is the codec's loader itself, not a second name for it
    assert not hasattr(decode_module, "batch_module")
    assert batch_decoder() is batch_decoder("python" if _impl.NO_EXTENSIONS else "cython")
    for impl in IMPLS:
        assert batch_decoder(impl).FRAMES_SCHEMA == batch_decoder("python").FRAMES_SCHEMA
    with pytest.raises(ArgumentValueError):
        batch_decoder("rust")


METADATA_VERSIONS = (0, 1, 4, 9, 12)


def _metadata_capture(path):
    """Metadata exchanges of every framing the decoder meets, sound and not."""
    rows = []
    topics = [("t", 0, range(8)), ("gone", 3, []), ("u", 0, [2, 0, 1]), ("holes", 0, [0, 2]), ("none", 0, [])]
    for i, v in enumerate(METADATA_VERSIONS):
        rows += [(1, 0, metadata_request(i, v)), (1, 1, metadata_response(i, v, topics))]
    cut = metadata_response(20, 12, [("t", 0, range(3))])[:-5]
    garbled = bytearray(metadata_response(21, 12, [("t", 0, range(3))]))
    garbled[13] = 0x7F  # the brokers' count (a compact array's, after the header and throttle time)
    rows += [
        (2, 0, metadata_request(20, 12)), (2, 1, cut, True),                         # capture stopped mid-frame
        (2, 0, metadata_request(21, 12)), (2, 1, bytes(garbled)),
        (2, 0, metadata_request(22, 12)), (2, 1, metadata_response(22, 12, [])),       # no topics asked
        (3, 1, metadata_response(30, 12, [("t", 0, range(3))])),                     # unpaired
        (2, 0, _hb_req(23)), (2, 1, _hb_resp(23)),                                # group traffic around it
    ]
    return _write(path, rows)


def test_twins_agree_on_metadata_frames(tmp_path):
    capture = _metadata_capture(tmp_path / "c.parquet")
    tables = [decode_capture(capture, impl) for impl in IMPLS]
    for name in tables[0].schema.names:
        assert all(t.column(name).to_pylist() == tables[0].column(name).to_pylist() for t in tables), name
    rows = tables[0].to_pylist()
    responses = [r for r in rows if r["api_key"] == 3 and r["direction"] == 1 and r["decode_error"] is None]
    assert len(responses) == len(METADATA_VERSIONS) + 1
    for r in responses[:-1]:
        # Topics answered with an error have no size; a listing that is not 0..n-1 is no size either.
        assert r["topics"] == ["t", "u", "holes", "none"], r["api_version"]
        assert r["partition_counts"] == [8, 3, None, None]
        assert r["error_code"] is None and r["group_id"] is None
        # Topic ids from v10 on, beside their names (these topics have the null id, all zero bytes).
        assert r["topic_ids"] == (["A" * 22] * 4 if r["api_version"] >= 10 else None), r["api_version"]
    assert responses[-1]["topics"] == [] and responses[-1]["partition_counts"] == []
    errors = [r["decode_error"] for r in rows if r["api_key"] == 3 and r["decode_error"]]
    assert len(errors) == 2 and all(e.startswith("DecodeError") for e in errors), errors
    assert rows[-3]["decode_error"].startswith("unpaired response")
    requests = [r for r in rows if r["api_key"] == 3 and r["direction"] == 0]
    assert all(r["partition_counts"] is None and r["client_id"] == "c" for r in requests)
    hb = rows[-1]
    assert (hb["api_key"], hb["error_code"], hb["partition_counts"]) == (12, 0, None)


def _group_exchanges(rnd):
    """Request/response frame pairs of every group api at every version, with fields drawn at random:
    ids ASCII or not, empty or null where allowed, consumer and other protocol types, Subscription and
    Assignment payloads sound, empty or junk, LeaveGroup with and without its member list, FindCoordinator
    by group or by transaction id; ConsumerGroupHeartbeat with each nullable field null (unchanged) or set,
    partition lists past one varint byte and tagged fields, and ConsumerGroupDescribe of several groups."""
    c = kwire.codec

    def text():
        return rnd.choice(["", "g", "m-1", "caf\u00e9", "x" * 200, "\u4e2d\u6587"])

    def maybe(value):
        return None if rnd.random() < 0.3 else value

    def subscription():
        return rnd.choice([c.Subscription(topics=[text(), "t"], owned_partitions=[
            c.SubscriptionTopicPartition(topic="t", partitions=[0, 5])], generation_id=3).encode(rnd.randrange(4)),
            b"", b"\x00\x03junk", c.Subscription(topics=[]).encode(0)])

    def assignment():
        return rnd.choice([c.Assignment(assigned_partitions=[c.AssignmentTopicPartition(topic=text(), partitions=[1, 2]),
                                                             c.AssignmentTopicPartition(topic="t", partitions=[])]
                                        ).encode(rnd.randrange(4)), b"", b"\x00\x01\x00\x00\x00\x09"])

    def protocol_type():
        return rnd.choice(["consumer", "consumer", "connect", ""])

    def topic_partitions(cls):
        return [cls(topic_id=rnd.randbytes(16), partitions=rnd.sample(range(300), rnd.choice([0, 1, 3, 130])))
                for _ in range(rnd.randrange(3))]

    def tagged(msg):
        if rnd.random() < 0.1:
            msg.unknown_tagged_fields = {rnd.randrange(5): b"ab"}
        return msg

    def consumer_messages(key, v):
        if key == CONSUMER_GROUP_HEARTBEAT:
            req = c.ConsumerGroupHeartbeatRequest(
                group_id=text(), member_id=text(), member_epoch=rnd.choice([-2, -1, 0, 1, 7]),
                instance_id=maybe(text()), rack_id=maybe(text()), rebalance_timeout_ms=rnd.choice([-1, 300000]),
                subscribed_topic_names=maybe([text() for _ in range(rnd.randrange(3))]),
                subscribed_topic_regex=maybe(text()) if v >= 1 else None, server_assignor=maybe(text()),
                topic_partitions=maybe(topic_partitions(c.ConsumerGroupHeartbeatRequestTopicPartitions)))
            resp = c.ConsumerGroupHeartbeatResponse(
                error_code=rnd.choice([0, 0, 25, 110]), error_message=maybe(text()), member_id=maybe(text()),
                member_epoch=rnd.choice([-1, 1, 8]), heartbeat_interval_ms=rnd.choice([0, 5000]),
                assignment=maybe(c.ConsumerGroupHeartbeatAssignment(
                    topic_partitions=topic_partitions(c.ConsumerGroupHeartbeatResponseTopicPartitions))))
            return tagged(req), tagged(resp)

        def assignment():
            return c.ConsumerGroupDescribeAssignment(topic_partitions=[c.ConsumerGroupDescribeTopicPartitions(
                topic_id=rnd.randbytes(16), topic_name=text(), partitions=[0, 2]) for _ in range(rnd.randrange(2))])

        req = c.ConsumerGroupDescribeRequest(group_ids=[text() for _ in range(rnd.randrange(3))])
        resp = c.ConsumerGroupDescribeResponse(groups=[c.ConsumerGroupDescribedGroup(
            error_code=rnd.choice([0, 69]), group_id=text(), group_state=rnd.choice(["Stable", "Reconciling"]),
            group_epoch=rnd.randrange(9), assignment_epoch=rnd.randrange(9), assignor_name="uniform",
            members=[c.ConsumerGroupDescribedMember(
                member_id=text(), instance_id=maybe(text()), member_epoch=rnd.randrange(9), client_id=text(),
                client_host="/h", subscribed_topic_names=["t"], assignment=assignment(),
                target_assignment=assignment(), member_type=rnd.choice([-1, 0, 1]) if v >= 1 else -1)
                for _ in range(rnd.randrange(3))]) for _ in range(rnd.randrange(3))])
        return req, resp

    def messages(key, v):
        ptype = protocol_type()
        if key in (CONSUMER_GROUP_HEARTBEAT, CONSUMER_GROUP_DESCRIBE):
            return consumer_messages(key, v)
        if key == 11:
            req = c.JoinGroupRequest(group_id=text(), session_timeout_ms=rnd.randrange(10**6),
                                     rebalance_timeout_ms=rnd.randrange(10**6), member_id=text(),
                                     group_instance_id=maybe(text()), protocol_type=ptype,
                                     protocols=[c.JoinGroupRequestProtocol(name=text(), metadata=subscription())
                                                for _ in range(rnd.randrange(3))])
            resp = c.JoinGroupResponse(error_code=rnd.choice([0, 27]), generation_id=rnd.randrange(99),
                                       protocol_type=maybe(ptype), protocol_name=maybe(text()), leader=text(),
                                       member_id=text(), members=[c.JoinGroupResponseMember(
                                           member_id=text(), group_instance_id=maybe(text()), metadata=subscription())
                                           for _ in range(rnd.randrange(4))])
        elif key == 14:
            req = c.SyncGroupRequest(group_id=text(), generation_id=rnd.randrange(99), member_id=text(),
                                     group_instance_id=maybe(text()), protocol_type=maybe(ptype),
                                     protocol_name=maybe(text()), assignments=[c.SyncGroupRequestAssignment(
                                         member_id=text(), assignment=assignment()) for _ in range(rnd.randrange(4))])
            resp = c.SyncGroupResponse(error_code=rnd.choice([0, 25]), protocol_type=maybe(ptype),
                                       protocol_name=maybe(text()), assignment=assignment())
        elif key == 13:
            req = c.LeaveGroupRequest(group_id=text(), member_id=text() if v < 3 else "", members=[
                c.MemberIdentity(member_id=text(), group_instance_id=maybe(text()))
                for _ in range(rnd.randrange(3) if v >= 3 else 0)])
            resp = c.LeaveGroupResponse(error_code=rnd.choice([0, 25]))
        elif key == 12:
            req = c.HeartbeatRequest(group_id=text(), generation_id=rnd.randrange(99), member_id=text(),
                                     group_instance_id=maybe(text()))
            resp = c.HeartbeatResponse(error_code=rnd.choice([0, 27]))
        else:
            key_type = rnd.choice([0, 0, 1])
            if v >= 4:
                req = c.FindCoordinatorRequest(key_type=key_type, coordinator_keys=[text() for _ in range(rnd.randrange(3))])
                resp = c.FindCoordinatorResponse(coordinators=[c.Coordinator(
                    key=text(), node_id=1, host="h", port=9092, error_code=rnd.choice([0, 15]))
                    for _ in range(rnd.randrange(3))])
            else:
                req = c.FindCoordinatorRequest(key=text(), key_type=key_type if v >= 1 else 0)
                resp = c.FindCoordinatorResponse(error_code=rnd.choice([0, 15]), node_id=1, host="h", port=9092)
        return req, resp

    corr = 0
    for key in (10, 11, 12, 13, 14, CONSUMER_GROUP_HEARTBEAT, CONSUMER_GROUP_DESCRIBE):
        cls = kwire.codec.message_class(key, "request")
        for v in range(cls.min_version, cls.max_version + 1):
            made = 0
            for _ in range(80):
                req, resp = messages(key, v)
                try:
                    frames = (c.encode_request(req, v, correlation_id=corr, client_id=maybe(text())),
                              c.encode_response(resp, v, correlation_id=corr))
                except kwire.errors.KwireError:
                    continue  # a value this version cannot carry: draw again
                corr += 1
                yield frames
                made += 1
                if made == 6:
                    break
            assert made == 6, (key, v)


@pytest.mark.skipif(_impl.NO_EXTENSIONS, reason="compiled decoder not built")
@pytest.mark.parametrize("seed", range(2))
def test_every_group_message_is_read_alike_by_the_fast_paths_and_the_codecs_path(tmp_path, seed):
    # The compiled twin reads these messages' fields straight into columns (nested ones in Arrow's layout)
    # and hands any row it cannot finish to the codec's path: both twins must give the same table, column by
    # column, whatever the batch boundaries, for sound payloads and bad ones, damaged and truncated frames.
    import random

    rnd = random.Random(seed)
    rows, later = [], []
    for i, (request, response) in enumerate(_group_exchanges(rnd)):
        if rnd.random() < 0.1:  # a byte flipped somewhere
            k = rnd.randrange(len(response))
            response = response[:k] + bytes([response[k] ^ (1 << rnd.randrange(8))]) + response[k + 1:]
        conn = rnd.randrange(3)
        rows.append((conn, 0, request, rnd.random() < 0.05))
        (later if rnd.random() < 0.3 else rows).append((conn, 1, response, rnd.random() < 0.05))
    table = read_capture(_write(tmp_path / "c.parquet", rows + later))
    pure = decode_table(table, "python")
    values = pure.to_pylist()
    # The draw reaches what the fast paths must decline or pass on.
    for key in (11, 14):  # bad Subscription or Assignment bytes inside a sound frame
        assert any(r["decode_error"] and r["api_key"] == key and r["group_id"] is not None for r in values), key
    assert any(r["assignments"] == [] for r in values) and any(r["members"] for r in values)
    assert any(r["leaving"] for r in values) and any(r["topics"] for r in values)
    consumer = [r for r in values if r["api_key"] == CONSUMER_GROUP_HEARTBEAT and r["decode_error"] is None]
    assert any(r["topic_partitions"] for r in consumer) and any(r["topic_partitions"] == [] for r in consumer)
    assert any(r["direction"] == 1 and r["heartbeat_interval_ms"] == 5000 for r in consumer)
    assert any(r["subscribed_regex"] is not None for r in consumer)
    assert any(r["described"] for r in values)
    for batch_rows in (65536, 7, 2):
        compiled = decode_table(table, "cython", batch_rows=batch_rows)
        for name in compiled.schema.names:
            assert compiled.column(name).to_pylist() == pure.column(name).to_pylist(), (batch_rows, name)
        assert compiled.equals(pure)
