"""Kafka's error codes that the group protocol answers with, and kwire's own group errors.

The codes are Kafka's (``org.apache.kafka.common.protocol.Errors``); only those the classic group
protocol uses are named here.  ``ERROR_NAMES`` maps a code back to its name for messages and events.
"""

from kwire.errors import KwireError

NONE = 0
UNKNOWN_SERVER_ERROR = -1
UNKNOWN_TOPIC_OR_PARTITION = 3
REQUEST_TIMED_OUT = 7
OFFSET_METADATA_TOO_LARGE = 12
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
INVALID_GROUP_ID = 24
UNKNOWN_MEMBER_ID = 25
INVALID_SESSION_TIMEOUT = 26
REBALANCE_IN_PROGRESS = 27
GROUP_AUTHORIZATION_FAILED = 30
UNSUPPORTED_VERSION = 35
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69
MEMBER_ID_REQUIRED = 79
GROUP_MAX_SIZE_REACHED = 81
FENCED_INSTANCE_ID = 82
UNKNOWN_TOPIC_ID = 100

ERROR_NAMES = {code: name for name, code in list(globals().items()) if name.isupper() and isinstance(code, int)}


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
