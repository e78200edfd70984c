"""The base of the group machines' state enums: str-valued, and printed as the bare value."""

from enum import Enum


class StrState(str, Enum):
    """A state that is also its string: ``"Stable" == GroupState.STABLE``, and ``str()``/``format()`` give
    ``"Stable"``, not ``"GroupState.STABLE"``, so messages and logs read as they did with plain strings."""

    __str__ = str.__str__
    __format__ = str.__format__
    # Hashed as the string it equals (Enum's own __hash__ is Python code; states key the answer tables).
    __hash__ = str.__hash__
