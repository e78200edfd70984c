"""Size-prefixed framing and request/response headers.

Every Kafka frame is an int32 size followed by that many bytes: a header,
then the body.  The header version is not on the wire; it follows from the
api key and version (flexible api versions use the flexible header), which
is why a response can only be decoded by someone who knows the request.

The module-level functions frame with the codec the switch selected
(``kwire.IMPLEMENTATION``).  :class:`Framing` binds the same functions to a
codec module given explicitly, which is how the tests and the fuzzing oracle
run the framing over both twins in one process.
"""

import struct

from kwire import _impl
from kwire.codec import _schema
from kwire.errors import DecodeError, EncodeError, FrameTooLargeError, UnsupportedVersionError

_SIZE = struct.Struct(">i")
_KEY_VERSION = struct.Struct(">hh")

#: Kafka's default ``socket.request.max.bytes``.
DEFAULT_MAX_FRAME_SIZE = 100 * 1024 * 1024


def _check_message(msg, kind):
    if getattr(msg, "kind", None) != kind or getattr(msg, "api_key", None) is None:
        raise EncodeError(f"expected a kwire {kind} message, got {type(msg).__name__}")


def _frame(header, body):
    size = len(header) + len(body)
    if size > 0x7FFFFFFF:
        raise EncodeError(f"frame of {size} bytes exceeds the int32 size prefix")
    return _SIZE.pack(size) + header + body


def _payload(frame):
    """The bytes after the size prefix, checked against it."""
    view = memoryview(frame).cast("B")
    if len(view) < 4:
        raise DecodeError(f"truncated: a frame needs 4 size bytes, {len(view)} given", 0)
    (size,) = _SIZE.unpack_from(view, 0)
    if size != len(view) - 4:
        raise DecodeError(f"size prefix says {size} bytes but the frame has {len(view) - 4}", 0)
    return view[4:]


def _body_budget(header, max_elements):
    # Headers hold no arrays, only tagged fields: what is left of the budget
    # after them is the body's, so the limit covers the frame as a whole.
    return max(max_elements - len(header.unknown_tagged_fields or ()), 0)


class Framing:
    """The framing functions over one codec module (compiled or pure)."""

    def __init__(self, codec):
        self.codec = codec
        self._request_header = codec.RequestHeader
        self._response_header = codec.ResponseHeader
        self._by_key = {(m.api_key, m.kind): getattr(codec, m.class_name) for m in _schema.API_MESSAGES}

    def message_class(self, api_key, kind):
        """The kwire class for ``api_key`` and ``kind`` ("request" or "response")."""
        try:
            return self._by_key[(api_key, kind)]
        except (KeyError, TypeError):
            raise UnsupportedVersionError(f"api key {api_key} ({kind}) is not supported by kwire") from None

    def encode_request(self, msg, version, correlation_id, client_id=None):
        """A complete request frame: size prefix, request header, body."""
        _check_message(msg, "request")
        body = msg.encode(version)
        header = self._request_header(
            request_api_key=msg.api_key,
            request_api_version=version,
            correlation_id=correlation_id,
            client_id=client_id,
        ).encode(_schema.request_header_version(msg.api_key, version))
        return _frame(header, body)

    def encode_response(self, msg, version, correlation_id):
        """A complete response frame: size prefix, response header, body."""
        _check_message(msg, "response")
        body = msg.encode(version)
        header = self._response_header(correlation_id=correlation_id).encode(
            _schema.response_header_version(msg.api_key, version))
        return _frame(header, body)

    def decode_request_header(self, frame):
        """``(header, body)`` of a request frame; ``body`` is a memoryview.

        Works for any api key, so a proxy or capture tool can read the header of
        requests kwire has no body codec for."""
        return self._decode_request_header(frame, None)

    def _decode_request_header(self, frame, max_elements):
        payload = _payload(frame)
        if len(payload) < 4:
            raise DecodeError("truncated request header", 4)
        api_key, api_version = _KEY_VERSION.unpack_from(payload, 0)
        try:
            header_version = _schema.request_header_version(api_key, api_version)
        except KeyError:
            # Not a message kwire knows: every api since Kafka 2.4 uses header v2
            # exactly when it is flexible, which cannot be told from here; v1 is
            # what the fixed part of both looks like, so read that much.
            header_version = 1
        if max_elements is None:  # keyword arguments cost the compiled decoders a parse per call
            header, end = self._request_header.decode_prefix(payload, header_version)
        else:
            header, end = self._request_header.decode_prefix(payload, header_version, max_elements=max_elements)
        return header, payload[end:]

    def decode_request(self, frame, *, max_elements=None):
        """``(RequestHeader, message)`` from a complete request frame.

        ``max_elements`` caps the array elements and tagged fields built from the
        whole frame, header included, as for the message classes' ``decode``."""
        header, body = self._decode_request_header(frame, max_elements)
        cls = self.message_class(header.request_api_key, "request")
        try:
            if max_elements is None:  # the hot path: no keyword arguments to parse
                msg = cls.decode(body, header.request_api_version)
            else:
                msg = cls.decode(body, header.request_api_version, max_elements=_body_budget(header, max_elements))
        except DecodeError as e:
            e.offset = None if e.offset is None else e.offset + 4 + (len(_payload(frame)) - len(body))
            raise
        return header, msg

    def decode_response(self, frame, api_key, version, *, max_elements=None):
        """``(ResponseHeader, message)`` from a complete response frame.

        Responses do not say what they answer: pass the api key and version of
        the request with the same correlation id.  ``max_elements`` as for
        :func:`decode_request`."""
        cls = self.message_class(api_key, "response")
        header_version = _schema.response_header_version(api_key, version)
        payload = _payload(frame)
        if max_elements is None:
            header, end = self._response_header.decode_prefix(payload, header_version)
        else:
            header, end = self._response_header.decode_prefix(payload, header_version, max_elements=max_elements)
        try:
            if max_elements is None:
                msg = cls.decode(payload[end:], version)
            else:
                msg = cls.decode(payload[end:], version, max_elements=_body_budget(header, max_elements))
        except DecodeError as e:
            e.offset = None if e.offset is None else e.offset + 4 + end
            raise
        return header, msg


