"""The report's consumer-protocol section and figures, and the sentence for
a capture with no group traffic at all.

Runs on the driver over small pandas frames: the ``reconciliations`` table
(one row per group epoch bump) and per-kind counts of the membership and
anomaly tables.  The figures go into ``report.json`` under ``consumer``
(docs/PIPELINE.md lists the keys).
"""

from __future__ import annotations

import math
from collections import Counter

from kwire.codec import error_name

#: Groups listed in the section, worst stall first.
CONSUMER_TOP_GROUPS = 10

NO_GROUP_TRAFFIC = ("**The capture holds no consumer-group traffic at all**: no JoinGroup, SyncGroup, Heartbeat, "
                    "LeaveGroup or ConsumerGroupHeartbeat frame names a group, so there is nothing to analyse. Was the "
                    "group coordinator's traffic recorded?")


def counted(n, word, plural=None, fmt=None):
    """``n`` and ``word`` in the number that agrees with it ("1 group", "2 groups"); ``plural`` when adding an
    s is wrong, ``fmt`` to write the number (thousands separated by default)."""
    text = fmt(n) if fmt is not None else f"{n:,}"
    return f"{text} {word if n == 1 else plural or word + 's'}"


def _q(series, q):
    return float(series.quantile(q)) if len(series) else None


def _spread(series, total=False):
    out = {"p50": _q(series, 0.5), "p95": _q(series, 0.95), "max": _q(series, 1.0)}
    if total:
        out["total"] = float(series.sum()) if len(series) else None
    return out


def _counts(pairs):
    return {str(k): int(n) for k, n in sorted(pairs, key=lambda kv: (-kv[1], str(kv[0])))}


def summarize_consumer(s, recs, membership, anomalies, group_protocols, silent_ms=None):
    """Fill ``s["consumer"]``.  ``recs``: the reconciliations (pandas);
    ``membership``: ``[(kind, error_code, rows)]``; ``anomalies``: ``[(kind,
    rows)]``; ``group_protocols``: ``{"consumer": groups, "mixed": groups}``;
    ``silent_ms``: the shortest silence after which the coordinator was seen
    to have removed a member (``consumer_membership.silent_ms``), or None."""
    stable = recs[recs.outcome == "stable"] if len(recs) else recs
    outcomes = Counter(recs.outcome) if len(recs) else Counter()
    triggers = Counter(recs.trigger) if len(recs) else Counter()
    kinds = Counter()
    fencing_errors = Counter()
    for kind, error, n in membership:
        kinds[kind] += n
        if kind in ("fenced", "session_timeout") and error is not None and not _nan(error):
            fencing_errors[int(error)] += n
    top = []
    if len(recs):
        for gid, g in recs.groupby("group_id"):
            top.append({"group_id": gid, "protocol": g.protocol.iloc[0], "reconciliations": len(g),
                        "partition_seconds_unowned": float(g.partition_seconds_unowned.sum()),
                        "time_to_stable_ms_max": _float(g.time_to_stable_ms.max()),
                        "triggers": ", ".join(dict.fromkeys(g.trigger))})
    top.sort(key=lambda r: (-r["partition_seconds_unowned"], -r["reconciliations"], r["group_id"]))
    s["consumer"] = {
        "groups": int(sum(group_protocols.values())), "mixed_groups": int(group_protocols.get("mixed", 0)),
        "reconciliations": int(len(recs)), "outcomes": _counts(outcomes.items()),
        "time_to_stable_ms": _spread(stable.time_to_stable_ms.dropna() if len(stable) else stable),
        "partition_seconds_unowned": _spread(recs.partition_seconds_unowned.dropna() if len(recs) else recs,
                                             total=True),
        "triggers": _counts(triggers.items()),
        "membership": _counts(kinds.items()),
        "fencing": {"fenced": kinds.get("fenced", 0), "session_timeout": kinds.get("session_timeout", 0),
                    "errors": _counts(fencing_errors.items()),
                    "session_timeout_at_most_ms": _float(silent_ms)},
        "anomalies": _counts((k, n) for k, n in anomalies),
        "top_groups": top[:CONSUMER_TOP_GROUPS],
    }
    return s


def _nan(v):
    return isinstance(v, float) and math.isnan(v)


def _float(v):
    return None if v is None or _nan(v) else float(v)


def consumer_json(s):
    """The ``report.json`` keys of this section."""
    return {"consumer": s.get("consumer"), "group_traffic": bool(s.get("group_traffic", True))}


def no_group_traffic(s):
    """True when the capture has frames but no group names any of them."""
    return s.get("frames", 0) > 0 and not s.get("group_traffic", True)


