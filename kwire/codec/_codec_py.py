"""The pure-Python codec: a reference interpreter of kwire's schema tables.

It walks ``kwire/codec/_schema.py`` at run time.  The compiled codec is generated
from the same tables, so the two agree by construction; keeping this one a
plain interpreter (instead of a second generated file) also gives the
differential tests two genuinely different code paths to compare.

Selected by ``KWIRE_NO_EXTENSIONS=1``; the public names match ``_codec_c``.
"""

import struct as _struct

from kwire.codec import _schema
from kwire.codec._codec_common import check_response_key as _check_response_key
# Pickles made by older kwire versions name this module's _rebuild: it must stay importable here.
from kwire.codec._codec_common import rebuild as _rebuild  # noqa: F401
from kwire.codec._codec_py_classes import ALL as _ALL
from kwire.codec._codec_py_classes import struct_class  # noqa: F401  (public: fuzz/make_corpus.py)
from kwire.codec._codec_py_plans import FIXED as _FIXED
from kwire.codec._codec_py_read import Reader as _Reader
from kwire.codec._codec_py_write import decodes_to_default  # noqa: F401  (public: fuzz/differential.py)
from kwire.errors import ArgumentTypeError, DecodeError, EncodeError, UnsupportedVersionError
# The compiled twin's module holds the same error names (tests compare the two modules' names).
from kwire.errors import ArgumentValueError  # noqa: F401

globals().update(_ALL)
__all__ = sorted(_ALL)  # the framing functions join them at the end of the module

# ---------------------------------------------------------------------------
# Framing: size prefix, header, body (the compiled twin is _framing_c.pxi)
# ---------------------------------------------------------------------------
# Offsets in errors: the size prefix's are at 0; the header's are relative to
# the byte after the size prefix (as its own decode_prefix reports them); the
# body's are relative to the frame.

_REQUEST_CLASSES = {m.api_key: _ALL[m.class_name] for m in _schema.API_MESSAGES if m.kind == "request"}
_RESPONSE_CLASSES = {m.api_key: _ALL[m.class_name] for m in _schema.API_MESSAGES if m.kind == "response"}
_REQUEST_KEYS = {cls: key for key, cls in _REQUEST_CLASSES.items()}
_RESPONSE_KEYS = {cls: key for key, cls in _RESPONSE_CLASSES.items()}


def _check_message(msg, keys, kind):
    """The api key of ``msg`` if it is a kwire ``kind`` message of this codec (or a subclass of one)."""
    api_key = keys.get(type(msg))
    if api_key is not None:
        return api_key
    for cls, api_key in keys.items():
        if isinstance(msg, cls):
            return api_key
    raise EncodeError(f"expected a kwire {kind} message, got {type(msg).__name__}")


def _check_version(cls, version):
    cls._plan(version)


def _encode_frame(cls, header, header_version, msg, version):
    out = bytearray(4)
    out += header.encode(header_version)
    # The class's writer, not msg.encode: a subclass's own encode() does not change its fields' bytes.
    out += cls._encode_body(msg, version)
    size = len(out) - 4
    if size > 0x7FFFFFFF:
        raise EncodeError(f"frame of {size} bytes exceeds the int32 size prefix")
    _FIXED["int32"].pack_into(out, 0, size)
    return bytes(out)


def _header(cls, **values):
    # As the compiled twin does: the attributes set directly, no keyword parsing.
    header = cls.__new__(cls)
    for attr in cls._attrs:
        setattr(header, attr, values[attr])
    header.unknown_tagged_fields = None
    return header


# Both encoders check, in this order: the message's class, the version, the
# header's values, the body's; the compiled twin does the same.
def encode_request(msg, version, correlation_id, client_id=None):
    """A complete request frame: size prefix, request header, body."""
    api_key = _check_message(msg, _REQUEST_KEYS, "request")
    cls = _REQUEST_CLASSES[api_key]
    _check_version(cls, version)
    header = _header(RequestHeader, request_api_key=api_key, request_api_version=version,  # noqa: F821
                     correlation_id=correlation_id, client_id=client_id)
    return _encode_frame(cls, header, _schema.request_header_version(api_key, version), msg, version)


