"""Packet captures made up for the tests with dpkt: TCP connections
between a client and a broker, segments written in any order, and the
Heartbeat frames the tests carry in them."""

import socket

import dpkt

import kwire

CLIENT, BROKER = "10.0.0.1", "10.0.0.2"


def hb_request(corr, version=4):
    """A Heartbeat request frame, its generation and member named after ``corr``."""
    return kwire.encode_request(kwire.HeartbeatRequest(group_id="g", generation_id=corr, member_id=f"m-{corr}"),
                                version, correlation_id=corr, client_id="c")


def hb_response(corr, version=4):
    """A Heartbeat response frame whose error code is ``corr % 3``."""
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
