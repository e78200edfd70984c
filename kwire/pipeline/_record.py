"""``kwire record``: a recording TCP proxy in front of one Kafka broker.

Clients connect to the proxy (127.0.0.1 by default); each connection opens
one to the upstream broker, and every byte is forwarded unchanged in both
directions.  A :class:`kwire.FrameSplitter` per direction cuts the stream
into frames, which go through one bounded queue to one writer task that
appends them to a capture (:mod:`kwire.pipeline._capture`).

Guarantees:

* **Nothing is lost or reordered.**  A frame is queued *before* its last
  bytes are forwarded, so a response (which the broker can only send after
  the whole request arrived) is always queued after its request; the queue
  is FIFO and has a single consumer, which assigns ``seq``.
* **Bounded back pressure.**  When the writer falls behind, ``queue.put``
  blocks the connection's pump, which stops reading its socket; TCP flow
  control then slows the sender.  Memory is bounded by the queue size plus
  one partial frame per direction (at most ``max_frame_size``).
* **Disconnects mid-frame** are recorded: the bytes of the unfinished frame
  become one row with ``truncated = true``.  A stream that is not Kafka
  framing (a negative or oversized size prefix) is still forwarded; its
  bytes from that point on are recorded as truncated rows.

Kafka clients connect to the brokers the cluster *advertises*, not to the
bootstrap address, so the broker must advertise the proxy's address (see
docs/PIPELINE.md).
"""

from __future__ import annotations

import asyncio
import itertools
import time

from kwire._stop import stop_signals_handled
from kwire.errors import DecodeError
from kwire.codec import DEFAULT_MAX_FRAME_SIZE, FrameSplitter
from kwire.pipeline._capture import BROKER_TO_CLIENT, CLIENT_TO_BROKER, CaptureWriter

READ_SIZE = 65536


def _now_us():
    return time.time_ns() // 1000


