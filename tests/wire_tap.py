"""A decoding TCP proxy in front of a whole Kafka cluster: what real clients send, frame by frame.

    python tests/wire_tap.py --upstream 127.0.0.1:9092,127.0.0.1:9093 --out tap.jsonl --run-seconds 60

It listens on 127.0.0.1, one port per upstream broker, and prints ``wire tap: listening on HOST:PORT,...``
(the bootstrap servers to give the clients).  Every request and response is decoded with kwire and written to
``--out`` as one JSON line: ``{"t": monotonic seconds, "conn": n, "broker": upstream, "dir": "request" |
"response", "api": name, "version": v, "correlation_id": c, "client_id": ..., "body": {fields}}``; a frame kwire
cannot decode gets ``"error"`` and its size instead of a body.

Clients connect to the brokers the cluster advertises, not to the address they were given, so the tap rewrites
the brokers' addresses in Metadata responses and the coordinators' in FindCoordinator responses to its own ports
(both re-encoded at the version the client asked for).  Every other byte is forwarded unchanged.  kwire's own
``kwire record`` forwards every byte and therefore needs a broker that advertises the proxy; this tap works in
front of clusters that cannot be told to, such as librdkafka's mock.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import signal
import struct
import sys
import time

from kwire import FrameSplitter, decode_response, encode_response
from kwire.codec import ApiKey, MetadataResponse, decode_request, decode_request_header
from kwire.errors import KwireError

READ_SIZE = 65536
METADATA_V13 = 13
_CORRELATION = struct.Struct(">i")


def plain(value):
    """A decoded message as JSON-able data (the pickling state of kwire's message classes names every field)."""
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if hasattr(value, "__reduce__") and type(value).__module__.startswith("kwire."):
        state = value.__reduce__()[1][1]
        return {k: plain(v) for k, v in state.items() if k != "unknown_tagged_fields" or v}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return repr(value)


class WireTap:
    """One listener per upstream broker; ``records`` collects every decoded frame (and ``out``, if given, gets
    each as a JSON line as it is seen)."""

    def __init__(self, upstreams, out=None, advertise=None):
        self.upstreams = list(upstreams)
        self.out = out
        # api key -> the max version to claim in ApiVersions responses, whatever the broker said: a way to see
        # what a client would send to a broker that supports more (the broker's answer is then its own).
        self.advertise = dict(advertise or {})
        self.records = []
        self.listen = {}  # upstream (host, port) -> the tap's port for it
        self._servers = []
        self._conns = itertools.count(1)
        self._tasks = set()

    @property
    def bootstrap(self):
        return ",".join(f"127.0.0.1:{self.listen[u]}" for u in self.upstreams)

    async def start(self):
        for upstream in self.upstreams:
            server = await asyncio.start_server(
                lambda r, w, up=upstream: self._spawn(self._handle(r, w, up)), "127.0.0.1", 0)
            self._servers.append(server)
            self.listen[upstream] = server.sockets[0].getsockname()[1]
        return self

    async def stop(self):
        for server in self._servers:
            server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for server in self._servers:
            await server.wait_closed()

    def _spawn(self, coro):
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _record(self, **row):
        row["t"] = time.monotonic()
        self.records.append(row)
        if self.out is not None:
            self.out.write(json.dumps(row) + "\n")
            self.out.flush()

    async def _handle(self, client_reader, client_writer, upstream):
        conn = next(self._conns)
        pending = {}  # correlation id -> (api key, version) of the requests in flight
        try:
            up_reader, up_writer = await asyncio.open_connection(*upstream)
        except OSError:
            client_writer.close()
            return
        tag = f"{upstream[0]}:{upstream[1]}"
        pumps = [asyncio.ensure_future(self._requests(client_reader, up_writer, conn, tag, pending)),
                 asyncio.ensure_future(self._responses(up_reader, client_writer, conn, tag, pending))]
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for p in pumps:
                p.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
            for w in (client_writer, up_writer):
                w.close()

    async def _requests(self, reader, writer, conn, tag, pending):
        splitter = FrameSplitter()
        while data := await reader.read(READ_SIZE):
            for frame in splitter.feed(data):
                self._request(frame, conn, tag, pending)
                writer.write(frame)
            await writer.drain()

    def _request(self, frame, conn, tag, pending):
        header = decode_request_header(frame)
        key, version = header.request_api_key, header.request_api_version
        pending[header.correlation_id] = (key, version)
        row = dict(conn=conn, broker=tag, dir="request", api=_api_name(key), version=version,
                   correlation_id=header.correlation_id, client_id=header.client_id)
        try:
            if key == ApiKey.METADATA and version == METADATA_V13:
                # v13's request is v12's (the version only says the client reads the response's ErrorCode).
                frame = frame[:6] + struct.pack(">h", METADATA_V13 - 1) + frame[8:]
                row["decoded_as"] = METADATA_V13 - 1
            row["body"] = plain(decode_request(frame)[1])
        except KwireError as exc:
            row.update(error=f"{type(exc).__name__}: {exc}", size=len(frame), head=bytes(frame[:64]).hex())
        self._record(**row)

    async def _responses(self, reader, writer, conn, tag, pending):
        splitter = FrameSplitter()
        while data := await reader.read(READ_SIZE):
            for frame in splitter.feed(data):
                writer.write(self._response(frame, conn, tag, pending))
            await writer.drain()

    def _response(self, frame, conn, tag, pending):
        (correlation_id,) = _CORRELATION.unpack_from(frame, 4)
        key, version = pending.pop(correlation_id, (None, None))
        row = dict(conn=conn, broker=tag, dir="response", api=_api_name(key), version=version,
                   correlation_id=correlation_id)
        if key is None:
            self._record(**row, error="no request with this correlation id", size=len(frame))
            return frame
        if key == ApiKey.METADATA and version == METADATA_V13:
            return self._metadata_v13(frame, row)
        try:
            _, msg = decode_response(frame, key, version)
        except KwireError as exc:
            # A broker answers an ApiVersions request at a version it does not support with a v0 response
            # (UNSUPPORTED_VERSION and its own ranges), so the client can retry at a version both know
            # (KafkaApis.handleApiVersionsRequest).
            if key == ApiKey.API_VERSIONS and version > 0:
                try:
                    self._record(**row, decoded_as=0, body=plain(decode_response(frame, key, 0)[1]))
                    return frame
                except KwireError:
                    pass
            self._record(**row, error=f"{type(exc).__name__}: {exc}", size=len(frame), head=bytes(frame[:64]).hex())
            return frame
        self._record(**row, body=plain(msg))
        if key == ApiKey.METADATA:
            for broker in msg.brokers:
                broker.host, broker.port = self._rewrite(broker.host, broker.port)
        elif key == ApiKey.API_VERSIONS and self.advertise and msg.error_code == 0:
            for k in msg.api_keys:
                k.max_version = self.advertise.get(k.api_key, k.max_version)
                k.min_version = min(k.min_version, k.max_version)
        elif key == ApiKey.FIND_COORDINATOR:
            if msg.host:
                msg.host, msg.port = self._rewrite(msg.host, msg.port)
            for c in msg.coordinators or ():
                if c.host:
                    c.host, c.port = self._rewrite(c.host, c.port)
        else:
            return frame
        return encode_response(msg, version, correlation_id)

    def _metadata_v13(self, frame, row):
        """Metadata v13 only adds a top-level ErrorCode after the topics (KIP-1102), and kwire's tables stop
        at v12: decode the v12 prefix, rewrite its brokers, re-encode it and keep the bytes after it as they
        came (librdkafka's mock writes three there, not two: the tail is recorded as ``tail``)."""
        if frame[8] != 0:  # response header v1: correlation id, then tagged fields; none expected
            self._record(**row, error="Metadata v13 response header with tagged fields", size=len(frame))
            return frame
        older = METADATA_V13 - 1
        try:
            msg, end = MetadataResponse.decode_prefix(frame[9:], older)
        except KwireError as exc:
            self._record(**row, error=f"{type(exc).__name__}: {exc}", size=len(frame), head=bytes(frame[:64]).hex())
            return frame
        rest = bytes(frame[9 + end:])
        self._record(**row, decoded_as=older, body=plain(msg), tail=rest.hex())
        for broker in msg.brokers:
            broker.host, broker.port = self._rewrite(broker.host, broker.port)
        out = encode_response(msg, older, row["correlation_id"])[4:] + rest
        return struct.pack(">i", len(out)) + out

    def _rewrite(self, host, port):
        port = self.listen.get((host, port))
        return ("127.0.0.1", port) if port is not None else (host, port)


def _api_name(key):
    try:
        return ApiKey(key).name
    except ValueError:
        return str(key)


def parse_hosts(text):
    out = []
    for item in text.split(","):
        host, _, port = item.strip().rpartition(":")
        out.append((host, int(port)))
    return out


async def run(upstreams, out, run_seconds, advertise=None):
    tap = await WireTap(upstreams, out, advertise).start()
    print(f"wire tap: listening on {tap.bootstrap}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await asyncio.wait_for(stop.wait(), run_seconds)
    except asyncio.TimeoutError:
        pass
    await tap.stop()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--upstream", required=True, help="the cluster's brokers, HOST:PORT,HOST:PORT,...")
    ap.add_argument("--out", required=True, help="where the JSON lines go")
    ap.add_argument("--run-seconds", type=float, default=120)
    ap.add_argument("--advertise", action="append", default=[], metavar="API:MAX",
                    help="claim this max version for API (kwire's ApiKey name) in ApiVersions responses")
    args = ap.parse_args(argv)
    with open(args.out, "w") as out:
        advertise = {}
        for item in args.advertise:
            name, _, version = item.partition(":")
            advertise[ApiKey[name]] = int(version)
        asyncio.run(run(parse_hosts(args.upstream), out, args.run_seconds, advertise))


if __name__ == "__main__":
    sys.exit(main())
