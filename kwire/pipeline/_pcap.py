"""``kwire import-pcap``: Kafka frames out of a packet capture (pcap or pcapng).

TCP is reassembled per flow with dpkt: segments are placed by sequence
number (32-bit wrap-around handled), retransmissions and overlaps are
trimmed to the bytes not yet delivered, out-of-order segments wait for the
gap before them to fill, and the in-order byte stream of each direction
goes through a :class:`kwire.FrameSplitter`, so frames split across
segments come out whole.  A frame is stamped with the time of the packet
that completed it.

What cannot be recovered is recorded, not guessed: when a connection ends
(FIN, RST, a new SYN on the same ports, or the end of the file) with a
frame unfinished -- or with a gap no later segment filled -- the bytes of
that frame received in order become a row with ``truncated = true``, and
bytes beyond a gap are counted in ``gap_bytes``.  A stream whose SYN is not
in the file is assumed to start at a frame boundary.
"""

from __future__ import annotations

import socket

import dpkt

from kwire.errors import CaptureFormatError, DecodeError
from kwire.codec import FrameSplitter
from kwire.pipeline._capture import BROKER_TO_CLIENT, CLIENT_TO_BROKER, CaptureWriter

DEFAULT_PORTS = (9092,)
_MOD = 1 << 32


class HalfStream:
    """One direction of one TCP connection, reassembled."""

    def __init__(self):
        self.base = None  # sequence number of stream byte 0
        self.next = 0  # stream offset of the next byte to deliver
        self.pending = {}  # stream offset -> (bytes, ts)
        self.splitter = FrameSplitter()
        self.raw = False
        self.delivered = 0

    def offset(self, seq):
        # Unwrap the 32-bit sequence number to the stream offset nearest the
        # next expected byte.
        diff = (seq - self.base - self.next) % _MOD
        if diff >= _MOD // 2:
            diff -= _MOD
        return self.next + diff

    def add(self, seq, data, ts, emit):
        if self.base is None:
            self.base = seq
        off = self.offset(seq)
        end = off + len(data)
        if end <= self.next:
            return  # a retransmission of delivered bytes
        if off < self.next:
            data, off = data[self.next - off:], self.next
        if off > self.next:
            held = self.pending.get(off)
            if held is None or len(held[0]) < len(data):
                self.pending[off] = (data, ts)
            return
        self._deliver(data, ts, emit)
        while self.pending:
            ready = [o for o in self.pending if o <= self.next]
            if not ready:
                break
            for o in sorted(ready):
                chunk, cts = self.pending.pop(o)
                if o + len(chunk) > self.next:
                    self._deliver(chunk[self.next - o:], max(ts, cts), emit)

    def _deliver(self, data, ts, emit):
        self.next += len(data)
        self.delivered += len(data)
        if self.raw:
            emit(ts, data, True)
            return
        try:
            frames = self.splitter.feed(data)
        except DecodeError as exc:
            frames = exc.frames
            self.raw = True
        for f in frames:
            emit(ts, f, False)
        if self.raw:
            rest = self.splitter.pending_bytes()
            if rest:
                emit(ts, rest, True)

    def close(self, ts, emit):
        """End of the stream: returns the bytes lost beyond gaps."""
        if not self.raw and self.splitter.pending:
            emit(ts, self.splitter.pending_bytes(), True)
        lost = sum(len(d) for d, _ in self.pending.values())
        self.pending.clear()
        return lost


class Connection:
    def __init__(self, conn_id, client, broker):
        self.id = conn_id
        self.client = client
        self.broker = broker
        self.halves = {CLIENT_TO_BROKER: HalfStream(), BROKER_TO_CLIENT: HalfStream()}
        self.seen_data = False
        self.closed = set()


