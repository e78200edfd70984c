"""``report.md``, ``report.json`` and the report's charts, from small tables.

Everything here runs on the driver over pandas frames of one row per group
and generation (or fewer): the Spark stages reduce the capture first.  The
charts need matplotlib (the ``pipeline`` extra); without it the report says
they were skipped.  Files are written through a ``pyarrow.fs`` file system,
so ``--out`` may be a local path or a URI.
"""

from __future__ import annotations

import io
import json
import math
import os
from collections import Counter

import pandas as pd

from kwire.codec import ErrorCode, error_name
from kwire.pipeline._report_consumer import (NO_GROUP_TRAFFIC, consumer_headline, consumer_json, consumer_section,
                                             counted, no_group_traffic)
from kwire.pipeline._report_migration import migration_chart, migration_markdown

#: The errors the report names beside their codes: the answers of the group
#: protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) and of finding the
#: coordinator.  Any other code is printed as its number alone.
NAMED_ERRORS = frozenset((
    ErrorCode.NONE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_COORDINATOR, ErrorCode.ILLEGAL_GENERATION, ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
    ErrorCode.INVALID_GROUP_ID, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.INVALID_SESSION_TIMEOUT,
    ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.MEMBER_ID_REQUIRED,
    ErrorCode.GROUP_MAX_SIZE_REACHED, ErrorCode.FENCED_INSTANCE_ID,
))

#: Groups drawn in the rebalance timeline and listed generation by generation.
WORST_GROUPS = 8
#: Generations listed in the per-generation table, at most.
GENERATION_ROWS = 60


# -- units -------------------------------------------------------------------------------------


def format_duration(ms):
    """A duration in the unit a reader takes in at once: ``820 ms``,
    ``3.54 s``, ``12 min 5 s``, ``19 h 19 min``, ``3 d 4 h``."""
    if ms is None or (isinstance(ms, float) and math.isnan(ms)):
        return "–"
    if ms < 1000:
        return f"{ms:,.0f} ms" if ms >= 10 else f"{ms:.1f} ms"
    s = ms / 1000.0
    if s < 60:
        return f"{s:.2f} s" if s < 10 else f"{s:.1f} s"
    if s < 3600:
        m, sec = divmod(int(round(s)), 60)
        return f"{m} min {sec} s"
    if s < 86400:
        h, rest = divmod(int(round(s)), 3600)
        return f"{h} h {rest // 60} min"
    d, rest = divmod(int(round(s)), 86400)
    return f"{d:,} d {rest // 3600} h"


def _fmt(v):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, float):
        return f"{v:,.1f}"
    return f"{v:,}"


# -- figures -----------------------------------------------------------------------------------