def encode_response(msg, version, correlation_id):
    """A complete response frame: size prefix, response header, body."""
    api_key = _check_message(msg, _RESPONSE_KEYS, "response")
    cls = _RESPONSE_CLASSES[api_key]
    _check_version(cls, version)
    header = _header(ResponseHeader, correlation_id=correlation_id)  # noqa: F821
    return _encode_frame(cls, header, _schema.response_header_version(api_key, version), msg, version)


def _open_frame(frame, views=False):
    """A reader of the bytes after the size prefix, checked against it (``views`` as for ``decode``)."""
    try:
        view = memoryview(frame).cast("B")
    except TypeError:
        raise ArgumentTypeError(f"expected a bytes-like object, not {type(frame).__name__}") from None
    n = len(view)
    if n < 4:
        raise DecodeError(f"truncated: a frame needs 4 size bytes, {n} given", 0)
    (size,) = _FIXED["int32"].unpack_from(view, 0)
    if size != n - 4:
        raise DecodeError(f"size prefix says {size} bytes but the frame has {n - 4}", 0)
    return _Reader(view[4:], views)


def _read_request_header(r, max_elements):
    if r.end < 4:
        raise DecodeError("truncated request header", 4)
    api_key, api_version = _struct.unpack_from(">hh", r.buf, 0)
    try:
        header_version = _schema.request_header_version(api_key, api_version)
    except KeyError:
        # Not a message kwire knows: every api since Kafka 2.4 uses header v2
        # exactly when it is flexible, which cannot be told from here; v1 is
        # what the fixed part of both looks like, so read that much.
        header_version = 1
    r.set_limit(max_elements)
    return _read_header(r, RequestHeader, header_version)  # noqa: F821


def _read_header(r, cls, version):
    """The header at the start of the frame; the body follows it."""
    return cls._decode_body(r, version, allow_trailing=True)


def _read_body(r, cls, version):
    """The body after the header (its version already checked), error offsets made relative to the frame."""
    try:
        return cls._decode_body(r, version)
    except DecodeError as e:
        if e.offset is not None:
            e.offset += 4
        raise


def decode_request(frame, *, max_elements=None, views=False):
    """``(RequestHeader, message)`` from a complete request frame.

    ``max_elements`` caps the array elements and tagged fields built from the
    whole frame, header included, and ``views`` makes bytes fields read-only
    memoryviews of the frame, as for the message classes' ``decode``."""
    r = _open_frame(frame, views)
    header = _read_request_header(r, max_elements)
    cls = _REQUEST_CLASSES.get(header.request_api_key)
    if cls is None:
        raise UnsupportedVersionError(f"api key {header.request_api_key} (request) is not supported by kwire")
    _check_version(cls, header.request_api_version)
    return header, _read_body(r, cls, header.request_api_version)


def decode_response(frame, api_key, version, *, max_elements=None, views=False):
    """``(ResponseHeader, message)`` from a complete response frame.

    Responses do not say what they answer: pass the api key and version of the
    request with the same correlation id.  ``max_elements`` and ``views`` as
    for :func:`decode_request`."""
    # The api key and version come from the caller, not the frame: check them before reading it.
    _check_response_key(api_key, _RESPONSE_CLASSES)
    cls = _RESPONSE_CLASSES[api_key]
    _check_version(cls, version)
    r = _open_frame(frame, views)
    r.set_limit(max_elements)
    header = _read_header(r, ResponseHeader, _schema.response_header_version(api_key, version))  # noqa: F821
    return header, _read_body(r, cls, version)


def split_request(frame):
    """``(RequestHeader, body)`` of a request frame; ``body`` is a memoryview.

    Works for any api key, so a proxy or capture tool can read the header of
    requests kwire has no body codec for."""
    r = _open_frame(frame)
    header = _read_request_header(r, None)
    return header, memoryview(frame).cast("B")[4 + r.pos:]


def decode_request_header(frame):
    """The :class:`RequestHeader` of a request frame, of any api key."""
    return _read_request_header(_open_frame(frame), None)


__all__ += ["decode_request", "decode_request_header", "decode_response", "encode_request", "encode_response",
            "split_request"]
