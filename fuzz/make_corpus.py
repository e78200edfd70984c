"""Writes the seed corpus: real frames for every target of every family.

    python fuzz/make_corpus.py [OUT_DIR]      (default: fuzz/corpus)

Seeds are kwire encodings of messages with every field of the version set
to a non-default value, the all-defaults message, the all-null one, the
hand-checked golden frames of tests/test_codec_golden.py, and a few
hand-made inputs for the paths encoders never produce (non-canonical
varints, bool bytes of 2, newer consumer-protocol versions).  Each file is
one selector byte and the decoder's input, as ``differential.check`` reads it.
"""

import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import kwire.codec._codec_py as P  # noqa: E402
from kwire.codec import _schema  # noqa: E402
from kwire.assignors import _userdata as userdata  # noqa: E402

import differential as D  # noqa: E402


def _elem(f, t, version, variant):
    if f.is_struct:
        return _build(f.fields, version, variant)
    if variant == "null" and version in f.nullable and not f.is_array:
        return None
    return {"string": "s-\u00e9", "bytes": b"\x00\x03ab", "records": b"\x00\x03ab", "bool": True, "uuid": bytes(range(16)),
            "float64": 1.5, "uint16": 9}.get(t, 7)


def _value(f, version, variant):
    if variant == "null" and version in f.nullable:
        return None
    if f.is_array:
        return [_elem(f, f.element_type, version, variant) for _ in range(2)]
    return _elem(f, f.type, version, variant)


def _build(fields, version, variant):
    cls = P.struct_class(fields)
    kw = {f.attr: _value(f, version, variant) for f in fields if version in f.versions}
    return cls(**kw)


def messages(msg, version):
    """(variant, message object) of the pure codec at ``version``."""
    cls = getattr(P, msg.class_name)
    out = [("defaults", cls()), ("full", _build(msg.fields, version, "full"))]
    if any(version in f.nullable for f in msg.fields):
        out.append(("null", _build(msg.fields, version, "null")))
    if version in msg.flexible:
        full = _build(msg.fields, version, "full")
        full.unknown_tagged_fields = {90: b"\x01", 91: b""}
        out.append(("unknown-tags", full))
    return out