def summarize(s, reb, wi, bad):
    """Fill ``s`` (frames, connections, decode_errors, error_kinds already
    in it) from the rebalances, whatif and bad-frame tables, as pandas."""
    s["groups"], s["rebalances"] = int(reb.group_id.nunique()), len(reb)
    stall = reb.stall_ms.dropna()
    s["stall"] = {"p50": _q(stall, 0.5), "p95": _q(stall, 0.95), "max": _q(stall, 1.0),
                  "total": float(stall.sum()) if len(stall) else None}
    counts = reb.trigger.value_counts()
    s["triggers"] = sorted(((t, int(n)) for t, n in counts.items()), key=lambda kv: (-kv[1], kv[0]))
    codes = Counter(int(c) for codes in reb.error_codes if codes is not None for c in codes)
    s["errors"] = sorted(codes.items(), key=lambda kv: (-kv[1], kv[0]))
    top = []
    for gid, g in reb.sort_values("generation_id").groupby("group_id"):
        top.append({"group_id": gid, "rebalances": len(g), "stall_ms": float(g.stall_ms.sum()),
                    "protocol": g.protocol_name.iloc[-1],
                    "triggers": ", ".join(dict.fromkeys(g.trigger))})
    s["top_groups"] = sorted(top, key=lambda r: (-r["rebalances"], -r["stall_ms"], r["group_id"]))[:10]
    ok_rows = wi[wi.error.isna()] if "error" in wi else wi
    moved = ok_rows[ok_rows.moved.notna()].copy()
    moved["label"] = moved.strategy.where(~moved.observed.astype(bool), "observed")
    s["whatif"] = []
    for label, g in sorted(moved.groupby("label"), key=lambda kv: kv[0]):
        s["whatif"].append({"strategy": label, "generations": len(g), "moved": int(g.moved.sum()),
                            "mean_imbalance": float(g.imbalance.mean()), "max_imbalance": int(g.imbalance.max())})
    failed = wi[wi.error.notna()] if "error" in wi else wi.iloc[:0]
    s["whatif_failures"] = [
        {"group_id": gid, "generations": int(g.generation_id.nunique()), "error": str(g.error.iloc[0])}
        for gid, g in sorted(failed.groupby("group_id"), key=lambda kv: kv[0])]
    proto = wi[wi.observed.astype(bool)].set_index(["group_id", "generation_id"]).strategy
    runs = ok_rows[~ok_rows.observed.astype(bool)]
    # A boolean Series, not a list: an empty list would select no columns.
    ran_own = pd.Series([proto.get((g, n)) == st for g, n, st in zip(runs.group_id, runs.generation_id,
                                                                      runs.strategy)], index=runs.index, dtype=bool)
    same = runs[ran_own]
    s["reproduced"] = (int(same.reproduces_observed.astype(bool).sum()), len(same))
    s["inconsistent_frames"] = len(bad)
    reasons = Counter(_reason_kind(r) for r in bad.reason) if len(bad) else Counter()
    s["bad_frame_kinds"] = sorted((Counter(dict(s.get("error_kinds", []))) + reasons).items(),
                                  key=lambda kv: (-kv[1], kv[0]))
    s["bad_frames"] = s["decode_errors"] + s["inconsistent_frames"]
    s["worst"] = _worst_generations(reb, wi)
    return s


def _reason_kind(reason):
    # "negative partition -5 of topic 't'" -> "negative partition": the kind
    # without the numbers and names that make every reason distinct.
    if reason.startswith("Metadata response"):
        return reason.split(":")[0]
    for kind in ("negative partition", "beyond the cap", "(Metadata)", "did not subscribe"):
        if kind in reason:
            return {"(Metadata)": "partition beyond the topic's size (Metadata)",
                    "beyond the cap": "partition beyond the cap per topic",
                    "did not subscribe": "assignment of a topic the member did not subscribe to"}.get(kind, kind)
    return reason


def _worst_generations(reb, wi):
    """The groups with the longest total stall, and their generations (with
    what each what-if strategy would have moved)."""
    if reb.empty:
        return []
    totals = reb.groupby("group_id").stall_ms.sum().sort_values(ascending=False, kind="stable")
    worst = list(totals.index[:WORST_GROUPS])
    rows = reb[reb.group_id.isin(worst)].sort_values(["group_id", "generation_id"])
    alt = {}
    if len(wi):
        w = wi[wi.group_id.isin(worst) & ~wi.observed.astype(bool)]
        if "error" in w:
            w = w[w.error.isna()]
        for r in w.itertuples():
            alt[(r.group_id, r.generation_id, r.strategy)] = r.moved
    out = []
    for r in rows.itertuples():
        out.append({"group_id": r.group_id, "generation_id": int(r.generation_id), "trigger": r.trigger,
                    "members": int(r.member_count), "start_ts": _int(r.start_ts), "end_ts": _int(r.end_ts),
                    "stall_ms": _float(r.stall_ms), "moved": _int(r.moved_partitions),
                    "whatif_moved": {st: _int(alt.get((r.group_id, r.generation_id, st)))
                                     for st in ("range", "roundrobin", "sticky", "cooperative-sticky")}})
    order = {g: i for i, g in enumerate(worst)}
    return sorted(out, key=lambda r: (order[r["group_id"]], r["generation_id"]))


def _int(v):
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else int(v)


def _float(v):
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


def _q(series, q):
    return float(series.quantile(q)) if len(series) else None


# -- report.json -------------------------------------------------------------------------------


