"""kwire's one error tree.

Everything kwire raises on purpose derives from :class:`KwireError`. Each
class also derives from the builtin a caller would have caught before kwire
had its own (``ValueError`` for bad bytes and values, ``TypeError`` for an
argument of the wrong type, ``ImportError`` for a missing compiled module),
so code written against the builtins keeps working.
"""


class KwireError(Exception):
    """Base class of every error kwire raises on purpose."""


def _format_path(segments):
    out = []
    for seg in segments:
        if isinstance(seg, int):
            out.append(f"[{seg}]")
        else:
            out.append(f".{seg}" if out else seg)
    return "".join(out)


class _PathError(KwireError, ValueError):
    # The failing leaf knows only the byte offset; each enclosing struct and
    # array prepends its field name or index while the error unwinds, which
    # costs nothing on the success path.
    def __init__(self, reason, offset=None, path=None):
        super().__init__(reason)
        self.reason = reason
        self.offset = offset
        self._segments = list(path) if path else []

    def prepend_path(self, segment):
        """Put a field name or array index in front of the path; returns the error.

        The decoders and encoders call it while the error unwinds through each
        enclosing struct and array, so it is public to them, not a user's tool."""
        self._segments.insert(0, segment)
        return self

    @property
    def path(self):
        """The field path, for example ``members[3].member_id`` ("" at top level)."""
        return _format_path(self._segments)

    def __str__(self):
        where = []
        path = self.path
        if path:
            where.append(f"at {path}")
        if self.offset is not None:
            where.append(f"offset {self.offset}")
        return f"{self.reason} ({', '.join(where)})" if where else self.reason

    def __reduce__(self):
        return (type(self), (self.reason, self.offset, self._segments))


class DecodeError(_PathError):
    """Bytes that are not a valid encoding of the requested message.

    ``offset`` is the byte position where decoding failed and ``path`` the
    field being read (for example ``members[3].member_id``)."""


class EncodeError(_PathError):
    """A value that cannot be written: wrong type, out of range, too long."""


class UnsupportedVersionError(KwireError):
    """An api version outside the valid range, or a non-default value in a
    field that the chosen version lacks."""


class FrameTooLargeError(DecodeError):
    """A frame whose declared size exceeds the configured maximum."""


class AssignmentError(KwireError, ValueError):
    """Assignor input that cannot describe a real group: duplicate member ids,
    negative partition counts, rack lists that do not match the topic, an
    unknown strategy."""


class LimitExceededError(DecodeError):
    """Valid bytes whose decoded form would exceed a limit the caller set
    (``max_elements``): the peer may be honest, but the caller refused to
    build that much from one input."""


class CorruptRecordError(DecodeError):
    """A record batch (the records of Produce and Fetch) that is not valid:
    truncated, a length beyond its batch or record, an over-long varint, a
    record count that disagrees with the records present.  The base class of
    every error the record codec raises on bytes."""


class RecordCrcError(CorruptRecordError):
    """A record batch whose CRC-32C is not the checksum of its bytes."""


class UnsupportedRecordFormatError(CorruptRecordError):
    """A record batch kwire does not read: the legacy message formats (magic 0
    and 1), an unknown magic, or an unknown compression codec.  ``magic`` is
    the batch's magic when that is what kwire does not read, else None."""

    magic = None


class DecompressionLimitError(CorruptRecordError, LimitExceededError):
    """A compressed record batch that inflates beyond the caller's
    ``max_decompressed_size``: a decompression bomb, or a batch larger than
    the caller agreed to hold.  Checked while decompressing."""


class ArgumentTypeError(KwireError, TypeError):
    """An argument of the wrong type: not bytes-like where bytes are expected,
    a ``max_elements`` or ``max_frame_size`` that is not an int, an Arrow
    column of the wrong type."""


class FieldDeletionError(KwireError, AttributeError):
    """``del`` of a message's attribute: a message always has every field of
    its schema (assign None or a value instead)."""


class ArgumentValueError(KwireError, ValueError):
    """An argument of the right type but outside what it may be: a negative
    ``max_elements`` or ``max_frame_size``, an implementation other than
    "python" or "cython"."""


class CaptureFormatError(KwireError, ValueError):
    """A file that is not what the pipeline reads: a capture without kwire's
    columns, a pcap of a link type kwire does not parse."""


class ShutdownError(KwireError, RuntimeError):
    """Something kwire runs in the background did not stop when asked: the
    thread of a :class:`kwire.testing.MockCluster` leaving its ``with`` block."""


class UnreachableError(KwireError, TimeoutError):
    """A cluster did not answer in time: a :class:`kwire.group.MemberDriver`
    whose bootstrap broker gave no metadata within its request timeout (a
    ``TimeoutError`` too, which is what callers caught before)."""


class ExtensionMissingError(KwireError, ImportError):
    """kwire's compiled module is missing from an install that was built with
    extensions (reinstall with a C compiler, or set KWIRE_NO_EXTENSIONS=1)."""