def consumer_headline(s, fmt):
    """What the report's first line adds for the consumer protocol ("" when no group used it): the classic
    figures before it count classic groups only."""
    c = s.get("consumer")
    if not c or not c["groups"]:
        return ""
    mixed = fmt(c["mixed_groups"]) if c["mixed_groups"] else "none"
    return (f" With the consumer protocol: {counted(c['groups'], 'group', fmt=fmt)} ({mixed} mixed), "
            f"{counted(c['reconciliations'], 'reconciliation', fmt=fmt)}.")


def consumer_section(lines, s, format_duration, fmt):
    """The consumer protocol's section of report.md (nothing when no group used it)."""
    c = s.get("consumer")
    if not c or not c["groups"]:
        return
    lines += ["", "## Consumer-protocol groups (KIP-848)", "",
              f"{counted(c['groups'], 'group heartbeats', 'groups heartbeat', fmt)} with ConsumerGroupHeartbeat "
              f"({_mixed(c, fmt)}; a mixed group has classic members too, and is analysed as one group); {counted(c['reconciliations'], 'reconciliation', fmt=fmt)} (group "
              "epoch bumps)."]
    if c["reconciliations"]:
        t, u = c["time_to_stable_ms"], c["partition_seconds_unowned"]
        lines += ["", "*Time to stable*: from the group epoch bump to the last member's heartbeat owning exactly its "
                  "target at the new epoch. *Partition-seconds unowned*: for each partition, the time from its old "
                  "owner's revocation ack (or loss) to the heartbeat response giving it to its new owner, summed.", "",
                  "| | p50 | p95 | max | total |", "|---|---|---|---|---|",
                  "| time to stable | " + " | ".join(format_duration(t[k]) for k in ("p50", "p95", "max")) + " | – |",
                  "| partition-seconds unowned | " + " | ".join(_seconds(u[k]) for k in ("p50", "p95", "max", "total"))
                  + " |", "",
                  "Outcomes: " + ", ".join(f"{k} {fmt(n)}" for k, n in c["outcomes"].items()) + " (*superseded*: the "
                  "next bump came before every member acknowledged; *open*: the capture ended first).", "",
                  "| likely trigger | reconciliations |", "|---|---|"]
        lines += [f"| {k} | {fmt(n)} |" for k, n in c["triggers"].items()]
    f = c["fencing"]
    lines += ["", f"Members fenced: {fmt(f['fenced'])} by an error answer, {fmt(f['session_timeout'])} by a session "
              "timeout (inferred: a member that fell silent without leaving, whose partitions the coordinator gave "
              "to others at a later epoch or which a later Describe no longer listed, or silent for a whole "
              "session)."]
    if f.get("session_timeout_at_most_ms") is not None:
        lines += ["", "The coordinator's session timeout (`group.consumer.session.timeout.ms`, in no frame) was at "
                  f"most {format_duration(f['session_timeout_at_most_ms'])}: the shortest silence after which it "
                  "was seen to have removed a member (`silent_ms` in `consumer_membership`)."]
    if f["errors"]:
        lines += ["", "| error | fencings |", "|---|---|"]
        lines += [f"| {code} {error_name(int(code))} | {fmt(n)} |" for code, n in f["errors"].items()]
    if c["membership"]:
        lines += ["", "Membership changes: " + ", ".join(f"{k} {fmt(n)}" for k, n in c["membership"].items()) + "."]
    if c["anomalies"]:
        lines += ["", "Anomalies (each a row of `consumer_anomalies`):", "", "| anomaly | count |", "|---|---|"]
        lines += [f"| {k} | {fmt(n)} |" for k, n in c["anomalies"].items()]
    else:
        lines += ["", "No anomaly: no epoch went backwards, no member acknowledged partitions it was not given, "
                  "every response had its request."]
    if c["top_groups"]:
        lines += ["", "| group | protocol | reconciliations | partition-seconds unowned | slowest to stable | "
                  "triggers |", "|---|---|---|---|---|---|"]
        lines += [f"| {g['group_id']} | {g['protocol']} | {fmt(g['reconciliations'])} | "
                  f"{_seconds(g['partition_seconds_unowned'])} | {format_duration(g['time_to_stable_ms_max'])} | "
                  f"{g['triggers']} |" for g in c["top_groups"]]


def _mixed(c, fmt):
    if c["mixed_groups"]:
        return f"{fmt(c['mixed_groups'])} of them mixed"
    return "not mixed" if c["groups"] == 1 else "none of them mixed"


def _seconds(v):
    if v is None or _nan(v):
        return "–"
    return f"{v:,.1f}" if v >= 10 else f"{v:.2f}"
