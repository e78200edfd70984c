"""The report's migration section: the stall today, the stall under the other protocol, the difference.

:func:`summarize_migration` reads the ``migration`` table (pandas) into the figures ``report.json`` keeps
under ``migration``; :func:`migration_markdown` and :func:`migration_chart` render them.
"""

from __future__ import annotations

import math

from kwire.pipeline._report_consumer import counted

#: Groups listed in the report's table (all are in the ``migration`` table).
GROUP_ROWS = 20
#: Bins of the stall-distribution chart: partition-seconds unowned per rebalance, log-spaced.
_BIN_EDGES = [0.0] + [10.0 ** (k / 2) for k in range(-6, 13)]


def _num(v):
    if v is None:
        return None
    v = float(v)
    return None if math.isnan(v) else v


def _histogram(values):
    counts = [0] * (len(_BIN_EDGES) - 1)
    for v in values:
        if v is None or v != v:
            continue
        k = 0
        while k < len(counts) - 1 and v >= _BIN_EDGES[k + 1]:
            k += 1
        counts[k] += 1
    return counts


def summarize_migration(pdf) -> dict:
    """The figures of the ``migration`` table ``pdf`` (pandas, ``MIGRATION_SCHEMA``)."""
    ok = pdf[pdf["error"].isna()] if len(pdf) else pdf
    failures = (pdf[pdf["error"].notna()].groupby("group_id")["error"].first().reset_index().to_dict("records")
                if len(pdf) else [])
    directions = []
    for (obs, sim), d in (ok.groupby(["observed_protocol", "simulated_protocol"]) if len(ok) else ()):
        directions.append({
            "observed_protocol": obs, "simulated_protocol": sim, "groups": int(d["group_id"].nunique()),
            "rebalances": int(len(d)),
            "unowned_ps_observed": float(d["unowned_ps_observed"].sum()),
            "unowned_ps_simulated": float(d["unowned_ps_simulated"].sum()),
            "unowned_ps_difference": float(d["unowned_ps_difference"].sum()),
            "stable_ms_observed_p50": _num(d["stable_ms_observed"].median()),
            "stable_ms_simulated_p50": _num(d["stable_ms_simulated"].median()),
            "stable_ms_observed_p95": _num(d["stable_ms_observed"].quantile(0.95)),
            "stable_ms_simulated_p95": _num(d["stable_ms_simulated"].quantile(0.95)),
            "member_events": int(d["member_events"].sum()),
        })
    groups = []
    if len(ok):
        per = ok.groupby(["group_id", "observed_protocol", "simulated_protocol"]).agg(
            rebalances=("rebalance", "count"), unowned_ps_observed=("unowned_ps_observed", "sum"),
            unowned_ps_simulated=("unowned_ps_simulated", "sum"),
            unowned_ps_difference=("unowned_ps_difference", "sum"),
            stable_ms_observed=("stable_ms_observed", "sum"), stable_ms_simulated=("stable_ms_simulated", "sum"),
        ).reset_index().sort_values(["unowned_ps_observed", "group_id"], ascending=[False, True])
        groups = [{k: (_num(v) if isinstance(v, float) else (int(v) if k == "rebalances" else v))
                   for k, v in r.items()} for r in per.head(GROUP_ROWS).to_dict("records")]
    distribution = {"bin_edges": _BIN_EDGES, "observed": {}, "simulated": {}}
    for obs, d in (ok.groupby("observed_protocol") if len(ok) else ()):
        # A rebalance replayed under two protocols is observed once.
        distribution["observed"][obs] = _histogram(d.drop_duplicates(["group_id", "rebalance"])["unowned_ps_observed"])
    for sim, d in (ok.groupby("simulated_protocol") if len(ok) else ()):
        distribution["simulated"][sim] = _histogram(d["unowned_ps_simulated"])
    return {"rows": int(len(pdf)), "groups": int(pdf["group_id"].nunique()) if len(pdf) else 0,
            "directions": directions, "top_groups": groups, "distribution": distribution,
            "member_events": int(ok["member_events"].sum()) if len(ok) else 0, "failures": failures[:GROUP_ROWS],
            "failed_groups": len(failures)}


def _ps(v):
    return "–" if v is None else f"{v:,.1f}"


