"""What the coordinator is told with each request, and what it hands back."""

from typing import Any, NamedTuple


class RequestContext(NamedTuple):
    """One request's circumstances, passed to every handler with the decoded request (immutable).

    ``handle`` is the caller's opaque route back to the connection; ``version`` the request's api version
    (its answer is encoded at the same one); ``now`` the caller's clock in ms; ``client_id`` the request
    header's client id (the prefix of a dynamic member's new id) and ``client_host`` the peer address as
    Java prints it, both reported by DescribeGroups."""

    handle: Any
    version: int
    now: int
    client_id: str = ""
    client_host: str = "/127.0.0.1"


class Reply(NamedTuple):
    """One answer ready to be sent: the caller's ``handle`` as given with the request, the response
    message, and the api version to encode it at (the request's)."""

    handle: Any
    version: int
    response: Any