def report_json(capture_path, s, run):
    """The machine-readable report: ``run`` holds ``spark`` (master, app_id)
    and ``stages`` (name -> seconds and row counts)."""
    return {
        "capture": str(capture_path),
        "spark": run["spark"],
        "stages": run["stages"],
        "frames": s["frames"], "connections": s["connections"],
        "bad_frames": s["bad_frames"], "undecodable_frames": s["decode_errors"],
        "inconsistent_frames": s["inconsistent_frames"],
        "bad_frame_kinds": dict(s["bad_frame_kinds"]),
        "groups": s["groups"], "generations": s["rebalances"],
        "stall_ms": s["stall"],
        "triggers": dict(s["triggers"]),
        "errors": {str(c): n for c, n in s["errors"]},
        "whatif": s["whatif"], "whatif_failures": s["whatif_failures"],
        "reproduced": {"generations": s["reproduced"][1], "exactly": s["reproduced"][0]},
        "top_groups": s["top_groups"],
        "migration": s.get("migration"),
        "charts": run.get("charts", {}),
        **consumer_json(s),
    }


# -- report.md ---------------------------------------------------------------------------------


def render_markdown(capture_path, s, run):
    name = os.path.basename(str(capture_path).rstrip("/"))
    lines = [f"# Consumer-group rebalances in `{name}`", ""]
    lines.append(f"{_fmt(s['frames'])} frames on {_fmt(s['connections'])} connections, "
                 f"{_fmt(s['bad_frames'])} bad ({_fmt(s['decode_errors'])} not decodable, "
                 f"{_fmt(s['inconsistent_frames'])} inconsistent); {_classic_headline(s)}."
                 + consumer_headline(s, _fmt))
    if s["frames"] == 0:
        lines += ["", "**The capture holds no frames**: there is nothing to analyse."]
    elif no_group_traffic(s):
        lines += ["", NO_GROUP_TRAFFIC]
    elif s["rebalances"] == 0 and not (s.get("consumer") or {}).get("groups"):
        lines += ["", "**The capture holds no consumer-group rebalance**: no JoinGroup that formed a generation "
                  "(group traffic is FindCoordinator, JoinGroup, SyncGroup, Heartbeat and LeaveGroup frames). Was "
                  "the group coordinator's traffic recorded?"]
    if s["rebalances"] and (s.get("consumer") or {}).get("groups"):
        lines += ["", "## Classic-protocol groups", "", "These sections, up to the consumer protocol's, cover the "
                  "groups on the classic protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup)."]
    if s["rebalances"]:
        _stalls(lines, s, run)
        _triggers(lines, s)
        _groups(lines, s, run)
        _whatif(lines, s, run)
    consumer_section(lines, s, format_duration, _fmt)
    migration_markdown(lines, s.get("migration"), run.get("charts", {}).get("migration"))
    _bad(lines, s)
    _stages(lines, run)
    return "\n".join(lines) + "\n"


def _classic_headline(s):
    """The classic protocol's groups and generations; named as such when consumer-protocol groups follow."""
    if not (s.get("consumer") or {}).get("groups"):
        return f"{counted(s['groups'], 'group', fmt=_fmt)}, {counted(s['rebalances'], 'generation', fmt=_fmt)}"
    if not s["groups"]:
        return "no classic-protocol group"
    return (f"{counted(s['groups'], 'classic-protocol group', fmt=_fmt)}, "
            f"{counted(s['rebalances'], 'generation', fmt=_fmt)}")


def _chart(lines, run, key, alt):
    charts = run.get("charts", {})
    if key in charts:
        lines += ["", f"![{alt}]({charts[key]})"]


def _stalls(lines, s, run):
    lines += ["", "## How long rebalances stall consumption", "",
              "Stall = first JoinGroup of a generation to its last successful SyncGroup response.", "",
              "| p50 | p95 | max | total |", "|---|---|---|---|",
              "| " + " | ".join(format_duration(s["stall"][k]) for k in ("p50", "p95", "max", "total")) + " |"]
    _chart(lines, run, "stalls", "stall distribution")


def _triggers(lines, s):
    lines += ["", "## Why groups rebalance", "", "| likely trigger | generations |", "|---|---|"]
    lines += [f"| {t} | {_fmt(n)} |" for t, n in s["triggers"]]
    if s["errors"]:
        lines += ["", "Errors answered during rebalances:", "", "| error | generations |", "|---|---|"]
        lines += [f"| {c} {error_name(c) if c in NAMED_ERRORS else ''} | {_fmt(n)} |" for c, n in s["errors"]]


