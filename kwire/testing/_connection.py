"""One client connection of the mock cluster: frames in, answers out in request order, with backpressure.

Kafka reads one request per connection at a time and mutes the channel while its answer is unsent
(``SocketServer.Processor``, ``KafkaChannel.mute``).  kwire lets a client pipeline, within two bounds:

- ``max_inflight``: requests read but not yet answered (a parked JoinGroup, a long-polling Fetch, answers held
  behind them to keep the order);
- ``max_buffered``: answer bytes handed to the transport and not yet taken by the client's socket.

At either bound the connection is not read (``transport.pause_reading``); frames already split from the last read
wait in a backlog; reading resumes when the client has taken the answers.  So what one connection holds is at most
its bounds, plus the one answer that crossed ``max_buffered``, plus one read and one partial frame (at most
``socket.request.max.bytes``).

A long-polling Fetch holds back the connection's next Fetch (and what follows it) until it is answered, so that
one connection parks one Fetch answer at a time, as Kafka's muted channel does.

Frames are read without copies in between (``asyncio.BufferedProtocol``): the socket reads into the connection's
own small buffer, which is split into frames.  A frame that does not fit in it, up to ``WHOLE_BYTES``, is read
straight into the ``bytes`` object the codec and the log then keep (``_blank``): a producer's megabyte Produce
crosses no copy between the socket and the log.  Its buffer is not zero-filled (``bytearray(n)`` would be a pass
over the frame's memory), and it is one read where 256 KiB chunks took four or five.  Joining chunks into ``bytes``
was a fifth of the server's time on a producer's stream of 0.6-0.8 MB requests (``py-spy``), as much as all its
reads, and part of each answer's wait: the codec reads bytes fields as views only of an exact ``bytes`` object,
so a ``bytearray`` would only move that copy into it.  Such buffers are taken for a frame's declared size before
its bytes come, so the process's connections hold at most ``WHOLE_RESERVE`` bytes of them at once (memory the
kernel maps only as the bytes are written); a bigger frame, one beyond that reserve, and every frame where
``ctypes.pythonapi`` is missing (not CPython), is read into chunks taken as the client's bytes come, never for its
declared size, joined once when it is whole.  The chunks are all of one size and go back to a small shared stock
once their frame is joined: ``bytearray(n)`` zero-fills a chunk allocated fresh.

A frame the server cannot read closes the connection after the answers to the requests before it are written,
as Kafka answers what it could read and then closes.
"""

import asyncio
import logging
import struct
import threading
from collections import deque

log = logging.getLogger("kwire.testing")

_SIZE = struct.Struct(">i")
# The connection's own read buffer: every small frame read at once is split out of it.
READ_BYTES = 16 << 10
# The chunks a frame bigger than the read buffer is read into, one at a time as its bytes come.
CHUNK_BYTES = 256 << 10
# Spare chunks kept for the next big frame, by every connection of the process (at most 4 MiB: a full deque drops
# its oldest as one more comes).  A deque's append and pop are atomic, so clusters on threads of their own share it.
SPARE_CHUNKS = 16
_spare = deque(maxlen=SPARE_CHUNKS)
# A frame of at most this many bytes that does not fit the read buffer is read whole into its final bytes object,
# while the frames being read so by every connection of the process total at most WHOLE_RESERVE bytes.  A
# producer's request is at most a megabyte or so (librdkafka's message.max.bytes, 1,000,000 by default; Java's
# max.request.size, 1 MiB).
WHOLE_BYTES = 4 << 20
WHOLE_RESERVE = 16 << 20
# PyBUF_WRITE (object.h): PyMemoryView_FromMemory's flag for a writable view.
_PYBUF_WRITE = 0x200
_reserve_lock = threading.Lock()
_reserved = [0]


def _take_chunk():
    try:
        return _spare.pop()
    except IndexError:
        return bytearray(CHUNK_BYTES)


def _uninitialized_bytes():
    """A function ``n -> (bytes object of n uninitialized bytes, a writable memoryview of its memory)``: CPython's
    ``PyBytes_FromStringAndSize(NULL, n)``, ``PyBytes_AsString`` and ``PyMemoryView_FromMemory`` through
    ``ctypes``.  Filling a new bytes object before any other code sees it is how the C API builds one (the
    connection holds the only reference until the frame is whole; the view does not keep it alive).  None where
    ``ctypes.pythonapi`` is missing."""
    try:
        import ctypes

        api = ctypes.pythonapi
        new, address, view = api.PyBytes_FromStringAndSize, api.PyBytes_AsString, api.PyMemoryView_FromMemory
    except (ImportError, AttributeError):
        return None
    new.restype, new.argtypes = ctypes.py_object, (ctypes.c_char_p, ctypes.c_ssize_t)
    address.restype, address.argtypes = ctypes.c_void_p, (ctypes.py_object,)
    view.restype, view.argtypes = ctypes.py_object, (ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int)

    def blank(n):
        frame = new(None, n)
        return frame, view(address(frame), n, _PYBUF_WRITE)
    return blank


