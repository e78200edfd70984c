"""Cluster metadata and JoinGroup members built with kafka-python's and aiokafka's own classes, as each client's
coordinator hands them to an assignor: the inputs of the adapter tests."""

from kafka.cluster import ClusterMetadata as KPCluster
from kafka.protocol.consumer.group import JoinGroupResponse as KPJoinGroupResponse
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription
from kafka.protocol.metadata import MetadataResponse as KPMetadataResponse


def kp_cluster(topics, broker_racks=("r0",)):
    """A real kafka-python ClusterMetadata fed a MetadataResponse v1 (which carries racks).

    ``topics`` maps topic -> one replica broker list per partition."""
    V = 1
    T = KPMetadataResponse.MetadataResponseTopic
    P = T.MetadataResponsePartition
    brokers = [
        KPMetadataResponse.MetadataResponseBroker(node_id=i, host="h", port=9092 + i, rack=r, version=V)
        for i, r in enumerate(broker_racks)
    ]
    ts = [
        T(
            error_code=0,
            name=t,
            is_internal=False,
            partitions=[
                P(error_code=0, partition_index=p, leader_id=reps[0], replica_nodes=list(reps), isr_nodes=list(reps), version=V)
                for p, reps in enumerate(parts)
            ],
            version=V,
        )
        for t, parts in topics.items()
    ]
    cluster = KPCluster(bootstrap_servers="localhost:9092")
    cluster.update_metadata(KPMetadataResponse(version=V, brokers=brokers, controller_id=0, topics=ts))
    return cluster


def kp_members(subs):
    """JoinGroupResponse members as kafka-python's coordinator hands them to assign()."""
    out = []
    for mid, (instance, sub) in subs.items():
        m = KPJoinGroupResponse.JoinGroupResponseMember(member_id=mid, group_instance_id=instance, metadata=sub.encode(), version=5)
        m.metadata = ConsumerProtocolSubscription.decode(m.metadata)
        out.append(m)
    return out


def aio_cluster(counts):
    from aiokafka.cluster import ClusterMetadata
    from aiokafka.protocol.metadata import MetadataResponse_v0

    resp = MetadataResponse_v0(
        [(0, "h", 9092)],
        [(0, t, [(0, p, 0, [0], [0]) for p in range(n)]) for t, n in counts.items()],
    )
    cluster = ClusterMetadata()
    cluster.update_metadata(resp)
    return cluster