def _groups(lines, s, run):
    lines += ["", "## Groups that rebalance most", "", "| group | protocol | generations | total stall | triggers |",
              "|---|---|---|---|---|"]
    lines += [f"| {g['group_id']} | {g['protocol']} | {g['rebalances']} | {format_duration(g['stall_ms'])} | "
              f"{g['triggers']} |" for g in s["top_groups"]]
    worst = s["worst"]
    if not worst:
        return
    lines += ["", "## Generation by generation, for the groups that stalled longest", ""]
    _chart(lines, run, "timeline", "rebalance timeline of the groups that stalled longest")
    lines += ["", "*moved*: partitions that changed owner against the previous generation; the what-if columns "
              "are what each assignor would have moved there.", "",
              "| group | generation | trigger | members | stall | moved | range | roundrobin | sticky | "
              "cooperative-sticky |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in worst[:GENERATION_ROWS]:
        alt = " | ".join(_fmt(r["whatif_moved"][k]) for k in ("range", "roundrobin", "sticky", "cooperative-sticky"))
        lines.append(f"| {r['group_id']} | {r['generation_id']} | {r['trigger']} | {r['members']} | "
                     f"{format_duration(r['stall_ms'])} | {_fmt(r['moved'])} | {alt} |")
    if len(worst) > GENERATION_ROWS:
        lines.append(f"\n({len(worst) - GENERATION_ROWS:,} more generations of these groups in `rebalances`.)")


def _whatif(lines, s, run):
    lines += ["", "## What if the groups used another assignor", "",
              "Every observed generation after the first, re-run with kwire's assignors on the observed "
              "subscriptions and the previous generation's observed ownership. *moved* counts partitions whose "
              "owner changed (a partition held back by cooperative-sticky counts as moved).", "",
              "| strategy | generations | partitions moved | mean imbalance (max−min per member) | worst imbalance |",
              "|---|---|---|---|---|"]
    for w in s["whatif"]:
        lines.append(f"| {w['strategy']} | {_fmt(w['generations'])} | {_fmt(w['moved'])} | "
                     f"{_fmt(w['mean_imbalance'])} | {_fmt(w['max_imbalance'])} |")
    _chart(lines, run, "whatif", "what-if assignors side by side")
    ok, n = s["reproduced"]
    lines += ["", f"kwire reproduced the leader's assignment exactly in {ok:,} of {n:,} generations whose protocol "
              "it ran (a mismatch means the leader saw other inputs: partition counts, racks or claims not in "
              "the capture)."]
    if s["whatif_failures"]:
        lines += ["", f"The what-if could not run for {counted(len(s['whatif_failures']), 'group')} (their captured inputs "
                  "are not a valid group); the rows in `whatif` carry the error:", "",
                  "| group | generations | error |", "|---|---|---|"]
        lines += [f"| {f['group_id']} | {f['generations']} | {f['error']} |" for f in s["whatif_failures"][:20]]


def _bad(lines, s):
    if not s["bad_frames"]:
        return
    lines += ["", "## Bad frames", "",
              f"{counted(s['bad_frames'], 'frame was', 'frames were', _fmt)} left out of the analysis; each is a row of `bad_frames` with "
              "its reason.", "", "| reason | frames |", "|---|---|"]
    lines += [f"| {k} | {_fmt(n)} |" for k, n in s["bad_frame_kinds"]]


def _stages(lines, run):
    stages = run.get("stages", {})
    if stages:
        lines += ["", "Stage times: " + ", ".join(f"{k} {v['seconds']:.1f} s" for k, v in stages.items()
                                                  if v.get("seconds") is not None) + "."]
    if run.get("charts_skipped"):
        lines += ["", f"Charts were skipped: {run['charts_skipped']}."]


# -- charts ------------------------------------------------------------------------------------


def render_charts(s, reb, wi):
    """``{name: png bytes}``; raises ImportError without matplotlib."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib import pyplot as plt

    charts = {}
    if s["worst"]:
        charts["timeline"] = _png(plt, _timeline(plt, s["worst"]))
    stall = reb.stall_ms.dropna()
    if len(stall):
        charts["stalls"] = _png(plt, _stall_histogram(plt, stall))
    if s["whatif"]:
        charts["whatif"] = _png(plt, _whatif_bars(plt, s["whatif"]))
    fig = migration_chart(plt, s.get("migration"))
    if fig is not None:
        charts["migration"] = _png(plt, fig)
    return charts


def _png(plt, fig):
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=72, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _timeline(plt, worst):
    groups = list(dict.fromkeys(r["group_id"] for r in worst))
    t0 = min(r["start_ts"] for r in worst if r["start_ts"] is not None)
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(groups) + 1.2))
    colours = {}
    for r in worst:
        if r["start_ts"] is None:
            continue
        y = groups.index(r["group_id"])
        start = (r["start_ts"] - t0) / 1e6
        width = max(((r["end_ts"] or r["start_ts"]) - r["start_ts"]) / 1e6, 0.0)
        colour = colours.setdefault(r["trigger"], f"C{len(colours) % 10}")
        ax.barh(y, max(width, 0.002 * _span(worst, t0)), left=start, height=0.6, color=colour,
                label=r["trigger"])
    ax.set_yticks(range(len(groups)), labels=groups, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("seconds since the first rebalance shown")
    ax.set_title("Rebalances of the groups that stalled longest (bar = stall)")
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    ax.legend(unique.values(), unique.keys(), fontsize=7, loc="lower right")
    return fig


def _span(worst, t0):
    return max(((r["end_ts"] or r["start_ts"]) - t0) / 1e6 for r in worst if r["start_ts"] is not None) or 1.0


def _stall_histogram(plt, stall):
    import numpy as np

    fig, ax = plt.subplots(figsize=(6, 3.2))
    seconds = stall.to_numpy() / 1000.0
    positive = seconds[seconds > 0]
    if len(positive) and positive.max() / max(positive.min(), 1e-3) > 100:
        bins = np.logspace(np.log10(max(positive.min(), 1e-3)), np.log10(positive.max()), 30)
        ax.set_xscale("log")
    else:
        bins = 30
    ax.hist(positive if len(positive) else seconds, bins=bins, color="C0")
    ax.set_xlabel("stall per generation (s)")
    ax.set_ylabel("generations")
    ax.set_title(f"Stall distribution ({len(seconds):,} generations)")
    return fig


def _whatif_bars(plt, whatif):
    fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3.2))
    labels = [w["strategy"] for w in whatif]
    colours = ["C7" if lab == "observed" else f"C{i}" for i, lab in enumerate(labels)]
    left.bar(labels, [w["moved"] for w in whatif], color=colours)
    left.set_title("partitions moved (all generations)", fontsize=9)
    right.bar(labels, [w["mean_imbalance"] for w in whatif], color=colours)
    right.set_title("mean imbalance (max−min per member)", fontsize=9)
    for ax in (left, right):
        ax.tick_params(axis="x", labelrotation=30, labelsize=8)
    fig.suptitle("What if the groups used another assignor", y=1.03)
    return fig


# -- writing -----------------------------------------------------------------------------------


def output_fs(out):
    """``(pyarrow file system, path in it)`` for a local path or a URI."""
    from pyarrow import fs

    if "://" in str(out):
        return fs.FileSystem.from_uri(str(out))
    return fs.LocalFileSystem(), os.path.abspath(str(out))


def write_bytes(filesystem, path, data):
    with filesystem.open_output_stream(path) as stream:
        stream.write(data)


def write_report(out, capture_path, s, reb, wi, run):
    """Write the charts, report.md and report.json under ``out``; returns
    ``run`` with ``charts`` filled in."""
    filesystem, base = output_fs(out)
    filesystem.create_dir(base, recursive=True)
    try:
        pngs = render_charts(s, reb, wi)
    except ImportError as exc:
        pngs = {}
        run["charts_skipped"] = f"matplotlib is not installed ({exc}); pip install 'kwire[pipeline]'"
    run["charts"] = {}
    for name, data in pngs.items():
        file = f"chart-{name}.png"
        write_bytes(filesystem, f"{base}/{file}", data)
        run["charts"][name] = file
    write_bytes(filesystem, f"{base}/report.md", render_markdown(capture_path, s, run).encode())
    doc = report_json(capture_path, s, run)
    write_bytes(filesystem, f"{base}/report.json", (json.dumps(doc, indent=2, default=_json_default) + "\n").encode())
    return doc


def _json_default(v):
    # NumPy scalars from pandas aggregates.
    if hasattr(v, "item"):
        return v.item()
    raise TypeError(f"not JSON serializable: {type(v).__name__}")
