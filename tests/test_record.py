"""The recording proxy against a tiny fake broker; everything on 127.0.0.1, time-bounded."""

import asyncio
import random

import pytest

pa = pytest.importorskip("pyarrow")

import kwire  # noqa: E402
from kwire.pipeline._capture import read_capture  # noqa: E402
from kwire.pipeline._decode import decode_capture  # noqa: E402
from kwire.pipeline._record import RecordingProxy  # noqa: E402

TIMEOUT = 20


class FakeBroker:
    """Answers every Heartbeat with a HeartbeatResponse carrying its
    correlation id, written in small random pieces; keeps every byte it got."""

    def __init__(self, chunk_seed=0):
        self.received = bytearray()
        #: Bytes received and sent, one entry per connection.
        self.per_conn = []
        self.rng = random.Random(chunk_seed)
        self.server = None

    async def __aenter__(self):
        """Listening on ``self.port`` until the ``async with`` ends, however it ends."""
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc):
        self.server.close()
        await self.server.wait_closed()

    async def _serve(self, reader, writer):
        splitter = kwire.FrameSplitter()
        mine = (bytearray(), bytearray())
        self.per_conn.append(mine)
        try:
            while data := await reader.read(4096):
                self.received += data
                mine[0].extend(data)
                for frame in splitter.feed(data):
                    header, req = kwire.decode_request(frame)
                    resp = kwire.encode_response(kwire.HeartbeatResponse(error_code=27 if req.generation_id % 2 else 0),
                                                 header.request_api_version, header.correlation_id)
                    mine[1].extend(resp)
                    while resp:
                        cut = self.rng.randint(1, len(resp))
                        writer.write(resp[:cut])
                        await writer.drain()
                        resp = resp[cut:]
        finally:
            writer.close()


def _heartbeat(corr, member, version=4):
    return kwire.encode_request(kwire.HeartbeatRequest(group_id="g", generation_id=corr, member_id=member),
                                version, correlation_id=corr, client_id=member)


async def _client(port, member, n, rng):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    sent = b"".join(_heartbeat(i, member, version=rng.choice([0, 3, 4])) for i in range(n))
    # Pipelined, in pieces that cut frames anywhere.
    pos = 0
    while pos < len(sent):
        cut = rng.randint(1, 300)
        writer.write(sent[pos:pos + cut])
        await writer.drain()
        pos += cut
    got = bytearray()
    splitter = kwire.FrameSplitter()
    frames = 0
    while frames < n:
        data = await reader.read(4096)
        assert data, "proxy closed early"
        got += data
        frames += len(splitter.feed(data))
    writer.close()
    return sent, bytes(got)


def _run(coro):
    return asyncio.run(asyncio.wait_for(coro, TIMEOUT))


def test_bytes_pass_unchanged_and_every_frame_is_recorded_in_order(tmp_path):
    out = tmp_path / "rec.parquet"

    async def main():
        async with FakeBroker() as broker:
            async with RecordingProxy(out, "127.0.0.1", broker.port, queue_size=4, flush_rows=50) as proxy:
                results = await asyncio.gather(*[_client(proxy.port, f"m-{k}", 150, random.Random(k))
                                                 for k in range(3)])
                # Let the proxy see the clients' EOFs before it stops.
                await asyncio.sleep(0.2)
        return broker, results

    broker, results = _run(main())
    table = read_capture(out)
    assert table.num_rows == 3 * 150 * 2
    assert not any(table.column("truncated").to_pylist())
    rows = table.to_pylist()
    # Unchanged bytes: what each client sent is what the broker got, and back.
    assert sorted((bytes(r), bytes(s)) for r, s in broker.per_conn) == sorted(results)
    by_conn = {}
    for r in rows:
        by_conn.setdefault(r["conn"], {0: bytearray(), 1: bytearray()})[r["direction"]] += r["frame"]
    assert sorted((bytes(d[0]), bytes(d[1])) for d in by_conn.values()) == sorted(results)
    decoded = decode_capture(out).to_pylist()
    assert all(r["decode_error"] is None for r in decoded)
    # Each response is recorded after its request, and answers generation parity.
    for r in decoded:
        if r["direction"] == 1:
            assert r["request_seq"] < r["seq"]
            assert r["error_code"] == (27 if r["generation_id"] % 2 else 0)
    assert all(r["client"].startswith("127.0.0.1:") for r in rows)


def test_disconnect_mid_frame_is_recorded_as_truncated(tmp_path):
    out = tmp_path / "rec.parquet"
    frame = _heartbeat(7, "m-1")

    async def main():
        async with FakeBroker() as broker:
            async with RecordingProxy(out, "127.0.0.1", broker.port) as proxy:
                reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
                writer.write(_heartbeat(6, "m-1") + frame[:9])
                await writer.drain()
                assert len(await reader.read(4096)) > 0  # the complete one was answered
                writer.close()
                await writer.wait_closed()
                await asyncio.sleep(0.2)
        return broker

    broker = _run(main())
    rows = read_capture(out).to_pylist()
    assert [(r["direction"], r["truncated"]) for r in rows] == [(0, False), (1, False), (0, True)]
    assert rows[2]["frame"] == frame[:9]
    assert bytes(broker.received) == _heartbeat(6, "m-1") + frame[:9]


