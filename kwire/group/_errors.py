"""kwire's own errors of the group state machines.

Kafka's error codes, the answers the machines give and receive, are not defined here: they are
``kwire.codec.ErrorCode`` (one table for all of kwire).  For callers of earlier versions, which read codes
from this module (``kwire.group.errors.NOT_COORDINATOR``), any ``ErrorCode`` name still resolves here, and
``ERROR_NAMES`` is a view of that table.
"""

from kwire.codec import ErrorCode
from kwire.errors import KwireError

ERROR_NAMES = {int(code): code.name for code in ErrorCode}


def __getattr__(name):
    # kwire.group.errors.NOT_COORDINATOR is ErrorCode.NOT_COORDINATOR (PEP 562 module attribute).
    try:
        return ErrorCode[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


class GroupProtocolError(KwireError):
    """A call the group state machines cannot accept: a message of the wrong kind, an api version the
    message does not have, a response to a request that was never sent.  Distinct from a Kafka error
    code, which is an answer the machines give (or receive) on purpose."""


class GroupMemberFatalError(GroupProtocolError):
    """The coordinator answered with an error the Java client treats as fatal (FENCED_INSTANCE_ID,
    INCONSISTENT_GROUP_PROTOCOL, GROUP_MAX_SIZE_REACHED, ...): the member stops; ``error_code`` says why."""

    def __init__(self, error_code, message):
        super().__init__(message)
        self.error_code = error_code

    def __reduce__(self):
        return (type(self), (self.error_code, self.args[0]))