def _ip_packet(linktype, buf):
    """The IPv4/IPv6 packet inside a link-layer frame, or None."""
    try:
        if linktype == dpkt.pcap.DLT_EN10MB:
            pkt = dpkt.ethernet.Ethernet(buf).data
        elif linktype in (dpkt.pcap.DLT_NULL, dpkt.pcap.DLT_LOOP):
            pkt = dpkt.loopback.Loopback(buf).data
        elif linktype == dpkt.pcap.DLT_LINUX_SLL:
            pkt = dpkt.sll.SLL(buf).data
        elif linktype in (dpkt.pcap.DLT_RAW, 12, 14, 101):
            pkt = dpkt.ip6.IP6(buf) if buf and buf[0] >> 4 == 6 else dpkt.ip.IP(buf)
        else:
            raise CaptureFormatError(f"unsupported pcap link type {linktype}")
    except (dpkt.UnpackError, IndexError):
        return None
    return pkt if isinstance(pkt, (dpkt.ip.IP, dpkt.ip6.IP6)) else None


def _addr(pkt, raw):
    return socket.inet_ntop(socket.AF_INET6 if isinstance(pkt, dpkt.ip6.IP6) else socket.AF_INET, raw)


def _open(fh):
    magic = fh.read(4)
    fh.seek(0)
    if magic == b"\x0a\x0d\x0d\x0a":
        return dpkt.pcapng.Reader(fh)
    return dpkt.pcap.Reader(fh)


def import_pcap(pcap_path, out_path, ports=None):
    """Write the Kafka frames of ``pcap_path`` (traffic to or from ``ports``)
    as a capture at ``out_path``; returns counts."""
    ports = set(ports or DEFAULT_PORTS)
    stats = {"packets": 0, "tcp_packets": 0, "frames": 0, "truncated": 0, "connections": 0, "gap_bytes": 0}
    conns = {}
    next_id = [1]

    with open(pcap_path, "rb") as fh, CaptureWriter(out_path) as writer:
        reader = _open(fh)
        linktype = reader.datalink()

        def emitter(conn, direction):
            def emit(ts, frame, truncated):
                writer.append(int(round(ts * 1_000_000)), conn.id, direction, frame, truncated=truncated,
                              client=conn.client, broker=conn.broker)
                stats["frames"] += 1
                stats["truncated"] += bool(truncated)
            return emit

        def finish(key, conn, ts):
            for direction, half in conn.halves.items():
                stats["gap_bytes"] += half.close(ts, emitter(conn, direction))
            del conns[key]

        ts = 0.0
        for ts, buf in reader:
            stats["packets"] += 1
            ip = _ip_packet(linktype, buf)
            if ip is None or not isinstance(ip.data, dpkt.tcp.TCP):
                continue
            tcp = ip.data
            stats["tcp_packets"] += 1
            if tcp.dport in ports:
                direction = CLIENT_TO_BROKER
                client, broker = (_addr(ip, ip.src), tcp.sport), (_addr(ip, ip.dst), tcp.dport)
            elif tcp.sport in ports:
                direction = BROKER_TO_CLIENT
                client, broker = (_addr(ip, ip.dst), tcp.dport), (_addr(ip, ip.src), tcp.sport)
            else:
                continue
            key = (client, broker)
            conn = conns.get(key)
            syn = bool(tcp.flags & dpkt.tcp.TH_SYN)
            if conn is not None and syn and conn.seen_data:
                finish(key, conn, ts)  # the ports were reused by a new connection
                conn = None
            if conn is None:
                conn = Connection(next_id[0], f"{client[0]}:{client[1]}", f"{broker[0]}:{broker[1]}")
                next_id[0] += 1
                stats["connections"] += 1
                conns[key] = conn
            half = conn.halves[direction]
            if syn:
                half.base = (tcp.seq + 1) % _MOD
                half.next = 0
            if tcp.data:
                conn.seen_data = True
                half.add(tcp.seq, bytes(tcp.data), ts, emitter(conn, direction))
            if tcp.flags & dpkt.tcp.TH_RST:
                finish(key, conn, ts)
            elif tcp.flags & dpkt.tcp.TH_FIN:
                conn.closed.add(direction)
                if len(conn.closed) == 2:
                    finish(key, conn, ts)
        for key, conn in list(conns.items()):
            finish(key, conn, ts)
    return stats
