"""The analysis's tables from a pandas frame of events, as the tests compare
them: the Spark stage's reduction of decoded frames to events
(:func:`events_from_frames`, the Spark stage's twin in pandas), then each
table of the pipeline from those events, the way the Spark stages' bucket
analysis makes it, one table at a time.
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa

from kwire.pipeline._events import (ASSIGNMENT_SCHEMA, BAD_FRAME_SCHEMA, CONSUMER_GROUP_DESCRIBE,
                                    CONSUMER_GROUP_HEARTBEAT, DEFAULT_MAX_PARTITIONS, EVENT_COLUMNS, GROUP_API_KEYS,
                                    HEARTBEAT, METADATA, REBALANCE_SCHEMA, REQUEST, RESPONSE)
from kwire.pipeline._rebalances import assignment_columns, rebalance_rows
from kwire.pipeline._timeline import split_metadata, timelines_of, timelines_of_records
from kwire.pipeline._whatif_batch import whatif_table


def events_from_frames(frames: pa.Table) -> pd.DataFrame:
    """The reduction the Spark stage does, in pandas: group frames only,
    heartbeat requests dropped, successful heartbeats folded into the last
    one per (group, member, generation); and the Metadata responses, which
    the Spark stage reads apart (:func:`kwire.pipeline._metadata.metadata_partition_counts`)."""
    for name in ("ts", "request_ts"):
        i = frames.schema.get_field_index(name)
        frames = frames.set_column(i, name, frames.column(name).cast(pa.int64()))
    frames = frames.to_pandas()
    group = frames["group_id"].notna() & frames["api_key"].isin(GROUP_API_KEYS)
    metadata = (frames["api_key"] == METADATA) & (frames["direction"] == RESPONSE)
    f = frames[group | metadata]
    f = f[f["decode_error"].isna()]
    hb_ok = (f["api_key"] == HEARTBEAT) & (f["direction"] == RESPONSE) & (f["error_code"] == 0)
    keep = f[~hb_ok & ~((f["api_key"] == HEARTBEAT) & (f["direction"] == REQUEST))]
    hb = f[hb_ok].groupby(["group_id", "member_id", "generation_id"], as_index=False).agg(
        ts=("request_ts", "max"), seq=("seq", "max"))
    hb["api_key"] = HEARTBEAT
    hb["direction"] = RESPONSE
    hb["error_code"] = 0
    out = pd.concat([keep, hb, consumer_events_from_frames(frames[frames["decode_error"].isna()])], ignore_index=True)
    for c in EVENT_COLUMNS:
        if c not in out:
            out[c] = None
    return out[EVENT_COLUMNS]


def consumer_events_from_frames(frames: pd.DataFrame) -> pd.DataFrame:
    """The consumer protocol's events, as the contract words the reduction and the Spark stage's
    :func:`~kwire.pipeline._spark_stages.consumer_events` must give them: each response paired with its request
    here (by ``request_seq``), where the Spark stage finds the epoch changes without that join."""
    c = frames[(frames["api_key"] == CONSUMER_GROUP_HEARTBEAT) & frames["group_id"].notna()]
    requests, responses = c[c["direction"] == REQUEST], c[c["direction"] == RESPONSE]
    request_epoch = dict(zip(requests["seq"], requests["generation_id"]))
    informative_request = ((requests["generation_id"] <= 0) | requests["topics"].notna()
                           | requests["subscribed_regex"].notna() | requests["topic_partitions"].notna())
    informative_response = ((responses["error_code"] != 0) | responses["topic_partitions"].notna()
                            | (responses["generation_id"] != responses["request_seq"].map(request_epoch)))
    plain = responses[~informative_response].sort_values("seq")
    last = plain.groupby(["group_id", "member_id", "generation_id"], dropna=False).tail(1).copy()
    last["ts"] = last["request_ts"]
    d = frames[(frames["api_key"] == CONSUMER_GROUP_DESCRIBE) & (frames["direction"] == RESPONSE)
               & frames["described"].notna()].explode("described")
    d = d[d["described"].map(lambda g: isinstance(g, dict) and g["group_id"] is not None).astype(bool)].copy()
    d["group_id"] = d["described"].map(lambda g: g["group_id"])
    d["described"] = d["described"].map(lambda g: [g])
    return pd.concat([requests[informative_request], responses[informative_response], last, d], ignore_index=True)


def _frame(rows, schema):
    table = pa.Table.from_pylist(rows, schema=schema)
    return table.to_pandas()


def rebalances_of(pdf: pd.DataFrame, max_partitions=DEFAULT_MAX_PARTITIONS, counts=None) -> pd.DataFrame:
    """The ``rebalances`` table of a pandas events frame (:data:`EVENT_COLUMNS`); ``counts``: the capture's
    Metadata counts, or None to read them from the Metadata responses among the events."""
    return _frame([r for tl in timelines_of(pdf, max_partitions, counts) for r in rebalance_rows(tl)],
                  REBALANCE_SCHEMA)


def assignments_of(pdf: pd.DataFrame, max_partitions=DEFAULT_MAX_PARTITIONS, counts=None) -> pd.DataFrame:
    return pa.table(assignment_columns(timelines_of(pdf, max_partitions, counts)), schema=ASSIGNMENT_SCHEMA).to_pandas()


def whatif_of(pdf: pd.DataFrame, max_partitions=DEFAULT_MAX_PARTITIONS, timer=None, counts=None) -> pd.DataFrame:
    return whatif_table(timelines_of(pdf, max_partitions, counts), timer=timer).to_pandas()


def bad_frames_of(pdf: pd.DataFrame, max_partitions=DEFAULT_MAX_PARTITIONS, counts=None) -> pd.DataFrame:
    """The frames the analysis left out: the groups' and, when the Metadata
    comes from ``pdf`` itself (``counts`` None), the Metadata responses'."""
    records, known, bad = split_metadata(pdf, counts, max_partitions)
    rows = [r for tl in timelines_of_records(records, max_partitions, known) for r in tl.bad_frames]
    return pa.concat_tables([bad, pa.Table.from_pylist(rows, schema=BAD_FRAME_SCHEMA)]).to_pandas()
