"""import-pcap on packet captures synthesized here with dpkt."""

import pytest

dpkt = pytest.importorskip("dpkt")
pytest.importorskip("pyarrow")

from kwire.pipeline._capture import read_capture  # noqa: E402
from kwire.pipeline._decode import decode_capture  # noqa: E402
from kwire.pipeline._pcap import import_pcap  # noqa: E402

from tests.pcap_writer import BROKER, CLIENT, Flow, Pcap, hb_request, hb_response  # noqa: E402


def test_reassembly_with_reordering_retransmissions_and_split_frames(tmp_path):
    path = tmp_path / "k.pcap"
    p = Pcap(path)
    # Sequence numbers near 2**32 so the stream wraps around.
    a = Flow(p, 40001, isn_c=(1 << 32) - 30)
    b = Flow(p, 40002, v6=True)
    reqs = hb_request(1) + hb_request(2, version=0) + hb_request(3)
    segs = a.segments(0, reqs, [5, 17, 3, 40, 11])
    # Out of order, a duplicate, and an overlapping retransmission.
    for s in [segs[0], segs[2], segs[1], segs[1], segs[4], segs[3]]:
        a.write(s)
    d, seq, data = segs[5]
    a.write((d, seq - 4, reqs[-len(data) - 4:]))
    for s in b.segments(0, hb_request(7), [9]):
        b.write(s)
    resp = hb_response(1) + hb_response(2, version=0) + hb_response(3)
    for s in reversed(a.segments(1, resp, [7, 7, 7])):
        a.write(s)
    for s in b.segments(1, hb_response(7), []):
        b.write(s)
    # Traffic on another port is not Kafka's.
    other = Flow(p, 40003, bport=5432)
    other.write(other.segments(0, b"\x00\x00\x00\x01x", [])[0])
    a.fin()
    b.fin()
    p.close()

    stats = import_pcap(path, tmp_path / "c.parquet")
    assert stats["connections"] == 2 and stats["truncated"] == 0 and stats["gap_bytes"] == 0
    rows = read_capture(tmp_path / "c.parquet").to_pylist()
    conn_a = [r for r in rows if r["client"] == f"{CLIENT}:40001"]
    assert [r["frame"] for r in conn_a if r["direction"] == 0] == [hb_request(1), hb_request(2, version=0),
                                                                   hb_request(3)]
    assert [r["frame"] for r in conn_a if r["direction"] == 1] == [hb_response(1), hb_response(2, version=0),
                                                                   hb_response(3)]
    assert conn_a[0]["broker"] == f"{BROKER}:9092"
    conn_b = [r for r in rows if r["client"] == "fd00::1:40002"]
    assert [r["frame"] for r in conn_b] == [hb_request(7), hb_response(7)]
    decoded = decode_capture(tmp_path / "c.parquet").to_pylist()
    assert all(r["decode_error"] is None for r in decoded)
    assert sorted((r["correlation_id"], r["error_code"]) for r in decoded if r["direction"] == 1) == \
        [(1, 1), (2, 2), (3, 0), (7, 1)]


def test_unfinished_frames_and_gaps_are_truncated_rows(tmp_path):
    path = tmp_path / "k.pcap"
    p = Pcap(path, linktype=dpkt.pcap.DLT_NULL)
    a = Flow(p, 40001)
    segs = a.segments(0, hb_request(1) + hb_request(2), [len(hb_request(1)) + 6, 4])
    a.write(segs[0])
    a.write(segs[2])  # segs[1] was never captured
    b = Flow(p, 40002)
    b.write(b.segments(0, hb_request(5), [10])[0])  # the file ends mid-frame
    p.close()

    stats = import_pcap(path, tmp_path / "c.parquet")
    rows = read_capture(tmp_path / "c.parquet").to_pylist()
    assert [(r["frame"], r["truncated"]) for r in rows if r["conn"] == 1] == [(hb_request(1), False),
                                                                              (hb_request(2)[:6], True)]
    assert [(r["frame"], r["truncated"]) for r in rows if r["conn"] == 2] == [(hb_request(5)[:10], True)]
    assert stats["gap_bytes"] == len(segs[2][2]) and stats["truncated"] == 2


def test_port_reuse_starts_a_new_connection(tmp_path):
    path = tmp_path / "k.pcap"
    p = Pcap(path)
    a = Flow(p, 40001)
    a.write(a.segments(0, hb_request(1)[:8], [])[0])  # cut off by a reset
    a.write((0, a.seq[0], b""), dpkt.tcp.TH_RST)
    a2 = Flow(p, 40001, isn_c=9_000_000)
    for s in a2.segments(0, hb_request(2), [3]):
        a2.write(s)
    p.close()
    import_pcap(path, tmp_path / "c.parquet", ports=[9092])
    rows = read_capture(tmp_path / "c.parquet").to_pylist()
    assert [(r["conn"], r["frame"], r["truncated"]) for r in rows] == [(1, hb_request(1)[:8], True),
                                                                       (2, hb_request(2), False)]
