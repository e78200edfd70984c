"""The sans-IO group coordinator: one rebalance of a 10,000-member group, joins then syncs to Stable.

Run: ``python benches/bench_group.py [--members N] [--partitions P] [--repeat R]``, and
``python benches/bench_group.py --server [--heartbeats N] [--connections C] [--window W]`` for the mock
cluster on loopback (below).

What is timed (CPU time, ``time.process_time``), per phase, median of ``--repeat`` fresh groups:

* ``member_id``: N JoinGroup v9 with ``member_id=""``, each answered MEMBER_ID_REQUIRED (KIP-394);
* ``join``: N JoinGroup v9 with the handed-out ids, each parked;
* ``complete``: the join timer fires (the initial delay, extended once because members kept arriving):
  N JoinGroup responses, the leader's listing every member, and N session timers;
* ``assign``: the leader's work, outside the coordinator: ``kwire.leader_assignments("range", ...)``
  over P partitions of one topic (decode N subscriptions, assign, encode N assignments);
* ``sync``: N-1 follower SyncGroups (parked) and the leader's with N assignments, answering all N.

The coordinator's figure is member_id + join + complete + sync; the target is <= 200 ms for N=10,000
with range over 100,000 partitions.  Requests are built before timing: the coordinator is handed
decoded requests, so decoding them is the codec's cost, measured in benches/bench_codec.py.  The
``scaling`` line reruns the coordinator phases at N/4 and N/2: per-member cost must stay flat (an
O(n) scan inside a per-request path would show as a cost per member growing with N).

``--server``: ``kwire serve`` runs as its own process (one core: it is one asyncio thread); this process
joins C members to a group, then sends N Heartbeat v4 requests spread over the C connections, keeping W
in flight on each (pipelined, as a client library's I/O thread does), and reads every answer.  Reported:
heartbeats per second of wall time and per second of the server's own CPU time (from /proc); the target
is >= 50,000 per server CPU second.  Every answer is checked: NONE, in request order.
"""

import argparse
import os
import signal
import socket
import statistics
import struct
import subprocess
import sys
import time

import kwire
from kwire.group import GroupCoordinator, GroupState

GROUP = "bench-group"


def one_rebalance(n, partitions, assign=True):
    counter = iter(range(1, 10**9))
    coordinator = GroupCoordinator(initial_rebalance_delay_ms=3000,
                                   member_id_factory=lambda prefix: f"{prefix}-{next(counter):036d}")
    metadata = kwire.Subscription(topics=["events"]).encode(3)
    protocols = [kwire.JoinGroupRequestProtocol(name="range", metadata=metadata)]

    def join(member_id):
        return kwire.JoinGroupRequest(group_id=GROUP, session_timeout_ms=45_000, rebalance_timeout_ms=300_000,
                                      member_id=member_id, protocol_type="consumer", protocols=protocols)

    first = [join("") for _ in range(n)]
    times = {}

    t = time.process_time()
    ids = [coordinator.handle(i, first[i], 9, 0, client_id="consumer")[0].response.member_id for i in range(n)]
    times["member_id"] = time.process_time() - t

    second = [join(member_id) for member_id in ids]
    t = time.process_time()
    for i in range(n):
        coordinator.handle(i, second[i], 9, 1)
    times["join"] = time.process_time() - t

    t = time.process_time()
    replies = []
    while not replies:
        replies = coordinator.tick(coordinator.next_deadline())
    times["complete"] = time.process_time() - t
    assert len(replies) == n
    leader_response = next(r.response for r in replies if r.response.members)
    generation = leader_response.generation_id

    if assign:
        t = time.process_time()
        assignments = kwire.leader_assignments("range", leader_response, {"events": partitions})
        times["assign"] = time.process_time() - t
    else:
        assignments = [kwire.SyncGroupRequestAssignment(member_id=m, assignment=b"") for m in ids]

    def sync(member_id, entries=()):
        return kwire.SyncGroupRequest(group_id=GROUP, generation_id=generation, member_id=member_id,
                                      protocol_type="consumer", protocol_name="range", assignments=list(entries))

    leader = leader_response.leader
    followers = [sync(m) for m in ids if m != leader]
    leader_sync = sync(leader, assignments)
    now = coordinator.next_deadline() - 1
    t = time.process_time()
    answered = 0
    for i, request in enumerate(followers):
        answered += len(coordinator.handle(i, request, 5, now))
    answered += len(coordinator.handle(-1, leader_sync, 5, now))
    times["sync"] = time.process_time() - t
    assert answered == n and coordinator.describe_group(GROUP).state == GroupState.STABLE
    return times


