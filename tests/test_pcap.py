"""import-pcap on packet captures synthesized here with dpkt."""

import socket

import pytest

dpkt = pytest.importorskip("dpkt")
pytest.importorskip("pyarrow")

import kwire  # noqa: E402
from kwire.pipeline._capture import read_capture  # noqa: E402
from kwire.pipeline._decode import decode_capture  # noqa: E402
from kwire.pipeline._pcap import import_pcap  # noqa: E402

CLIENT, BROKER = "10.0.0.1", "10.0.0.2"


def _hb(corr, version=4):
    return kwire.encode_request(kwire.HeartbeatRequest(group_id="g", generation_id=corr, member_id=f"m-{corr}"),
                                version, correlation_id=corr, client_id="c")


def _hb_resp(corr, version=4):
    return kwire.encode_response(kwire.HeartbeatResponse(error_code=corr % 3), version, correlation_id=corr)


class Pcap:
    """Writes TCP segments of made-up connections, in any order we like."""

    def __init__(self, path, linktype=dpkt.pcap.DLT_EN10MB):
        self.fh = open(path, "wb")
        self.w = dpkt.pcap.Writer(self.fh, linktype=linktype)
        self.linktype = linktype
        self.t = 1_700_000_000.0

    def packet(self, src, sport, dst, dport, seq, data=b"", flags=dpkt.tcp.TH_ACK, v6=False):
        tcp = dpkt.tcp.TCP(sport=sport, dport=dport, seq=seq % (1 << 32), ack=1, flags=flags, data=data)
        if v6:
            ip = dpkt.ip6.IP6(src=socket.inet_pton(socket.AF_INET6, src), dst=socket.inet_pton(socket.AF_INET6, dst),
                              nxt=dpkt.ip.IP_PROTO_TCP, hlim=64, data=tcp, plen=len(bytes(tcp)))
            etype, family = dpkt.ethernet.ETH_TYPE_IP6, socket.AF_INET6
        else:
            ip = dpkt.ip.IP(src=socket.inet_aton(src), dst=socket.inet_aton(dst), p=dpkt.ip.IP_PROTO_TCP, data=tcp)
            etype, family = dpkt.ethernet.ETH_TYPE_IP, socket.AF_INET
        if self.linktype == dpkt.pcap.DLT_NULL:
            frame = dpkt.loopback.Loopback(family=family, data=ip)
        else:
            frame = dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=etype, data=ip)
        self.t += 0.001
        self.w.writepkt(bytes(frame), ts=self.t)

    def close(self):
        self.w.close()


class Flow:
    """One TCP connection; ``send`` returns segments without writing them."""

    def __init__(self, pcap, cport, bport=9092, isn_c=1000, isn_b=5000, v6=False):
        self.p, self.cport, self.bport, self.v6 = pcap, cport, bport, v6
        self.ca, self.ba = ("fd00::1", "fd00::2") if v6 else (CLIENT, BROKER)
        self.seq = {0: isn_c + 1, 1: isn_b + 1}
        pcap.packet(self.ca, cport, self.ba, bport, isn_c, flags=dpkt.tcp.TH_SYN, v6=v6)
        pcap.packet(self.ba, bport, self.ca, cport, isn_b, flags=dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK, v6=v6)

    def segments(self, direction, data, sizes):
        out, pos = [], 0
        for n in sizes + [len(data)]:
            if pos >= len(data):
                break
            out.append((direction, self.seq[direction] + pos, data[pos:pos + n]))
            pos += n
        self.seq[direction] += len(data)
        return out

    def write(self, seg, flags=dpkt.tcp.TH_ACK):
        direction, seq, data = seg
        if direction == 0:
            self.p.packet(self.ca, self.cport, self.ba, self.bport, seq, data, flags, v6=self.v6)
        else:
            self.p.packet(self.ba, self.bport, self.ca, self.cport, seq, data, flags, v6=self.v6)

    def fin(self):
        for d in (0, 1):
            self.write((d, self.seq[d], b""), dpkt.tcp.TH_FIN | dpkt.tcp.TH_ACK)


