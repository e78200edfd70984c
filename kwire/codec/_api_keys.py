"""Api keys and version ranges, derived from the schema tables (the one place each api key is written).

``ApiKey.JOIN_GROUP == 11``: an ``IntEnum`` with one member per api the tables define, named as Kafka's
``ApiKeys`` names it (the request class's name without ``Request``, in upper snake case).  ``API_VERSIONS_RANGE``
maps each key to the ``(min, max)`` versions kwire's tables have.  A new api in ``_schema.py`` appears here with
no other edit.
"""

import re
from enum import IntEnum

from kwire.codec import _schema

__all__ = ["API_VERSIONS_RANGE", "ApiKey"]


def _enum_name(request_class_name):
    stem = request_class_name[: -len("Request")]
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", stem).upper()


_REQUESTS = sorted((m for m in _schema.API_MESSAGES if m.kind == "request"), key=lambda m: m.api_key)

ApiKey = IntEnum("ApiKey", [(_enum_name(m.name), m.api_key) for m in _REQUESTS], module=__name__)
ApiKey.__doc__ = "Kafka's api keys, one member per api in kwire's schema tables."

API_VERSIONS_RANGE = {ApiKey(m.api_key): (m.valid.lo, m.valid.hi) for m in _REQUESTS}