def test_stop_records_the_partial_frame_of_an_open_connection(tmp_path):
    out = tmp_path / "rec.parquet"

    async def main():
        async with FakeBroker() as broker:
            proxy = await RecordingProxy(out, "127.0.0.1", broker.port).start()
            reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
            writer.write(_heartbeat(1, "m-9")[:5])
            await writer.drain()
            await asyncio.sleep(0.2)
            await proxy.stop()
            writer.close()

    _run(main())
    rows = read_capture(out).to_pylist()
    assert len(rows) == 1 and rows[0]["truncated"] and rows[0]["frame"] == _heartbeat(1, "m-9")[:5]


def test_non_kafka_bytes_are_forwarded_and_kept(tmp_path):
    out = tmp_path / "rec.parquet"
    junk = b"\xff\xff\xff\xf0GET / HTTP/1.1\r\n\r\n"

    async def main():
        got = bytearray()

        async def sink(reader, writer):
            while data := await reader.read(4096):
                got.extend(data)
            writer.close()

        server = await asyncio.start_server(sink, "127.0.0.1", 0)
        try:
            async with RecordingProxy(out, "127.0.0.1", server.sockets[0].getsockname()[1]) as proxy:
                _reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
                writer.write(_heartbeat(1, "m") + junk)
                await writer.drain()
                writer.write(b"more")
                await writer.drain()
                writer.close()
                await asyncio.sleep(0.3)
        finally:
            server.close()
            await server.wait_closed()
        return bytes(got)

    got = _run(main())
    assert got == _heartbeat(1, "m") + junk + b"more"
    rows = read_capture(out).to_pylist()
    assert rows[0]["frame"] == _heartbeat(1, "m") and not rows[0]["truncated"]
    assert b"".join(r["frame"] for r in rows[1:]) == junk + b"more"
    assert all(r["truncated"] for r in rows[1:])


def test_a_stalled_writer_stops_forwarding_instead_of_buffering(tmp_path, monkeypatch):
    import threading

    from kwire.pipeline import _capture as capture
    release = threading.Event()
    real_flush = capture.CaptureWriter.flush

    def slow_flush(self):
        release.wait(TIMEOUT)  # the disk is stuck until the test says otherwise
        real_flush(self)

    monkeypatch.setattr(capture.CaptureWriter, "flush", slow_flush)
    out = tmp_path / "rec.parquet"
    n = 60

    async def main():
        async with FakeBroker() as broker:
            try:
                async with RecordingProxy(out, "127.0.0.1", broker.port, queue_size=3, flush_rows=1) as proxy:
                    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
                    writer.write(b"".join(_heartbeat(i, "m") for i in range(n)))
                    await writer.drain()
                    await asyncio.sleep(0.5)
                    stalled = len(kwire.FrameSplitter().feed(bytes(broker.received)))
                    queued = proxy._queue.qsize()
                    release.set()
                    got, splitter = 0, kwire.FrameSplitter()
                    while got < n:
                        got += len(splitter.feed(await reader.read(4096)))
                    writer.close()
                    await asyncio.sleep(0.2)
            finally:
                release.set()
        return stalled, queued

    stalled, queued = _run(main())
    # One frame in the stuck flush, three queued, one waiting to be queued.
    assert queued <= 3 and stalled <= 5
    rows = read_capture(out).to_pylist()
    assert [r["frame"] for r in rows if r["direction"] == 0] == [_heartbeat(i, "m") for i in range(n)]
    assert len(rows) == 2 * n



@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT, which the process inherited as ignored"])
def test_the_command_stops_on_a_signal_with_its_capture_whole(tmp_path, how):
    # `kwire record` ends on SIGTERM, and on SIGINT even where a non-interactive shell started it ignoring SIGINT
    # (a background job), as `kwire serve` does: it writes what it recorded and closes the capture, whose footer a
    # Parquet reader needs.  Left to their defaults, SIGTERM killed it with the footer unwritten and an inherited
    # ignored SIGINT did nothing.
    import os
    import signal
    import socket
    import subprocess
    import sys

    sig = signal.SIGTERM if how == "SIGTERM" else signal.SIGINT
    capture = tmp_path / "capture.parquet"
    frame = _heartbeat(7, "m")
    with socket.socket() as upstream:
        upstream.bind(("127.0.0.1", 0))
        upstream.listen()
        upstream.settimeout(TIMEOUT)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        proc = subprocess.Popen(
            [sys.executable, "-m", "kwire", "record", str(capture), "--upstream",
             f"127.0.0.1:{upstream.getsockname()[1]}", "--listen-port", str(port), "--duration", "60"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONUNBUFFERED="1"),
            preexec_fn=None if sig == signal.SIGTERM else (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)))
        try:
            assert proc.stdout.readline().startswith("recording "), proc.stderr.read()
            with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as client:
                client.sendall(frame)
                # The proxy queues a frame for the capture before it forwards it: once the broker has it, so has
                # the recording.
                forwarded, _ = upstream.accept()
                with forwarded:
                    forwarded.settimeout(TIMEOUT)
                    got = b""
                    while len(got) < len(frame):
                        got += forwarded.recv(len(frame) - len(got)) or pytest.fail("the proxy closed early")
                    proc.send_signal(sig)
                    assert proc.wait(TIMEOUT) == 0, proc.stderr.read()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
            proc.stderr.close()
    import pyarrow.parquet as pq

    rows = pq.read_table(capture).to_pylist()
    assert [(r["frame"], r["truncated"]) for r in rows] == [(frame, False)]