def test_reassembly_with_reordering_retransmissions_and_split_frames(tmp_path):
    path = tmp_path / "k.pcap"
    p = Pcap(path)
    # Sequence numbers near 2**32 so the stream wraps around.
    a = Flow(p, 40001, isn_c=(1 << 32) - 30)
    b = Flow(p, 40002, v6=True)
    reqs = _hb(1) + _hb(2, version=0) + _hb(3)
    segs = a.segments(0, reqs, [5, 17, 3, 40, 11])
    # Out of order, a duplicate, and an overlapping retransmission.
    for s in [segs[0], segs[2], segs[1], segs[1], segs[4], segs[3]]:
        a.write(s)
    d, seq, data = segs[5]
    a.write((d, seq - 4, reqs[-len(data) - 4:]))
    for s in b.segments(0, _hb(7), [9]):
        b.write(s)
    resp = _hb_resp(1) + _hb_resp(2, version=0) + _hb_resp(3)
    for s in reversed(a.segments(1, resp, [7, 7, 7])):
        a.write(s)
    for s in b.segments(1, _hb_resp(7), []):
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
    assert [r["frame"] for r in conn_a if r["direction"] == 0] == [_hb(1), _hb(2, version=0), _hb(3)]
    assert [r["frame"] for r in conn_a if r["direction"] == 1] == [_hb_resp(1), _hb_resp(2, version=0), _hb_resp(3)]
    assert conn_a[0]["broker"] == f"{BROKER}:9092"
    conn_b = [r for r in rows if r["client"] == "fd00::1:40002"]
    assert [r["frame"] for r in conn_b] == [_hb(7), _hb_resp(7)]
    decoded = decode_capture(tmp_path / "c.parquet").to_pylist()
    assert all(r["decode_error"] is None for r in decoded)
    assert sorted((r["correlation_id"], r["error_code"]) for r in decoded if r["direction"] == 1) == \
        [(1, 1), (2, 2), (3, 0), (7, 1)]


def test_unfinished_frames_and_gaps_are_truncated_rows(tmp_path):
    path = tmp_path / "k.pcap"
    p = Pcap(path, linktype=dpkt.pcap.DLT_NULL)
    a = Flow(p, 40001)
    segs = a.segments(0, _hb(1) + _hb(2), [len(_hb(1)) + 6, 4])
    a.write(segs[0])
    a.write(segs[2])  # segs[1] was never captured
    b = Flow(p, 40002)
    b.write(b.segments(0, _hb(5), [10])[0])  # the file ends mid-frame
    p.close()

    stats = import_pcap(path, tmp_path / "c.parquet")
    rows = read_capture(tmp_path / "c.parquet").to_pylist()
    assert [(r["frame"], r["truncated"]) for r in rows if r["conn"] == 1] == [(_hb(1), False), (_hb(2)[:6], True)]
    assert [(r["frame"], r["truncated"]) for r in rows if r["conn"] == 2] == [(_hb(5)[:10], True)]
    assert stats["gap_bytes"] == len(segs[2][2]) and stats["truncated"] == 2


def test_port_reuse_starts_a_new_connection(tmp_path):
    path = tmp_path / "k.pcap"
    p = Pcap(path)
    a = Flow(p, 40001)
    a.write(a.segments(0, _hb(1)[:8], [])[0])  # cut off by a reset
    a.write((0, a.seq[0], b""), dpkt.tcp.TH_RST)
    a2 = Flow(p, 40001, isn_c=9_000_000)
    for s in a2.segments(0, _hb(2), [3]):
        a2.write(s)
    p.close()
    import_pcap(path, tmp_path / "c.parquet", ports=[9092])
    rows = read_capture(tmp_path / "c.parquet").to_pylist()
    assert [(r["conn"], r["frame"], r["truncated"]) for r in rows] == [(1, _hb(1)[:8], True), (2, _hb(2), False)]
