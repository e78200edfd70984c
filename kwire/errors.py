"""kwire's one error tree.

Everything kwire raises on bad input derives from :class:`KwireError`;
decode and encode errors are also ``ValueError`` so callers that already
catch that keep working.
"""


class KwireError(Exception):
    """Base class of every error kwire raises on purpose."""


class DecodeError(KwireError, ValueError):
    """Bytes that are not a valid encoding of the requested message.

    ``offset`` is the byte position where decoding failed and ``path`` the
    field being read (for example ``members[3].member_id``)."""

    def __init__(self, message, offset=None, path=None):
        self.offset = offset
        self.path = path
        where = []
        if path:
            where.append(f"at {path}")
        if offset is not None:
            where.append(f"offset {offset}")
        super().__init__(f"{message} ({', '.join(where)})" if where else message)


class EncodeError(KwireError, ValueError):
    """A value that cannot be written: wrong type, out of range, too long."""


class UnsupportedVersionError(KwireError):
    """An api version outside the valid range, or a field the version lacks."""


class AssignmentError(KwireError, ValueError):
    """Assignor input that cannot describe a real group: duplicate member ids,
    negative partition counts, rack lists that do not match the topic, an
    unknown strategy."""
