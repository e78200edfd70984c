"""Pure twin of ``_leader_c``: each member's ``ConsumerProtocolAssignment``
bytes straight from an assignment's CSR arrays (layout in ``_leader_common``).
The two must return identical bytes."""

from __future__ import annotations

import struct
from typing import Dict, List

import numpy as np

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_NULL_USER_DATA = _I32.pack(-1)


def assignment_bytes(indptr, topic, partition, name_offsets, name_blob: bytes, version: int) -> List[bytes]:
    """One Assignment per member (row of ``indptr``): its partitions grouped
    by topic in order of the topic's first appearance, each group keeping the
    list's order."""
    ptr = np.asarray(indptr).tolist()
    topics = np.asarray(topic).tolist()
    parts = np.asarray(partition, dtype=">i4")
    offsets = np.asarray(name_offsets).tolist()
    header = _I16.pack(version)
    out = []
    for m in range(len(ptr) - 1):
        a, b = ptr[m], ptr[m + 1]
        groups: Dict[int, List[int]] = {}
        for i in range(a, b):
            groups.setdefault(topics[i], []).append(i)
        chunks = [header, _I32.pack(len(groups))]
        for t, rows in groups.items():
            name = name_blob[offsets[t]:offsets[t + 1]]
            chunks += (_I16.pack(len(name)), name, _I32.pack(len(rows)))
            if rows[-1] - rows[0] + 1 == len(rows):
                chunks.append(parts[rows[0]:rows[-1] + 1].tobytes())  # one contiguous run
            else:
                chunks.append(parts[rows].tobytes())
        chunks.append(_NULL_USER_DATA)
        out.append(b"".join(chunks))
    return out
