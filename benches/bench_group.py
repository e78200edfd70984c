"""The sans-IO group coordinator: one rebalance of a 10,000-member group, joins then syncs to Stable.

Run: ``python benches/bench_group.py [--members N] [--partitions P] [--repeat R]``, and
``python benches/bench_group.py --server [--heartbeats N] [--connections C] [--window W] [--protocol P]`` for
the mock cluster on loopback (below).

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
is >= 50,000 per server CPU second.  Every answer is checked: NONE, in request order.  ``--window 1`` is
how clients really send heartbeats (one in flight per connection); the server then pays a read and a write
per request.

``--protocol consumer`` measures KIP-848's ConsumerGroupHeartbeat v1 instead: C members join one group at epoch 0
over a topic with C partitions and heartbeat (acknowledging what they were given) until each holds its partition
at the group's epoch; then the N requests are steady-state delta heartbeats (group id, member id, epoch, every
other field null), as a settled member sends them.  ``--protocol both`` runs the classic figure and then this one
against the same server, so the two are measured under the same load.  The server runs with the consumer
session timeout raised (``--config``) so that no member times out during the run.
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


# The consumer group's timers raised so that no member's session ends during the run (Kafka's minimum session
# timeout is 45 s, and the bounds move with the value).
_CONSUMER_CONFIG = ("group.consumer.session.timeout.ms=600000", "group.consumer.max.session.timeout.ms=600000",
                    "group.consumer.heartbeat.interval.ms=5000")
_CONSUMER_GROUP = "bench-848"
_CONSUMER_VERSION = 1


def _start_server(root, partitions):
    config = [arg for c in _CONSUMER_CONFIG for arg in ("--config", c)]
    proc = subprocess.Popen([sys.executable, "-m", "kwire", "serve", "--listen", "127.0.0.1:0", "--topic",
                             f"t:{partitions}", "--initial-rebalance-delay-ms", "0", *config],
                            stdout=subprocess.PIPE, text=True, cwd=root, env=dict(os.environ, PYTHONPATH=root))
    line = proc.stdout.readline()
    return proc, int(line.split("listening on 127.0.0.1:")[1].split()[0])


def _classic_members(socks):
    """One classic member per connection, each in its own group (v3 joins need no second round trip): the
    Heartbeat v4 each sends."""
    codec = kwire.codec
    proto = [codec.JoinGroupRequestProtocol(name="range", metadata=b"")]
    beats = []
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
        beats.append(codec.HeartbeatRequest(group_id=f"bench-{i}", generation_id=join.generation_id,
                                            member_id=join.member_id))
    return beats, 4


def _consumer_members(socks, timeout_s=60):
    """One consumer-protocol member per connection, all in one group over a topic with a partition each: join
    at epoch 0 (ConsumerGroupHeartbeat v1, the member id made here), then heartbeat, acknowledging what each
    was given, until every member holds its partition at the group's epoch.  Returns each member's steady
    delta heartbeat: group id, member id, epoch, everything else null."""
    codec = kwire.codec
    ids = [f"bench-member-{i:010d}" for i in range(len(socks))]
    epoch = [0] * len(socks)
    owned = [frozenset()] * len(socks)
    acked = [None] * len(socks)
    for i, s in enumerate(socks):
        r = _call(s, codec.ConsumerGroupHeartbeatRequest(group_id=_CONSUMER_GROUP, member_id=ids[i], member_epoch=0,
                                                         rebalance_timeout_ms=30000, subscribed_topic_names=["t"],
                                                         topic_partitions=[]), _CONSUMER_VERSION, 1)
        assert r.error_code == 0, r
        epoch[i] = r.member_epoch
        if r.assignment is not None:
            owned[i] = frozenset((tp.topic_id, p) for tp in r.assignment.topic_partitions for p in tp.partitions)
    end = time.monotonic() + timeout_s
    while not (all(len(o) == 1 for o in owned) and acked == owned and len(set(epoch)) == 1):
        if time.monotonic() > end:
            raise TimeoutError("the consumer group did not settle")
        for i, s in enumerate(socks):
            ack = None
            if acked[i] != owned[i]:
                by_topic = {}
                for t, p in owned[i]:
                    by_topic.setdefault(t, []).append(p)
                ack = [codec.ConsumerGroupHeartbeatRequestTopicPartitions(topic_id=t, partitions=sorted(ps))
                       for t, ps in by_topic.items()]
            r = _call(s, codec.ConsumerGroupHeartbeatRequest(group_id=_CONSUMER_GROUP, member_id=ids[i],
                                                             member_epoch=epoch[i], topic_partitions=ack),
                      _CONSUMER_VERSION, 2)
            assert r.error_code == 0, r
            if ack is not None:
                acked[i] = owned[i]
            epoch[i] = r.member_epoch
            if r.assignment is not None:
                owned[i] = frozenset((tp.topic_id, p) for tp in r.assignment.topic_partitions for p in tp.partitions)
        time.sleep(0.01)
    beats = [codec.ConsumerGroupHeartbeatRequest(group_id=_CONSUMER_GROUP, member_id=ids[i], member_epoch=epoch[i])
             for i in range(len(socks))]
    return beats, _CONSUMER_VERSION


def _pump(proc, socks, beats, version, per_conn, window):
    """Send ``per_conn`` copies of each connection's request, ``window`` in flight on each; every answer must
    be NONE and come in request order.  Returns (wall seconds, server CPU seconds)."""
    import selectors

    codec = kwire.codec
    api_key = beats[0].api_key
    frames = [[codec.encode_request(hb, version, correlation_id=c, client_id="bench") for c in range(per_conn)]
              for hb in beats]
    connections = len(socks)
    cpu0, wall0 = _cpu_seconds(proc.pid), time.perf_counter()
    sent = [0] * connections
    received = [0] * connections
    for i, s in enumerate(socks):
        sent[i] = min(window, per_conn)
        s.sendall(b"".join(frames[i][:sent[i]]))
    pending = {s.fileno(): i for i, s in enumerate(socks)}
    sel = selectors.DefaultSelector()
    for s in socks:
        sel.register(s, selectors.EVENT_READ)
    splitters = [codec.FrameSplitter() for _ in socks]
    while pending:
        for key, _ in sel.select(30):
            i = pending.get(key.fd)
            if i is None:
                continue
            data = key.fileobj.recv(1 << 20)
            if not data:
                raise ConnectionError("the server closed a connection")
            for frame in splitters[i].feed(data):
                header, response = codec.decode_response(frame, api_key, version)
                if response.error_code or header.correlation_id != received[i]:
                    raise AssertionError(f"heartbeat {received[i]}: {response}, {header}")
                received[i] += 1
            more = min(per_conn, received[i] + window) - sent[i]
            if more > 0:
                key.fileobj.sendall(b"".join(frames[i][sent[i]:sent[i] + more]))
                sent[i] += more
            if received[i] == per_conn:
                del pending[key.fd]
                sel.unregister(key.fileobj)
    sel.close()
    return time.perf_counter() - wall0, _cpu_seconds(proc.pid) - cpu0


def server_heartbeats(heartbeats, connections, window, protocols=("classic",)):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc, port = _start_server(root, connections)
    ok = True
    try:
        per_conn = heartbeats // connections
        total = per_conn * connections
        print(f"kwire serve ({kwire.IMPLEMENTATION} codec), {total} heartbeats over {connections} connections, "
              f"{window} in flight each; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        for protocol in protocols:
            socks = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(connections)]
            try:
                for s in socks:
                    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                members = _consumer_members if protocol == "consumer" else _classic_members
                beats, version = members(socks)
                wall, cpu = _pump(proc, socks, beats, version, per_conn, window)
            finally:
                for s in socks:
                    s.close()
            name = "ConsumerGroupHeartbeat v1 (delta)" if protocol == "consumer" else "Heartbeat v4"
            print(f"  {name}: wall {wall:.2f} s, {total / wall:,.0f}/s; server CPU {cpu:.2f} s, "
                  f"{total / cpu:,.0f} per CPU second (target >= 50,000)")
            ok = ok and total / cpu >= 50_000
        print(f"  load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        return 0 if ok else 1
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
    parser.add_argument("--protocol", choices=("classic", "consumer", "both"), default="classic",
                        help="with --server: Heartbeat v4 (classic), ConsumerGroupHeartbeat v1 (consumer), or both "
                             "against the same server")
    args = parser.parse_args(argv)
    if args.server:
        protocols = ("classic", "consumer") if args.protocol == "both" else (args.protocol,)
        return server_heartbeats(args.heartbeats, args.connections, args.window, protocols)

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
