"""Size-prefixed framing over the codec the switch selected, and the stream splitter.

Every Kafka frame is an int32 size followed by that many bytes: a header,
then the body.  The header version is not on the wire; it follows from the
api key and version (flexible api versions use the flexible header), which
is why a response can only be decoded by someone who knows the request.

Each codec twin frames its own messages (``_framing_c.pxi`` inside the
compiled codec, the "Framing" section of ``_codec_py.py``): a frame then
costs little more than its body.  This module picks those functions from the
codec the switch selected (``kwire.IMPLEMENTATION``); :class:`Framing` binds
them from a codec module given explicitly, which is how the tests and the
fuzzing oracle run the framing over both twins in one process.
:class:`FrameSplitter` is implementation-neutral and lives here.
"""

import struct

from kwire import _impl
from kwire.errors import ArgumentTypeError, ArgumentValueError, DecodeError, FrameTooLargeError, UnsupportedVersionError

__all__ = [
    "DEFAULT", "DEFAULT_MAX_FRAME_SIZE", "FrameSplitter", "Framing", "decode_request", "decode_request_header",
    "decode_response", "encode_request", "encode_response", "message_class", "split_frames", "split_request",
]

_SIZE = struct.Struct(">i")

#: Kafka's default ``socket.request.max.bytes``.
DEFAULT_MAX_FRAME_SIZE = 100 * 1024 * 1024


class Framing:
    """The framing functions of one codec module (compiled or pure)."""

    def __init__(self, codec):
        self.codec = codec
        # Only api messages have a kind of "request" or "response" (nested structs have no kind).
        classes = (getattr(codec, name) for name in codec.__all__)
        self._by_key = {(cls.api_key, cls.kind): cls for cls in classes
                        if getattr(cls, "kind", None) in ("request", "response")}

    def message_class(self, api_key, kind):
        """The kwire class for ``api_key`` and ``kind`` ("request" or "response")."""
        try:
            return self._by_key[(api_key, kind)]
        except (KeyError, TypeError):
            raise UnsupportedVersionError(f"api key {api_key} ({kind}) is not supported by kwire") from None


    # Each method hands over to the codec's own function (the module-level names
    # below are those functions themselves, with no method call in between).
    def encode_request(self, msg, version, correlation_id, client_id=None):
        """A complete request frame: size prefix, request header, body."""
        return self.codec.encode_request(msg, version, correlation_id, client_id)

    def encode_response(self, msg, version, correlation_id):
        """A complete response frame: size prefix, response header, body."""
        return self.codec.encode_response(msg, version, correlation_id)

    def decode_request(self, frame, *, max_elements=None, views=False):
        """``(RequestHeader, message)`` from a complete request frame (``max_elements`` covers the whole frame;
        ``views``: bytes fields are read-only memoryviews of the frame)."""
        return self.codec.decode_request(frame, max_elements=max_elements, views=views)

    def decode_response(self, frame, api_key, version, *, max_elements=None, views=False):
        """``(ResponseHeader, message)`` from a complete response frame to a request of ``api_key`` at ``version``."""
        return self.codec.decode_response(frame, api_key, version, max_elements=max_elements, views=views)

    def decode_request_header(self, frame):
        """The RequestHeader of a request frame, of any api key."""
        return self.codec.decode_request_header(frame)

    def split_request(self, frame):
        """``(RequestHeader, body)`` of a request frame of any api key; ``body`` is a memoryview."""
        return self.codec.split_request(frame)


DEFAULT = Framing(_impl.load("codec", None, package="kwire.codec"))
message_class = DEFAULT.message_class
encode_request = DEFAULT.encode_request
encode_response = DEFAULT.encode_response
decode_request_header = DEFAULT.decode_request_header
split_request = DEFAULT.split_request
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
        if isinstance(max_frame_size, bool) or not isinstance(max_frame_size, int):
            raise ArgumentTypeError(f"max_frame_size must be an int, not {type(max_frame_size).__name__}")
        if max_frame_size < 0:
            raise ArgumentValueError(f"max_frame_size must be >= 0, got {max_frame_size}")
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
        try:
            self._buf += data
        except TypeError:
            raise ArgumentTypeError(f"expected a bytes-like object, not {type(data).__name__}") from None
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