DEFAULT = Framing(_impl.load("codec", None, package="kwire.codec"))
message_class = DEFAULT.message_class
encode_request = DEFAULT.encode_request
encode_response = DEFAULT.encode_response
decode_request_header = DEFAULT.decode_request_header
decode_request = DEFAULT.decode_request
decode_response = DEFAULT.decode_response

class FrameSplitter:
    """Cuts a byte stream (a socket, a capture) into complete frames.

    ``feed(data)`` returns the frames completed so far, each with its 4-byte
    size prefix, so they can go straight to :func:`decode_request`.  A
    declared size above ``max_frame_size`` (or below zero) is refused before
    anything of that frame is buffered.  Frames completed before a bad size
    prefix are not lost: the error carries them as ``error.frames``.  After
    an error the stream cannot be resynchronised, so every later call raises
    it again (with no frames).
    """

    def __init__(self, max_frame_size=DEFAULT_MAX_FRAME_SIZE):
        if max_frame_size < 0:
            raise ValueError("max_frame_size must be >= 0")
        self.max_frame_size = max_frame_size
        self._buf = bytearray()
        self._pos = 0
        self._error = None

    @property
    def pending(self):
        """Bytes received that do not yet form a complete frame."""
        return len(self._buf) - self._pos

    def pending_bytes(self):
        """A copy of the bytes that do not yet form a complete frame (the tail a
        capture ends on, or what a proxy must forward as is)."""
        return bytes(self._buf[self._pos:])

    def feed(self, data):
        if self._error is not None:
            self._error.frames = []
            raise self._error
        self._buf += data
        frames = []
        buf = self._buf
        while True:
            avail = len(buf) - self._pos
            if avail < 4:
                break
            (size,) = _SIZE.unpack_from(buf, self._pos)
            if size < 0 or size > self.max_frame_size:
                cls = DecodeError if size < 0 else FrameTooLargeError
                what = "negative" if size < 0 else f"larger than the maximum {self.max_frame_size}"
                self._error = cls(f"frame size {size} is {what}", self._pos)
                self._error.frames = []
                break
            if avail < 4 + size:
                break
            frames.append(bytes(buf[self._pos:self._pos + 4 + size]))
            self._pos += 4 + size
        # Drop consumed bytes only now and then: compacting after every
        # frame would make a burst of small frames quadratic.
        if self._pos and (self._pos >= len(buf) or self._pos > 65536):
            del buf[:self._pos]
            self._pos = 0
        if self._error is not None:
            self._error.frames = frames
            raise self._error
        return frames


def split_frames(data, max_frame_size=DEFAULT_MAX_FRAME_SIZE):
    """``(frames, rest)``: the complete frames at the start of ``data`` and the incomplete tail.

    A bad size prefix raises, with the frames before it as ``error.frames``."""
    splitter = FrameSplitter(max_frame_size)
    frames = splitter.feed(data)
    return frames, splitter.pending_bytes()
