"""Kafka's text form of a topic id, written once for the codec, the batch decoder and the assignors.

The wire carries a topic id as 16 raw bytes (the schema's ``uuid`` type).  Kafka prints it with
``Uuid.toString``: the bytes in URL-safe base64 without padding, 22 characters.  Captures' tables, the
server assignors' error texts and their accepted inputs use the same form, so a user can match an id
from a table with the one ``kafka-topics --describe`` prints.
"""

from __future__ import annotations

import base64


def topic_id_text(raw) -> str:
    """``Uuid.toString`` of 16 bytes (bytes, bytearray or memoryview)."""
    return base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode("ascii")