def record_seeds():
    """Seeds of the ``records`` family: record batches of every codec and flag, encoded by kwire's pure twin,
    plus the shapes its encoder never writes (raw snappy as librdkafka writes it, a non-canonical varint)."""
    import cramjam

    from kwire.codec import _records_py as R

    def recs(n):
        return [R.Record(None if i == 1 else b"k%d" % i, None if i == 2 else b"v" * (i * 7),
                         [("h", b"x"), ("n", None)] if i % 2 else (), offset=10 + i, timestamp=1000 + i)
                for i in range(n)]

    blobs = []
    for codec in range(5):
        blobs.append((f"codec{codec}", R.RecordBatch(recs(3), base_offset=10, compression=codec).encode()))
    blobs += [
        ("empty", R.RecordBatch([], base_offset=4).encode()),
        ("flags", R.RecordBatch(recs(2), base_offset=10, timestamp_type=1, is_transactional=True, producer_id=7,
                                producer_epoch=1, base_sequence=3, delete_horizon_ms=99).encode()),
        ("control", R.RecordBatch([R.Record(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00", offset=5)],
                                  base_offset=5, is_control=True, is_transactional=True).encode()),
        ("two", R.RecordBatch(recs(2), base_offset=10).encode() + R.RecordBatch(recs(1), base_offset=12).encode()),
    ]
    plain = R.RecordBatch(recs(3), base_offset=10).encode()
    raw = cramjam.snappy.compress_raw(plain[61:])
    blobs.append(("snappy-raw", _rebatch(plain, bytes(raw), 2, R.crc32c)))
    # A record whose length varint is 0x81 0x00-style (two bytes for a small value): Kafka's readers accept it.
    one = R.RecordBatch([R.Record(b"k", b"v", offset=0)]).encode()
    blobs.append(("long-varint", _rebatch(one, bytes([one[61] | 0x80, 0]) + one[62:], 0, R.crc32c)))
    out = []
    for name, blob in blobs:
        for sel, target in enumerate(D.TARGETS["records"]):
            out.append(("records", f"{target[0]}-{name}", bytes([sel]) + blob))
    return out


def _rebatch(batch, records, codec, crc32c):
    """``batch`` (one encoded batch) with its records replaced by ``records`` and its codec by ``codec``."""
    head = bytearray(batch[:61])
    struct.pack_into(">i", head, 8, 49 + len(records))
    struct.pack_into(">h", head, 21, (struct.unpack_from(">h", head, 21)[0] & ~7) | codec)
    body = bytes(head[21:]) + records
    struct.pack_into(">I", head, 17, crc32c(body))
    return bytes(head) + records


def seeds():
    """(family, name, bytes) of every seed."""
    out = record_seeds()
    for family in ("api", "headers", "cluster"):
        for i, (msg, version) in enumerate(D.TARGETS[family]):
            for variant, m in messages(msg, version):
                out.append((family, f"{D.target_name(family, i)}-{variant}", bytes([i]) + m.encode(version)))
    for i, (msg, version) in enumerate(D.TARGETS["consumer"]):
        name = D.target_name("consumer", i)
        if isinstance(msg, str):
            continue
        if version is None:
            for v in range(msg.valid.lo, msg.valid.hi + 1):
                for variant, m in messages(msg, v):
                    out.append(("consumer", f"{name}-v{v}-{variant}", bytes([i]) + m.encode(v)))
            # A newer writer's bytes: the newest layout we know, then more.
            newest = _build(msg.fields, msg.valid.hi, "full").encode(msg.valid.hi)
            out.append(("consumer", f"{name}-newer", bytes([i]) + struct.pack(">h", msg.valid.hi + 1)
                        + newest[2:] + b"\x00\x00\x00\x05extra"))
        else:
            for variant, m in messages(msg, version):
                out.append(("consumer", f"{name}-{variant}", bytes([i]) + m.encode(version)))
    s = D.selector("consumer", "userdata-sticky")
    c = D.selector("consumer", "userdata-cooperative")
    out += [
        ("consumer", "userdata-sticky-v1", bytes([s]) + userdata.encode_sticky_userdata([("t", 0), ("t", 1), ("u", 3)], 4)),
        ("consumer", "userdata-sticky-v0", bytes([s]) + userdata.encode_sticky_userdata([("t", 2)])),
        ("consumer", "userdata-cooperative", bytes([c]) + userdata.encode_cooperative_userdata(9)),
    ]
    # Frames: every request at every version, every response target, streams.
    req = D.selector("frames", "request")
    for msg in _schema.API_MESSAGES:
        for v in range(msg.valid.lo, msg.valid.hi + 1):
            m = _build(msg.fields, v, "full")
            if msg.kind == "request":
                frame = _request_frame(m, msg, v)
                out.append(("frames", f"request-{msg.class_name}-v{v}", bytes([req]) + frame))
            else:
                sel = D.selector("frames", f"response-k{msg.api_key}-v{v}")
                out.append(("frames", f"response-k{msg.api_key}-v{v}", bytes([sel]) + _response_frame(m, msg, v)))
    import tests.test_codec_golden as golden  # the hand-laid frames
    for name in dir(golden):
        if name.endswith("_FRAME") and name.startswith(("FIND", "JOIN", "SYNC", "HEART", "LEAVE", "API")):
            out.append(("frames", f"golden-{name.lower()}", bytes([req]) + getattr(golden, name)))
    two = out[-1][2][1:] + out[-2][2][1:]
    for kind in ("split", "splitter"):
        sel = D.selector("frames", kind)
        out.append(("frames", f"{kind}-two-and-a-half", bytes([sel, 0xFF]) + two + two[:7]))
        out.append(("frames", f"{kind}-oversized", bytes([sel, 4]) + two))
        out.append(("frames", f"{kind}-negative", bytes([sel, 0xFF]) + two + b"\xff\xff\xff\xfe"))
    # Encodings no writer produces, so the explanations are seeded too.
    hb = D.selector("api", "HeartbeatRequest-v4")
    body = P.HeartbeatRequest(group_id="g", member_id="m").encode(4)
    out.append(("api", "HeartbeatRequest-v4-long-varint", bytes([hb]) + b"\x82\x00" + body[1:]))
    lg = D.selector("api", "LeaveGroupResponse-v5")
    lgr = P.LeaveGroupResponse(members=[P.MemberResponse(member_id="m")]).encode(5)
    out.append(("api", "LeaveGroupResponse-v5-long-count", bytes([lg]) + lgr[:6] + b"\x82\x80\x00" + lgr[7:]))
    av = D.selector("api", "ApiVersionsResponse-v3")
    avr = P.ApiVersionsResponse(zk_migration_ready=True).encode(3)
    out.append(("api", "ApiVersionsResponse-v3-bool-2", bytes([av]) + avr[:-1] + b"\x02"))
    out.append(("api", "ApiVersionsResponse-v3-default-tag", bytes([av]) + avr[:-4] + b"\x01\x03\x01\x00"))
    out += captured_seeds()
    out += consumer_protocol_batch_seeds()
    return out


def consumer_protocol_batch_seeds():
    """Batch seeds of the consumer protocol (KIP-848), which the sample capture predates: a member's
    ConsumerGroupHeartbeat exchanges from its join to its leave at both versions, ConsumerGroupDescribe at both,
    and the Metadata v12 response that names the topic ids."""
    import batch_oracle

    hb_req, hb_resp = _schema.CONSUMER_GROUP_HEARTBEAT_REQUEST, _schema.CONSUMER_GROUP_HEARTBEAT_RESPONSE
    tid = bytes(range(1, 17))

    def owned(*parts):
        return [P.ConsumerGroupHeartbeatRequestTopicPartitions(topic_id=tid, partitions=list(parts))]

    def assignment(*parts):
        return P.ConsumerGroupHeartbeatAssignment(topic_partitions=[
            P.ConsumerGroupHeartbeatResponseTopicPartitions(topic_id=tid, partitions=list(parts))])

    out = []
    for v in (0, 1):
        exchanges = [
            (P.ConsumerGroupHeartbeatRequest(group_id="g", member_id="", member_epoch=0, rebalance_timeout_ms=300000,
                                             subscribed_topic_names=["t"], subscribed_topic_regex="t.*" if v else None,
                                             server_assignor="uniform", topic_partitions=[]),
             P.ConsumerGroupHeartbeatResponse(member_id="m-1", member_epoch=1, heartbeat_interval_ms=5000,
                                              assignment=assignment(0, 1, 2))),
            (P.ConsumerGroupHeartbeatRequest(group_id="g", member_id="m-1", member_epoch=1, topic_partitions=owned(0, 1, 2)),
             P.ConsumerGroupHeartbeatResponse(member_id="m-1", member_epoch=1, heartbeat_interval_ms=5000)),
            (P.ConsumerGroupHeartbeatRequest(group_id="g", member_id="m-1", member_epoch=1, instance_id="i-1"),
             P.ConsumerGroupHeartbeatResponse(member_id="m-1", member_epoch=2, heartbeat_interval_ms=5000,
                                              assignment=assignment(0))),
            (P.ConsumerGroupHeartbeatRequest(group_id="g", member_id="m-1", member_epoch=2),
             P.ConsumerGroupHeartbeatResponse(error_code=25, error_message="fenced", member_epoch=-1)),
            (P.ConsumerGroupHeartbeatRequest(group_id="g", member_id="m-1", member_epoch=-1),
             P.ConsumerGroupHeartbeatResponse(member_id="m-1", member_epoch=-1)),
        ]
        records = []
        for request, response in exchanges:
            records += [(0, 1, False, _request_frame(request, hb_req, v)), (1, 1, False, _response_frame(response, hb_resp, v))]
        out.append(("batch", f"consumer-heartbeats-v{v}", bytes([0]) + batch_oracle.encode(records, len(records) // 2)))
        group = P.ConsumerGroupDescribedGroup(group_id="g", group_state="Stable", group_epoch=2, assignment_epoch=2,
                                              assignor_name="uniform", members=[P.ConsumerGroupDescribedMember(
                                                  member_id="m-1", instance_id="i-1", member_epoch=2, client_id="c",
                                                  client_host="/h", subscribed_topic_names=["t"],
                                                  assignment=P.ConsumerGroupDescribeAssignment(topic_partitions=[
                                                      P.ConsumerGroupDescribeTopicPartitions(
                                                          topic_id=tid, topic_name="t", partitions=[0])]),
                                                  target_assignment=P.ConsumerGroupDescribeAssignment(
                                                      topic_partitions=[]))])
        describe = [(0, 2, False, _request_frame(P.ConsumerGroupDescribeRequest(group_ids=["g", "h"]),
                                                 _schema.CONSUMER_GROUP_DESCRIBE_REQUEST, v)),
                    (1, 2, False, _response_frame(P.ConsumerGroupDescribeResponse(groups=[group, P.ConsumerGroupDescribedGroup(
                        group_id="h", error_code=69, group_state="Dead")]), _schema.CONSUMER_GROUP_DESCRIBE_RESPONSE, v))]
        out.append(("batch", f"consumer-describe-v{v}", bytes([0]) + batch_oracle.encode(describe)))
    metadata = P.MetadataResponse(topics=[P.MetadataResponseTopic(name="t", topic_id=tid, partitions=[
        P.MetadataResponsePartition(partition_index=p) for p in range(3)])])
    out.append(("batch", "consumer-metadata-v12", bytes([0]) + batch_oracle.encode([
        (0, 3, False, _request_frame(P.MetadataRequest(topics=None), _schema.METADATA_REQUEST, 12)),
        (1, 3, False, _response_frame(metadata, _schema.METADATA_RESPONSE, 12))])))
    return out


# Seeds from examples/sample/capture.parquet: frames real clients
# (librdkafka, kafka-python) exchanged with a real coordinator.
SAMPLE = os.path.join(os.path.dirname(HERE), "examples", "sample", "capture.parquet")
MAX_SEED = 4096  # the campaigns' -max_len


def captured_seeds():
    try:
        import pyarrow.parquet as pq
    except ImportError:
        return []
    import batch_oracle
    rows = pq.read_table(SAMPLE, columns=["conn", "direction", "frame", "truncated"]).to_pylist()
    out, seen, asked, per_kind = [], set(), {}, {}
    req = D.selector("frames", "request")
    by_conn = {}
    for r in rows:
        frame = r["frame"]
        by_conn.setdefault(r["conn"], []).append(r)
        if len(frame) < 12:
            continue
        if r["direction"] == 0:
            key, version, corr = struct.unpack_from(">hhi", frame, 4)
            asked[(r["conn"], corr)] = (key, version)
            seed = bytes([req]) + frame
        else:
            (corr,) = struct.unpack_from(">i", frame, 4)
            kv = asked.pop((r["conn"], corr), None)
            if kv is None or kv[0] not in batch_oracle.batch_py.GROUP_APIS:
                continue
            seed = bytes([D.selector("frames", f"response-k{kv[0]}-v{kv[1]}")]) + frame
        # A few of each (direction, api, version): the rest are heartbeats
        # that differ only in their correlation id.
        kind = (r["direction"], frame[4:8] if r["direction"] == 0 else seed[0])
        per_kind[kind] = per_kind.get(kind, 0) + 1
        if per_kind[kind] <= 4 and len(seed) <= MAX_SEED and seed not in seen:
            seen.add(seed)
            out.append(("frames", f"captured-{len(seen):03d}", seed))
    # Batch seeds: each connection's frames in runs that fit a seed, split
    # into two batches in the middle so pairing crosses a batch boundary.
    n = 0
    for conn in sorted(by_conn):
        run = []
        for r in by_conn[conn] + [None]:
            rec = None if r is None else (r["direction"], conn % 4, r["truncated"], r["frame"])
            if run and (rec is None or len(batch_oracle.encode(run + [rec])) > MAX_SEED - 1):
                n += 1
                out.append(("batch", f"captured-{n:03d}", bytes([0]) + batch_oracle.encode(run, len(run) // 2)))
                run = []
            if rec is not None and len(batch_oracle.encode([rec])) <= MAX_SEED - 1:
                run.append(rec)
    return out


def _request_frame(m, msg, v):
    k = P
    header = k.RequestHeader(request_api_key=msg.api_key, request_api_version=v, correlation_id=5,
                             client_id="cli").encode(_schema.request_header_version(msg.api_key, v))
    body = m.encode(v)
    return struct.pack(">i", len(header) + len(body)) + header + body


def _response_frame(m, msg, v):
    header = P.ResponseHeader(correlation_id=5).encode(_schema.response_header_version(msg.api_key, v))
    body = m.encode(v)
    return struct.pack(">i", len(header) + len(body)) + header + body


def main(out_dir):
    written = 0
    for family, name, data in seeds():
        d = os.path.join(out_dir, family)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, name), "wb") as fh:
            fh.write(data)
        written += 1
    print(f"{written} seeds in {out_dir}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "corpus"))
