"""What other APIs read from a consumer-protocol group: ConsumerGroupDescribe (69), ListGroups, and the
member-epoch checks of OffsetCommit and OffsetFetch.

Functions of one :class:`ConsumerGroup` (or None for a group the consumer coordinator does not have); the
coordinator's methods of the same names call them.
"""

from kwire.codec import (
    ConsumerGroupDescribeAssignment,
    ConsumerGroupDescribedGroup,
    ConsumerGroupDescribedMember,
    ConsumerGroupDescribeTopicPartitions,
    ErrorCode,
)

__all__ = ["described_group", "listed_group", "offset_commit_error", "offset_fetch_error",
           "GROUP_TYPE", "PROTOCOL_TYPE", "CONSUMER_MEMBER", "CLASSIC_MEMBER"]

# ListGroups v5's GroupType and the ProtocolType a consumer group lists with (ModernGroup.asListedGroup).
GROUP_TYPE = "consumer"
PROTOCOL_TYPE = "consumer"

# ConsumerGroupDescribe v1's MemberType (ConsumerGroupMember.asConsumerGroupDescribeMember): 0 a classic-protocol
# member of a mixed group, 1 a consumer-protocol member; -1 (the default) is what v0 cannot say.
CLASSIC_MEMBER = 0
CONSUMER_MEMBER = 1


def _assignment(assigned, names):
    # Topics missing from the metadata are left out, as ConsumerGroupMember.asConsumerGroupDescribeMember does.
    return ConsumerGroupDescribeAssignment(topic_partitions=[
        ConsumerGroupDescribeTopicPartitions(topic_id=tid, topic_name=names[tid], partitions=sorted(ps))
        for tid, ps in sorted(assigned.items()) if tid in names])


def described_group(group_id, group, topic_names, default_assignor):
    """``ConsumerGroup.asDescribedGroup`` for ConsumerGroupDescribe; ``group`` None (missing, or not a
    consumer group) answers GROUP_ID_NOT_FOUND with no message, an empty id INVALID_GROUP_ID
    (``GroupMetadataManager.consumerGroupDescribe``)."""
    if not group_id:
        return ConsumerGroupDescribedGroup(group_id=group_id or "", error_code=ErrorCode.INVALID_GROUP_ID)
    if group is None:
        return ConsumerGroupDescribedGroup(group_id=group_id, error_code=ErrorCode.GROUP_ID_NOT_FOUND)
    members = []
    for m in group.members.values():
        members.append(ConsumerGroupDescribedMember(
            member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
            member_epoch=m.member_epoch, client_id=m.client_id, client_host=m.client_host,
            subscribed_topic_names=sorted(m.subscribed_topic_names), subscribed_topic_regex="",
            assignment=_assignment(m.assigned, topic_names),
            target_assignment=_assignment(group.target_of(m.member_id), topic_names),
            member_type=CLASSIC_MEMBER if getattr(m, "classic", None) is not None else CONSUMER_MEMBER))
    return ConsumerGroupDescribedGroup(
        group_id=group_id, group_state=group.state().value, group_epoch=group.group_epoch,
        assignment_epoch=group.target_epoch, assignor_name=group.preferred_assignor(default_assignor),
        members=members)


def listed_group(group):
    """``(group_id, protocol_type, state, group_type)`` as ListGroups lists a consumer group."""
    return group.group_id, PROTOCOL_TYPE, group.state().value, GROUP_TYPE


def offset_commit_error(group, member_id, member_epoch, api_version, transactional=False):
    """``ConsumerGroup.validateOffsetCommit`` for a consumer group (the caller has found it; a missing group
    is ``OffsetMetadataManager.validateOffsetCommit``'s case and the classic coordinator's).

    Epoch < 0 with no members is an admin commit and passes without a member check; otherwise the member
    must exist, a consumer-protocol member must commit at v9+ (or transactionally; a classic member of a mixed
    group at any version), and the epoch must be its
    current one: a commit made before a revocation keeps working because the epoch does not move while
    partitions are revoked.  Transactional commits see ILLEGAL_GENERATION for a stale epoch
    (``OffsetMetadataManager.validateTransactionalOffsetCommit``)."""
    if member_epoch < 0 and not group.members:
        return ErrorCode.NONE
    member = group.members.get(member_id)
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    classic = member.classic is not None
    if not transactional and not classic and api_version < 9:
        return ErrorCode.UNSUPPORTED_VERSION
    if member_epoch != member.member_epoch:
        # validateMemberEpoch: a classic member of a mixed group commits with its generation (= its member
        # epoch) and is told ILLEGAL_GENERATION, as a classic group would tell it.
        return ErrorCode.ILLEGAL_GENERATION if transactional or classic else ErrorCode.STALE_MEMBER_EPOCH
    return ErrorCode.NONE


def offset_fetch_error(group, member_id, member_epoch):
    """``ConsumerGroup.validateOffsetFetch``: a fetch without a member (null id, epoch < 0) is an admin read;
    otherwise the member must exist and the epoch be its current one."""
    if member_id is None and member_epoch < 0:
        return ErrorCode.NONE
    member = group.members.get(member_id)
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if member_epoch != member.member_epoch:
        return ErrorCode.ILLEGAL_GENERATION if member.classic is not None else ErrorCode.STALE_MEMBER_EPOCH
    return ErrorCode.NONE
