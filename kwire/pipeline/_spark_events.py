"""The ``events`` stage's reduction of the consumer protocol's (KIP-848) traffic, in the JVM.

ConsumerGroupHeartbeat exchanges are most of a consumer-protocol capture, as
Heartbeats are of a classic one: :func:`consumer_events` keeps the rows that
tell something and folds the keep-alives, and gives each group a
ConsumerGroupDescribe response describes a row of its own.
:func:`kwire.pipeline._spark_stages.events_stage` adds these rows to the
classic ones (docs/PIPELINE.md, "Stage 2, metadata and events").
"""

from __future__ import annotations

from kwire.pipeline._events import CONSUMER_GROUP_DESCRIBE, CONSUMER_GROUP_HEARTBEAT, EVENT_COLUMNS, REQUEST, RESPONSE


def _event_columns(frames, **given):
    """:data:`EVENT_COLUMNS` of ``frames``, times in µs; ``given``: columns' values instead of the frames' own."""
    from pyspark.sql import functions as F

    return frames.select(*[given[c].alias(c) if c in given
                           else F.unix_micros(c).alias(c) if c in ("ts", "request_ts") else F.col(c)
                           for c in EVENT_COLUMNS])


def consumer_events(frames):
    """The events of the consumer protocol's traffic (``frames`` decoded without error).

    Every ConsumerGroupHeartbeat row that tells something is kept: requests
    that join or leave (member epoch <= 0) or change what the member
    subscribes to or owns (a field that is null when unchanged is set), and
    responses with an error, an assignment, or a member epoch other than the
    request's.  The rest are keep-alives, folded as classic heartbeats are:
    one row per (group, member, member epoch), the last response's, with its
    request's time in ``ts``.

    A response's request epoch is not among its columns, and pairing every
    response with its request would cost a join of the bulk of the traffic.
    A member learns a new epoch from a response and sends it from then on, so
    the first plain response of a (group, member, epoch) is the one that
    brought the epoch exactly when its request came before every request of
    that member at that epoch: aggregating by (group, member, epoch) finds
    both, and also the last keep-alive.  ConsumerGroupDescribe responses give a row per group they
    describe (``group_id`` set, ``described`` holding that group)."""
    from pyspark.sql import functions as F

    cgh = frames.where((F.col("api_key") == CONSUMER_GROUP_HEARTBEAT) & F.col("group_id").isNotNull())
    is_request = F.col("direction") == REQUEST
    informs = F.when(is_request, (F.col("generation_id") <= 0) | F.col("topics").isNotNull()
                     | F.col("subscribed_regex").isNotNull() | F.col("topic_partitions").isNotNull()).otherwise(
        (F.col("error_code") != 0) | F.col("topic_partitions").isNotNull())
    informs = F.coalesce(informs, F.lit(True))  # a null where a value was due: not a keep-alive
    kept = _event_columns(cgh.where(informs))
    # The columns a keep-alive response has of its own (its error code is 0); the rest of its row is null.
    own = ["ts", "request_seq", "request_ts", "heartbeat_interval_ms"]
    times = {c: F.unix_micros(c) if c in ("ts", "request_ts") else F.col(c) for c in own}
    response_seq = F.when(~is_request, F.col("seq"))
    # Two aggregations.  The first, over the bulk, keeps only numbers in its
    # buffers (min_by / max_by of each column), which Spark aggregates in a
    # hash map; the instance id, a string, is part of its key instead.  The
    # second joins those few rows per (group, member, epoch).
    first = cgh.where(is_request | ~informs).groupBy(
        "group_id", "member_id", "generation_id", "group_instance_id").agg(
        F.min(F.when(is_request, F.col("seq"))).alias("first_request"),
        F.min(response_seq).alias("first_seq"), F.max(response_seq).alias("last_seq"),
        *[F.min_by(times[c], response_seq).alias(f"first_{c}") for c in own],
        *[F.max_by(times[c], response_seq).alias(f"last_{c}") for c in own])

    def side(which):
        fields = [F.col(f"{which}_seq").alias("seq")] + [F.col(f"{which}_{c}").alias(c) for c in own]
        return F.when(F.col(f"{which}_seq").isNotNull(), F.struct(*fields, "group_instance_id"))

    folded = first.groupBy("group_id", "member_id", "generation_id").agg(
        F.min("first_request").alias("first_request"), F.min(side("first")).alias("first"),
        F.max(side("last")).alias("last")).where(F.col("first").isNotNull())
    new_epoch = F.coalesce(F.col("first_request").isNull() | (F.col("first.request_seq") < F.col("first_request")),
                           F.lit(True))
    fixed = {"group_id": F.col("group_id"), "member_id": F.col("member_id"), "generation_id": F.col("generation_id"),
             "api_key": F.lit(CONSUMER_GROUP_HEARTBEAT).cast("short"), "direction": F.lit(RESPONSE).cast("byte"),
             "error_code": F.lit(0).cast("short")}
    schema = frames.schema

    def response_row(which, **given):
        cols = {c: F.col(f"{which}.{c}") for c in ["seq", "group_instance_id"] + own}
        cols.update(fixed)
        cols.update(given)
        return F.struct(*[cols.get(c, F.lit(None).cast(_event_type(schema, c))).alias(c) for c in EVENT_COLUMNS])

    rows = F.array_compact(F.array(
        F.when(new_epoch, response_row("first")),
        F.when(~new_epoch | (F.col("first.seq") != F.col("last.seq")),
               response_row("last", ts=F.col("last.request_ts")))))
    keep_alive = folded.select(F.explode(rows).alias("e")).select("e.*")
    described = frames.where((F.col("api_key") == CONSUMER_GROUP_DESCRIBE) & (F.col("direction") == RESPONSE)
                             & F.col("described").isNotNull())
    described = described.withColumn("d", F.explode("described")).where(F.col("d.group_id").isNotNull())
    described = _event_columns(described, group_id=F.col("d.group_id"), described=F.array(F.col("d")))
    return kept.unionByName(keep_alive).unionByName(described)


def _event_type(schema, column):
    """The Spark type of an event column (times are µs)."""
    from pyspark.sql import types as T

    return T.LongType() if column in ("ts", "request_ts") else schema[column].dataType