_blank = _uninitialized_bytes()


def _reserve(n):
    """Take ``n`` bytes of WHOLE_RESERVE; False when they are not left (the frame is read into chunks)."""
    if _blank is None or n > WHOLE_BYTES:
        return False
    with _reserve_lock:
        if _reserved[0] + n > WHOLE_RESERVE:
            return False
        _reserved[0] += n
        return True


def _unreserve(n):
    with _reserve_lock:
        _reserved[0] -= n


class Connection(asyncio.BufferedProtocol):
    """An ``asyncio.BufferedProtocol`` for one client of one broker (``broker`` is its node id)."""

    def __init__(self, server, broker):
        self.server = server
        self.broker = broker
        limits = server.limits
        self.max_frame_size = limits.max_frame_size
        self.inbox = memoryview(bytearray(READ_BYTES))
        self.have = 0              # bytes at the start of inbox not split yet: the start of the next frame
        self.whole = None          # a frame too big for inbox, read whole: its bytes object, being filled
        self.whole_view = None     # a writable view of that object's memory
        self.parts = None          # or read in chunks: its chunks (bytearrays of CHUNK_BYTES) so far
        self.part_fill = 0         # bytes read into the last chunk
        self.received = 0          # bytes of that frame read so far
        self.need = 0              # bytes of that frame still to come
        self.max_inflight = limits.max_inflight
        self.max_buffered = limits.max_buffered
        self.transport = None
        self.peer = "?"
        # Answers owed, oldest first: [frame or None (not ready yet)].  Only the ready prefix is written.
        self.owed = deque()
        self.backlog = deque()     # frames split but not yet handled (the connection is at a bound)
        self.ready_bytes = 0       # answer bytes filled in but not yet handed to the transport
        self.closed = False        # nothing more is read or handled
        self.closing = False       # close once every owed answer is written
        self.batching = False
        self.paused = False
        self.write_paused = False
        self.held = set()          # api keys (as a frame's bytes 4-6) not handled until hold(key, False)

    # -- asyncio.Protocol ----------------------------------------------------------------------------------

    def connection_made(self, transport):
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        if not self.server.accept(self):
            self.closed = True
            transport.abort()
            return
        # pause_writing() once max_buffered bytes wait in the transport; resume_writing() at a quarter of it.
        transport.set_write_buffer_limits(high=self.max_buffered)

    def connection_lost(self, exc):
        self.closed = True
        self.owed.clear()
        self.backlog.clear()
        self._drop_partial()
        self.server.forget(self)

    def pause_writing(self):
        self.write_paused = True

    def resume_writing(self):
        self.write_paused = False
        self._drain_backlog()

    def eof_received(self):
        return False

    def get_buffer(self, sizehint):
        if self.whole is not None:
            return self.whole_view[self.received:]
        if self.parts is None:
            return self.inbox[self.have:] if self.have else self.inbox
        fill = self.part_fill
        if fill == CHUNK_BYTES:
            # A chunk only when the last one is full: together never more than what came, plus one chunk.
            self.parts.append(_take_chunk())
            fill = self.part_fill = 0
        # Never past the frame's end: the bytes after it are the next frames', read into inbox.
        return memoryview(self.parts[-1])[fill:fill + self.need]

    def buffer_updated(self, nbytes):
        if self.closed:
            return
        if self.whole is not None:
            self.received += nbytes
            self.need -= nbytes
            if self.need:
                return
            frame = self.whole
            self._drop_partial()
            self.backlog.append(frame)
            self._drain_backlog()
            return
        if self.parts is not None:
            self.part_fill += nbytes
            self.received += nbytes
            self.need -= nbytes
            if self.need:
                return
            parts, self.parts = self.parts, None
            last = memoryview(parts[-1])
            with last[:self.part_fill] as tail:
                self.backlog.append(b"".join(parts[:-1] + [tail]))
            last.release()
            _spare.extend(parts)
            self._drain_backlog()
            return
        # Split the whole frames in inbox off to the backlog; a partial one moves to its start.
        inbox, have, pos = self.inbox, self.have + nbytes, 0
        bad = None
        while have - pos >= 4:
            (size,) = _SIZE.unpack_from(inbox, pos)
            if size < 0 or size > self.max_frame_size:
                # Kafka's NetworkReceive refuses the size before reading the frame (InvalidReceiveException).
                bad = f"frame size {size} is not within 0 and socket.request.max.bytes ({self.max_frame_size})"
                pos = have
                break
            end = pos + 4 + size
            if end > have:
                if 4 + size > len(inbox):
                    # Too big for inbox: the rest is read straight into the frame's own bytes, or into chunks.
                    self._start_big(inbox[pos:have], 4 + size)
                    pos = have
                break
            self.backlog.append(bytes(inbox[pos:end]))
            pos = end
        if pos == have:
            self.have = 0
        else:
            if pos:
                inbox[:have - pos] = inbox[pos:have]  # a memoryview's slice assignment copies overlapping bytes right
            self.have = have - pos
        self._drain_backlog()
        if bad is not None and not self.closed:
            self.close(f"bad frame: {bad}", graceful=True)

    def _start_big(self, head, size):
        """Begin a frame of ``size`` bytes (size prefix included) whose first bytes are ``head``."""
        whole = None
        if _reserve(size):
            try:
                whole = _blank(size)
            except MemoryError:
                _unreserve(size)
        if whole is not None:
            self.whole, self.whole_view = whole
            self.whole_view[:len(head)] = head
        else:
            chunk = _take_chunk()
            chunk[:len(head)] = head
            self.parts = [chunk]
            self.part_fill = len(head)
        self.received = len(head)
        self.need = size - len(head)

    def _drop_partial(self):
        """Forget the partial frame (done with, or the connection closed), giving back its reserve."""
        self.parts = None
        if self.whole is not None:
            _unreserve(len(self.whole))
            self.whole = self.whole_view = None

    # -- handling ------------------------------------------------------------------------------------------

    def hold(self, api_key, on):
        """Handle no request of ``api_key`` while ``on`` (one long poll at a time: see the record apis' Fetch);
        a held request waits at the head of the backlog, and the frames behind it with it, in order.  The
        caller fills the held-for answer right after releasing, and that fill handles the backlog again."""
        key = api_key.to_bytes(2, "big")
        if on:
            self.held.add(key)
        else:
            self.held.discard(key)

    def _at_bound(self):
        if self.write_paused or len(self.owed) >= self.max_inflight:
            return True
        if self.held and self.backlog and bytes(self.backlog[0][4:6]) in self.held:
            return True
        # Answers made while a read is handled count before they are written: a few megabyte Fetch answers
        # reach the bound within one read.  The transport's own buffer counts only beside them, and only above
        # the bound, as the transport counts it: it pauses the protocol above its high-water mark, never at it,
        # and only its resume_writing wakes a connection that stopped reading for its buffer.
        return self.ready_bytes > 0 and self.ready_bytes + self.transport.get_write_buffer_size() > self.max_buffered

    def _drain_backlog(self):
        """Handle the frames waiting while the connection is under its bounds; pause reading at a bound."""
        backlog = self.backlog
        while True:
            # Answers ready while this batch is handled go out in one write, not one system call each.
            self.batching = True
            try:
                while backlog and not self.closed and not self._at_bound():
                    try:
                        self.server.request(self, backlog.popleft())
                    except Exception:  # noqa: BLE001 - a server bug costs this connection, not the server
                        log.exception("closing connection from %s: internal error", self.peer)
                        self.close("internal error")
            finally:
                self.batching = False
            self.flush()
            # Answered requests leave the in-flight count once written: go on while that made room.
            if not backlog or self.closed or self._at_bound():
                break
        if self.closed or self.transport is None:
            return
        at_bound = bool(backlog) or self._at_bound()
        if at_bound and not self.paused:
            self.paused = True
            self.transport.pause_reading()
        elif not at_bound and self.paused and not self.closing:
            self.paused = False
            self.transport.resume_reading()

    def close(self, reason, graceful=False):
        """Stop reading this connection.  ``graceful``: write the answers owed for what was read before,
        then close; otherwise close at once, dropping them."""
        if self.closed:
            return
        log.warning("closing connection from %s: %s", self.peer, reason)
        self.closed = True
        self.backlog.clear()
        self._drop_partial()
        self.server.forget(self)
        if graceful:
            self.closing = True
            if not self.paused:
                self.paused = True
                self.transport.pause_reading()
            self.flush()
        else:
            self.owed.clear()
            self.transport.abort()

    def slot(self):
        """Reserve the place of the next answer; returns a one-argument function that fills it (None: the
        request gets no answer, as a Produce with acks 0)."""
        cell = [None]
        self.owed.append(cell)

        def fill(frame):
            cell[0] = frame
            self.ready_bytes += len(frame)
            if not self.batching:
                self.flush()
                if self.backlog or self.paused:
                    self._drain_backlog()
        return fill

    def flush(self):
        owed = self.owed
        if self.transport is None:
            return
        if self.closed and not self.closing:
            owed.clear()
            return
        ready = []
        while owed and owed[0][0] is not None:
            frame = owed.popleft()[0]
            if frame:  # b"": answered without a frame (acks 0)
                self.ready_bytes -= len(frame)
                ready.append(frame)
        if ready:
            self.transport.write(b"".join(ready) if len(ready) > 1 else ready[0])
        if self.closing and not owed:
            self.closing = False
            self.transport.close()  # writes what is buffered, then closes

    def buffered(self):
        """Bytes this connection holds: unsent answers, answers not yet in order, split frames waiting."""
        held = self.transport.get_write_buffer_size() if self.transport is not None else 0
        held += self.ready_bytes
        held += sum(len(f) for f in self.backlog)
        return held + self.have + (self.received if self.parts is not None or self.whole is not None else 0)
