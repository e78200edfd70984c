"""A user's code, as mypy --strict sees it through kwire's stubs (checked by tests/test_typing.py).

Not a test module itself (pytest collects test_*.py only), but it runs: tests/test_typing.py also executes
``main()``, so the sample cannot drift from what kwire really does while still type-checking.
"""

from __future__ import annotations

import kwire
from kwire.codec import split_frames


def join_request(topics: list[str]) -> bytes:
    sub: bytes = kwire.Subscription(topics=topics, rack_id="rack-a").encode(3)
    protocol = kwire.JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=sub)
    req = kwire.JoinGroupRequest(group_id="g", session_timeout_ms=45000, member_id="", protocol_type="consumer",
                                 protocols=[protocol])
    return kwire.encode_request(req, 9, correlation_id=1, client_id="app")


def leader_reply(metadata: bytes) -> bytes:
    member = kwire.JoinGroupResponseMember(member_id="m-1", group_instance_id=None, metadata=metadata)
    resp = kwire.JoinGroupResponse(generation_id=1, protocol_name="range", leader="m-1", member_id="m-1",
                                   members=[member])
    return kwire.encode_response(resp, 9, correlation_id=1)


def sync_assignments(frame: bytes) -> list[kwire.SyncGroupRequestAssignment]:
    header, resp = kwire.decode_response(frame, kwire.JoinGroupRequest.api_key, 9)
    correlation: int = header.correlation_id
    assert correlation == 1
    # The api key literal selects JoinGroupResponse, so its fields are typed, not Any.
    leader: str = resp.leader
    protocol: str | None = resp.protocol_name
    assert leader == "m-1" and protocol is not None
    out: list[kwire.SyncGroupRequestAssignment] = kwire.leader_assignments(protocol, resp, {"orders": 12})
    return out


def members_of(frame: bytes) -> list[tuple[str, list[str]]]:
    header, req = kwire.decode_request(frame)
    api_key: int = header.request_api_key
    if not isinstance(req, kwire.JoinGroupRequest):
        raise TypeError(f"api key {api_key} is not JoinGroup")
    result = []
    for p in req.protocols:
        sub = kwire.Subscription.decode(p.metadata)
        result.append((p.name, sub.topics))
    return result


def assign_directly() -> dict[str, list[tuple[str, int]]]:
    subs = [kwire.Subscription(topics=["orders", "audit"]) for _ in range(3)]
    members = [kwire.GroupMember(f"consumer-{i}", None, s) for i, s in enumerate(subs)]
    return kwire.assign("roundrobin", members, {"orders": 4, "audit": 2})


def stream(frames: list[bytes]) -> int:
    splitter = kwire.FrameSplitter(max_frame_size=1 << 20)
    got = splitter.feed(b"".join(frames))
    complete, rest = split_frames(b"".join(frames))
    assert len(complete) == len(got) and rest == b"" and splitter.pending == 0
    return len(got)


def refuse(data: bytes) -> str:
    try:
        kwire.HeartbeatRequest.decode(data, 4, max_elements=10)
    except kwire.DecodeError as e:
        offset: int | None = e.offset
        return f"{e.path or '<top>'} at {offset}"
    return "decoded"


def main() -> None:
    frame = join_request(["orders"])
    assert members_of(frame) == [("range", ["orders"])]
    payload = kwire.Subscription(topics=["orders"]).encode(3)
    assignments = sync_assignments(leader_reply(payload))
    assert [a.member_id for a in assignments] == ["m-1"]
    assert sum(len(v) for v in assign_directly().values()) == 6
    assert stream([frame, frame]) == 2
    assert refuse(b"\x00") != "decoded"
    impl: str = kwire.IMPLEMENTATION
    assert impl in ("cython", "python")


if __name__ == "__main__":
    main()
