"""What both leader kernels (``_leader_c``, ``_leader_py``) share: how a
member's metadata that is not bytes is refused, the byte
layout of the ``ConsumerProtocolAssignment`` they write, the table of
topic names they copy from, and the columns they read the members'
``ConsumerProtocolSubscription`` bytes into (:class:`SubscriptionColumns`)
and eager sticky userData into (:class:`StickyUserDataColumns`).

The layout is the codec schema's ``ConsumerProtocolAssignment`` (kwire/codec/
_schema.py) at every version kwire knows, 0 to 3, which all have the same
fields; tests/test_leader_path.py holds the schema to this and the kernels'
bytes to ``kwire.codec.Assignment(...).encode(version)``:

    int16   version
    int32   number of topics, then per topic (in order of first appearance
            in the member's list):
        int16   topic name length, then the UTF-8 name
        int32   number of partitions, then each partition as int32
    int32   userData length: -1 (null), as Java's leader writes it
"""

from __future__ import annotations

from typing import List, NamedTuple, Optional, Tuple

import numpy as np

#: Versions whose layout is the one above.
ASSIGNMENT_VERSIONS = range(0, 4)
#: An int16 string length.
MAX_NAME_BYTES = 0x7FFF


def topic_name_table(topics: List[str]) -> Optional[Tuple[np.ndarray, bytes]]:
    """``(offsets, blob)``: topic ``t``'s UTF-8 name is ``blob[offsets[t]:offsets[t + 1]]``.

    None when a name cannot be written (not encodable as UTF-8, or longer
    than an int16 length): the caller then encodes with the codec, which
    refuses such a name with its own typed error."""
    joined = "".join(topics)
    if joined.isascii():
        # A name's length is its UTF-8 length: one join and one encode, not one per name.
        blob = joined.encode("ascii")
        lengths = np.fromiter(map(len, topics), dtype=np.int64, count=len(topics))
    else:
        try:
            encoded = [t.encode("utf-8") for t in topics]
        except UnicodeEncodeError:
            return None
        blob = b"".join(encoded)
        lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
    offsets = np.zeros(len(topics) + 1, dtype=np.int64)
    if len(topics):
        if lengths.max() > MAX_NAME_BYTES:
            return None
        np.cumsum(lengths, out=offsets[1:])
    return offsets, blob


def metadata_type_error(i: int, metadata) -> str:
    """The AssignmentError message both twins' ``member_rows`` give member ``i``'s non-bytes metadata."""
    return f"members[{i}].metadata must be Subscription bytes, got {type(metadata).__name__}"


class SubscriptionColumns(NamedTuple):
    """Distinct ``ConsumerProtocolSubscription`` byte strings, read into columns.

    Row ``k`` is the ``k``-th byte string.  Topic ids are local to one read:
    ``names[i]`` is topic ``i``, numbered in order of first appearance
    (subscribed topics, then owned entries, byte string by byte string).  A
    row whose topics array is the previous row's shares its topic list."""

    #: Every topic name read (subscribed or owned), once.
    names: List[str]
    #: int32[D]: the version each was written at (a newer one is read with the newest layout).
    version: np.ndarray
    #: int32[D]: which topic list each row subscribes to.
    topic_list: np.ndarray
    #: int64[L+1], int32[...]: the topic lists, topic ids in the order written (repeats kept).
    list_ptr: np.ndarray
    list_topic: np.ndarray
    #: int64[D+1], int32[E]: each row's owned entries' topics (an entry may list no partitions).
    entry_ptr: np.ndarray
    entry_topic: np.ndarray
    #: int64[D+1], int32[P], int32[P]: each row's owned partitions as written, with their entry's topic.
    owned_ptr: np.ndarray
    owned_topic: np.ndarray
    owned_partition: np.ndarray
    #: int32[D]: generationId (-1 before v2).
    generation: np.ndarray
    #: rackId (None before v3) and userData, per row.
    rack: List[Optional[str]]
    user_data: List[Optional[bytes]]


class ClaimColumns(NamedTuple):
    """Partitions claimed by each row, as CSR over topic ids ``names``."""

    #: Topic ``i`` is ``names[i]``.
    names: List[str]
    #: int64[D+1], int32[P], int32[P]: each row's claims in the order written.
    ptr: np.ndarray
    topic: np.ndarray
    partition: np.ndarray


class StickyUserDataColumns(NamedTuple):
    """Eager ``StickyAssignorUserData`` byte strings (or None), one a row,
    read where they are exactly one V1 message.

    Only those rows are read: any other (None, empty, V0, broken, trailing
    bytes, a topic that is not UTF-8) is left unread, with no claims and
    generation -1, for Java's lenient reader (``_userdata``)."""

    #: bool[D]: which rows were read.
    read: np.ndarray
    #: int32[D]: the generation of each row read.
    generation: np.ndarray
    #: Claims of the rows read; ``claims.names`` starts with the names the
    #: reader was given, same ids, then each new topic in order of first appearance.
    claims: ClaimColumns