def _cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _read_exactly(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("the server closed the connection")
        buf += chunk
    return bytes(buf)


def _call(sock, request, version, correlation_id):
    sock.sendall(kwire.codec.encode_request(request, version, correlation_id=correlation_id, client_id="bench"))
    (size,) = struct.unpack(">i", _read_exactly(sock, 4))
    frame = struct.pack(">i", size) + _read_exactly(sock, size)
    return kwire.codec.decode_response(frame, request.api_key, version)[1]


def server_heartbeats(heartbeats, connections, window):
    codec = kwire.codec
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.Popen([sys.executable, "-m", "kwire", "serve", "--listen", "127.0.0.1:0", "--topic", "t:1",
                             "--initial-rebalance-delay-ms", "0"], stdout=subprocess.PIPE, text=True, cwd=root,
                            env=dict(os.environ, PYTHONPATH=root))
    try:
        line = proc.stdout.readline()
        port = int(line.split("listening on 127.0.0.1:")[1].split()[0])
        socks = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(connections)]
        for s in socks:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # Each connection is one member; v3 joins need no second round trip (no MEMBER_ID_REQUIRED).
        proto = [codec.JoinGroupRequestProtocol(name="range", metadata=b"")]
        members = []
        for i, s in enumerate(socks):
            join = _call(s, codec.JoinGroupRequest(group_id=f"bench-{i}", session_timeout_ms=30000,
                                                   rebalance_timeout_ms=30000, member_id="",
                                                   protocol_type="consumer", protocols=proto), 3, 1)
            assert join.error_code == 0, join
            sync = _call(s, codec.SyncGroupRequest(group_id=f"bench-{i}", generation_id=join.generation_id,
                                                   member_id=join.member_id,
                                                   assignments=[codec.SyncGroupRequestAssignment(
                                                       member_id=join.member_id, assignment=b"")]), 3, 2)
            assert sync.error_code == 0, sync
            members.append((f"bench-{i}", join.generation_id, join.member_id))
        per_conn = heartbeats // connections
        frames = []
        for group, gen, member in members:
            hb = codec.HeartbeatRequest(group_id=group, generation_id=gen, member_id=member)
            frames.append([codec.encode_request(hb, 4, correlation_id=c, client_id="bench") for c in range(per_conn)])
        answer_size = len(codec.encode_response(codec.HeartbeatResponse(), 4, correlation_id=0))
        cpu0, wall0 = _cpu_seconds(proc.pid), time.perf_counter()
        sent = [0] * connections
        received = [0] * connections
        for i, s in enumerate(socks):
            sent[i] = min(window, per_conn)
            s.sendall(b"".join(frames[i][:sent[i]]))
        pending = {s.fileno(): i for i, s in enumerate(socks)}
        import selectors
        sel = selectors.DefaultSelector()
        for s in socks:
            sel.register(s, selectors.EVENT_READ)
        tails = [b""] * connections
        while pending:
            for key, _ in sel.select(30):
                i = pending.get(key.fd)
                if i is None:
                    continue
                data = tails[i] + key.fileobj.recv(1 << 20)
                if len(data) == len(tails[i]):
                    raise ConnectionError("the server closed a connection")
                n = len(data) // answer_size
                for k in range(n):
                    frame = data[k * answer_size:(k + 1) * answer_size]
                    header, response = codec.decode_response(frame, 12, 4)
                    if response.error_code or header.correlation_id != received[i] + k:
                        raise AssertionError(f"heartbeat {received[i] + k}: {response}, {header}")
                tails[i] = data[n * answer_size:]
                received[i] += n
                more = min(per_conn, received[i] + window) - sent[i]
                if more > 0:
                    key.fileobj.sendall(b"".join(frames[i][sent[i]:sent[i] + more]))
                    sent[i] += more
                if received[i] == per_conn:
                    del pending[key.fd]
                    sel.unregister(key.fileobj)
        wall, cpu = time.perf_counter() - wall0, _cpu_seconds(proc.pid) - cpu0
        total = per_conn * connections
        print(f"kwire serve ({kwire.IMPLEMENTATION} codec), {total} heartbeats over {connections} connections, "
              f"{window} in flight each")
        print(f"  wall {wall:.2f} s: {total / wall:,.0f} heartbeats/s")
        print(f"  server CPU {cpu:.2f} s: {total / cpu:,.0f} heartbeats per CPU second (target >= 50,000)")
        for s in socks:
            s.close()
        return 0 if total / cpu >= 50_000 else 1
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--members", type=int, default=10_000)
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--server", action="store_true", help="benchmark kwire serve on loopback instead")
    parser.add_argument("--heartbeats", type=int, default=200_000)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--window", type=int, default=256)
    args = parser.parse_args(argv)
    if args.server:
        return server_heartbeats(args.heartbeats, args.connections, args.window)

    runs = [one_rebalance(args.members, args.partitions) for _ in range(args.repeat)]
    phases = list(runs[0])
    median = {p: statistics.median(r[p] for r in runs) * 1000 for p in phases}
    coordinator = statistics.median(
        sum(v for k, v in r.items() if k != "assign") for r in runs) * 1000
    total = statistics.median(sum(r.values()) for r in runs) * 1000
    print(f"kwire {kwire.IMPLEMENTATION}, {args.members} members, range over {args.partitions} partitions, "
          f"median of {args.repeat}, CPU ms")
    for p in phases:
        print(f"  {p:<10} {median[p]:8.1f}")
    print(f"  coordinator {coordinator:7.1f}   (target <= 200)")
    print(f"  assignor    {median['assign']:7.1f}")
    print(f"  total       {total:7.1f}")
    per_member = []
    for n in (args.members // 4, args.members // 2, args.members):
        r = [one_rebalance(n, args.partitions, assign=False) for _ in range(3)]
        per_member.append(statistics.median(sum(x.values()) for x in r) * 1e6 / n)
    print("  scaling     " + ", ".join(f"N={n}: {us:.2f} us/member" for n, us in
                                        zip((args.members // 4, args.members // 2, args.members), per_member)))
    return 0 if coordinator <= 200 else 1


if __name__ == "__main__":
    sys.exit(main())
