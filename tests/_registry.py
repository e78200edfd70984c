"""What both assignor registries promise once a name is unregistered: the client's (``register_strategy``) and
the coordinator's (``register_server_assignor``)."""

import pytest

from kwire.errors import AssignmentError


def assert_unregistered(registry, name, unregister, lookup=None):
    """``name`` is gone from ``registry`` (a mapping of names), unregistering it again is an AssignmentError, and
    so is ``lookup()`` when given (a lookup of the name, or of an alias it had)."""
    assert name not in registry
    with pytest.raises(AssignmentError):
        unregister(name)
    if lookup is not None:
        with pytest.raises(AssignmentError):
            lookup()
