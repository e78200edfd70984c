"""``python -m kwire demo``: one consumer-group round trip, end to end.

Three consumers join a group; the leader decodes everyone's Subscription
from the JoinGroup response, runs an assignor and builds the SyncGroup
request; each member decodes its Assignment.  Every frame goes through
kwire's codec, so this doubles as a smoke test of an installation.
"""

import argparse
import sys

import kwire


def demo(strategy="range"):
    print(f"kwire {kwire.__version__}, codec implementation: {kwire.IMPLEMENTATION}")
    topics = {"orders": 4, "payments": 3}
    members = ["consumer-1", "consumer-2", "consumer-3"]
    joins = []
    for i, member_id in enumerate(members):
        sub = kwire.Subscription(topics=sorted(topics))
        req = kwire.JoinGroupRequest(group_id="demo-group", session_timeout_ms=45000, rebalance_timeout_ms=300000,
                                     member_id=member_id, protocol_type="consumer",
                                     protocols=[kwire.JoinGroupRequestProtocol(name=strategy, metadata=sub.encode(3))])
        frame = kwire.encode_request(req, 9, correlation_id=i, client_id=member_id)
        _header, decoded = kwire.decode_request(frame)
        joins.append(decoded)
        print(f"JoinGroup v9 from {member_id}: {len(frame)} bytes")

    # The coordinator answers the leader with every member's metadata.
    response = kwire.JoinGroupResponse(
        generation_id=1, protocol_type="consumer", protocol_name=strategy, leader=members[0], member_id=members[0],
        members=[kwire.JoinGroupResponseMember(member_id=j.member_id, metadata=j.protocols[0].metadata) for j in joins])
    frame = kwire.encode_response(response, 9, correlation_id=0)
    _header, response = kwire.decode_response(frame, kwire.JoinGroupResponse.api_key, 9)
    print(f"JoinGroup response to the leader: {len(frame)} bytes, {len(response.members)} members")

    sync = kwire.SyncGroupRequest(group_id="demo-group", generation_id=1, member_id=members[0],
                                  protocol_type="consumer", protocol_name=strategy,
                                  assignments=kwire.leader_assignments(strategy, response, topics))
    frame = kwire.encode_request(sync, 5, correlation_id=9, client_id=members[0])
    print(f"SyncGroup v5 from the leader ({strategy}): {len(frame)} bytes")
    for a in kwire.decode_request(frame)[1].assignments:
        assignment = kwire.Assignment.decode(a.assignment)
        parts = ", ".join(f"{tp.topic}{tp.partitions}" for tp in assignment.assigned_partitions)
        print(f"  {a.member_id}: {parts}")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="kwire", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("demo", help="run one consumer-group round trip through the codec and an assignor")
    d.add_argument("--strategy", default="range", choices=["range", "roundrobin", "sticky", "cooperative-sticky"])
    args = parser.parse_args(argv)
    if args.command == "demo":
        return demo(args.strategy)
    return 2


if __name__ == "__main__":
    sys.exit(main())