def _ms(v):
    if v is None:
        return "–"
    return f"{v / 1000:,.1f} s" if abs(v) >= 1000 else f"{v:,.0f} ms"


def migration_markdown(lines, migration, chart=None):
    """The report's section on ``migration`` (:func:`summarize_migration`'s figures), appended to ``lines``."""
    if not migration or not migration["rows"]:
        return
    lines += ["", "## What moving to the other protocol would change", "",
              "Each group's membership (joins, clean leaves, crashes, subscription changes, each member's request "
              "latency) replayed on kwire's state machines under the protocol it did not use: classic groups "
              "under the consumer protocol (KIP-848, `uniform` assignor), consumer-protocol groups under classic "
              "eager (`range`) and cooperative (`cooperative-sticky`) rebalances. *Unowned* is partition-seconds "
              "during which no member consumed a partition some member subscribes to; *to stable* is from the "
              "rebalance's first event (a crash's silence included) to the group being stable again. A negative "
              "difference means the other protocol stalls less.", "",
              "| observed | simulated | groups | rebalances | unowned today | unowned simulated | difference | "
              "to stable p50 today | simulated | p95 today | simulated |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for d in migration["directions"]:
        lines.append(f"| {d['observed_protocol']} | {d['simulated_protocol']} | {d['groups']:,} | "
                     f"{d['rebalances']:,} | {_ps(d['unowned_ps_observed'])} | {_ps(d['unowned_ps_simulated'])} | "
                     f"{_ps(d['unowned_ps_difference'])} | {_ms(d['stable_ms_observed_p50'])} | "
                     f"{_ms(d['stable_ms_simulated_p50'])} | {_ms(d['stable_ms_observed_p95'])} | "
                     f"{_ms(d['stable_ms_simulated_p95'])} |")
    if chart:
        lines += ["", f"![stall distribution under both protocols]({chart})"]
    lines += ["", "Per group (the groups that stall most today; every rebalance is a row of `migration`):", "",
              "| group | observed | simulated | rebalances | unowned today (partition-s) | simulated | difference | "
              "to stable today (sum) | simulated |", "|---|---|---|---|---|---|---|---|---|"]
    for g in migration["top_groups"]:
        lines.append(f"| {g['group_id']} | {g['observed_protocol']} | {g['simulated_protocol']} | "
                     f"{g['rebalances']:,} | {_ps(g['unowned_ps_observed'])} | {_ps(g['unowned_ps_simulated'])} | "
                     f"{_ps(g['unowned_ps_difference'])} | {_ms(g['stable_ms_observed'])} | "
                     f"{_ms(g['stable_ms_simulated'])} |")
    lines += ["", f"The simulation ran {migration['member_events']:,} member-events (requests a simulated member "
              "sent and the simulated coordinator handled)."]
    if migration["failed_groups"]:
        lines += ["", f"{counted(migration['failed_groups'], 'group')} could not be replayed; their rows carry the error:",
                  "", "| group | error |", "|---|---|"]
        lines += [f"| {f['group_id']} | {f['error']} |" for f in migration["failures"]]


def migration_chart(plt, migration):
    """The stall distribution today and under the other protocol: rebalances per bin of partition-seconds
    unowned (None when there is nothing to draw)."""
    if not migration or not migration["rows"]:
        return None
    dist = migration["distribution"]
    edges = dist["bin_edges"]
    centres = list(range(len(edges) - 1))
    series = [(f"{name} (observed)", counts) for name, counts in sorted(dist["observed"].items())]
    series += [(f"{name} (simulated)", counts) for name, counts in sorted(dist["simulated"].items())]
    fig, ax = plt.subplots(figsize=(7, 3.4))
    width = 0.8 / max(len(series), 1)
    for k, (label, counts) in enumerate(series):
        ax.bar([c + k * width for c in centres], counts, width=width, label=label, color=f"C{k}")
    ax.set_xticks([c + 0.4 for c in centres[::2]])
    ax.set_xticklabels([f"≥{edges[c]:g}" for c in centres[::2]], rotation=45, fontsize=7)
    ax.set_xlabel("partition-seconds unowned per rebalance")
    ax.set_ylabel("rebalances")
    ax.set_title("Stall per rebalance, today and under the other protocol")
    ax.legend(fontsize=7)
    return fig