class RecordingProxy:
    def __init__(self, out_path, upstream_host, upstream_port, *, listen_host="127.0.0.1", listen_port=0,
                 queue_size=10000, flush_rows=10000, flush_interval=1.0, max_frame_size=DEFAULT_MAX_FRAME_SIZE):
        self.out_path = str(out_path)
        self.upstream = (upstream_host, upstream_port)
        self.listen = (listen_host, listen_port)
        self.queue_size = queue_size
        self.flush_rows = flush_rows
        self.flush_interval = flush_interval
        self.max_frame_size = max_frame_size
        self.port = None
        self.frames = 0
        self.connections = 0
        self._ids = itertools.count(1)
        self._server = None
        self._queue = None
        self._writer_task = None
        self._handlers = set()
        self._capture = None

    async def start(self):
        # Row groups are cut by the writer task, not by the CaptureWriter.
        self._capture = CaptureWriter(self.out_path, rows_per_group=1 << 62)
        self._queue = asyncio.Queue(maxsize=self.queue_size)
        self._writer_task = asyncio.create_task(self._write_loop())
        self._server = await asyncio.start_server(self._handle, *self.listen)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self):
        """Stop accepting, close open connections (recording their partial
        frames), write everything queued and close the capture."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for task in list(self._handlers):
            task.cancel()
        if self._handlers:
            await asyncio.gather(*self._handlers, return_exceptions=True)
        if self._writer_task is not None:
            await self._queue.put(None)
            await self._writer_task
            self._writer_task = None
            await asyncio.get_running_loop().run_in_executor(None, self._capture.close)

    async def __aenter__(self):
        return await self.start()

    async def __aexit__(self, *exc):
        await self.stop()

    # -- writer ------------------------------------------------------------------------------

    async def _write_loop(self):
        loop = asyncio.get_running_loop()
        cap = self._capture
        pending = 0
        last_flush = time.monotonic()
        while True:
            try:
                item = await asyncio.wait_for(self._queue.get(), timeout=self.flush_interval)
            except asyncio.TimeoutError:
                item = False
            if item:
                cap.append(*item[:4], truncated=item[4], client=item[5], broker=item[6])
                pending += 1
                self.frames += 1
            now = time.monotonic()
            if pending and (item is None or pending >= self.flush_rows or now - last_flush >= self.flush_interval):
                # Off the event loop, but awaited: the next item is only
                # taken after this flush, so order holds.
                await loop.run_in_executor(None, cap.flush)
                pending = 0
                last_flush = now
            if item is None:
                return

    # -- connections -------------------------------------------------------------------------

    async def _handle(self, client_reader, client_writer):
        task = asyncio.current_task()
        self._handlers.add(task)
        conn = next(self._ids)
        self.connections += 1
        peer = client_writer.get_extra_info("peername")
        client = f"{peer[0]}:{peer[1]}" if peer else None
        broker = f"{self.upstream[0]}:{self.upstream[1]}"
        up_writer = None
        try:
            try:
                up_reader, up_writer = await asyncio.open_connection(*self.upstream)
            except OSError:
                return
            pumps = [asyncio.create_task(self._pump(client_reader, up_writer, conn, CLIENT_TO_BROKER, client, broker)),
                     asyncio.create_task(self._pump(up_reader, client_writer, conn, BROKER_TO_CLIENT, client, broker))]
            try:
                await asyncio.gather(*pumps)
            except asyncio.CancelledError:
                # stop() ends connections by cancelling their handler; the
                # pumps record partial frames as they unwind.  The handler
                # itself ends normally: it is the top of its task.
                for p in pumps:
                    p.cancel()
                await asyncio.gather(*pumps, return_exceptions=True)
        finally:
            for w in (client_writer, up_writer):
                if w is not None:
                    w.close()
            self._handlers.discard(task)

    async def _pump(self, reader, writer, conn, direction, client, broker):
        splitter = FrameSplitter(self.max_frame_size)
        raw = False  # the stream stopped looking like Kafka framing
        put = self._queue.put
        try:
            while True:
                try:
                    data = await reader.read(READ_SIZE)
                except (ConnectionError, OSError):
                    data = b""
                if not data:
                    break
                ts = _now_us()
                if raw:
                    await put((ts, conn, direction, data, True, client, broker))
                else:
                    try:
                        frames = splitter.feed(data)
                    except DecodeError as exc:
                        frames = exc.frames
                        raw = True
                    for f in frames:
                        await put((ts, conn, direction, f, False, client, broker))
                    if raw:
                        rest = splitter.pending_bytes()
                        if rest:
                            await put((ts, conn, direction, rest, True, client, broker))
                try:
                    writer.write(data)
                    await writer.drain()
                except (ConnectionError, OSError):
                    break
        finally:
            # Runs on EOF, on a reset and on cancellation alike: whatever
            # arrived of an unfinished frame is recorded as truncated.
            if not raw and splitter.pending:
                rest = splitter.pending_bytes()
                await put((_now_us(), conn, direction, rest, True, client, broker))
            if writer.can_write_eof() and not writer.is_closing():
                try:
                    writer.write_eof()
                except (ConnectionError, OSError):
                    pass


async def serve(out_path, upstream_host, upstream_port, listen_port=19092, listen_host="127.0.0.1", duration=None,
                log=print, stop_signals=()):
    """Record until ``duration`` seconds have passed (None: until cancelled) or one of ``stop_signals`` comes.

    The command passes :data:`kwire._stop.STOP_SIGNALS`, as ``kwire serve`` does, so that the capture is written
    whole and closed however the process is stopped (see :mod:`kwire._stop`)."""
    proxy = RecordingProxy(out_path, upstream_host, upstream_port, listen_host=listen_host, listen_port=listen_port)
    stop = asyncio.Event()
    with stop_signals_handled(asyncio.get_running_loop(), stop.set, stop_signals):
        await proxy.start()
        log(f"recording {listen_host}:{proxy.port} -> {upstream_host}:{upstream_port} into {out_path} (Ctrl-C stops)")
        try:
            if duration is None:
                await stop.wait()
            else:
                try:
                    await asyncio.wait_for(stop.wait(), duration)
                except asyncio.TimeoutError:
                    pass
        finally:
            await proxy.stop()
            log(f"{proxy.frames:,} frames from {proxy.connections:,} connections written to {out_path}")
