"""The published benchmark: kwire's codec and assignors against kafka-python, aiokafka and kio, in one run.

    python -m benches.report            # full run: benches/results/REPORT.md + REPORT.png (a few minutes)
    python -m benches.report --quick    # smoke run: REPORT-quick.md + REPORT-quick.png, about a minute
    python -m benches.report --server-only --readme   # re-measure only the KIP-848 section, in place

Everything in the tables is measured in this one process, interleaved where possible, and every ratio is
between two medians of this run; the only figures not measured here are Java's, quoted as reference from
``benches/data/java-assignor-timings.md`` (JDK 17, a machine of the same kind) and marked as such.

The cases are the other benchmark files' own: the codec cases and library adapters of ``bench_codec.py``
(timed by ``codec_ratios.measure``), the shapes and kafka-python inputs of ``bench_assignors.py``, the
sticky groups of ``bench_sticky.py``, the leader's whole path of ``bench_leader.py`` (JoinGroupResponse
frame to SyncGroupRequest frame, beside the array core on the same group), the coordinator's KIP-848
assignors of ``bench_server_assignors.py``, the record-batch codec of ``bench_records.py`` (against aiokafka's
compiled record classes and kafka-python's) and records through ``kwire serve`` next to librdkafka's mock
cluster (``bench_records_server.py``, one million records with confluent-kafka's clients).  Run it on a quiet
machine: the full run times 1M-partition groups and kafka-python's pure-Python assignors, and both cores' load
shows up in the numbers (the load average before and after is printed in the report).

``KWIRE_NO_EXTENSIONS=1`` benchmarks the pure-Python twins as "kwire" instead (the report says which).
The chart needs matplotlib (``pip install matplotlib``); ``--no-chart`` skips it.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, Optional, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benches import bench_assignors as BA  # noqa: E402
from benches import bench_leader as BL  # noqa: E402
from benches import bench_records as BR  # noqa: E402
from benches import bench_records_server as BRS  # noqa: E402
from benches import bench_server_assignors as BSA  # noqa: E402
from benches import bench_sticky as BS  # noqa: E402
from benches import codec_ratios  # noqa: E402
from benches.bench_codec import LIBRARIES, available  # noqa: E402

PEERS = ("kafka-python", "aiokafka", "kio")
DEFAULT_ANCHORS = os.path.join(REPO, "benches", "data", "java-assignor-timings.md")


# --------------------------------------------------------------------------------------------------------
# Java's figures (reference only)
# --------------------------------------------------------------------------------------------------------

def _seconds(text):
    """'3.9-6.6 s' -> (3.9, 6.6); '75 ms' -> (0.075, 0.075); anything else -> None."""
    m = re.fullmatch(r"\s*([\d.]+)(?:\s*-\s*([\d.]+))?\s*(ms|s)\s*", text)
    if not m:
        return None
    scale = 1e-3 if m.group(3) == "ms" else 1.0
    lo = float(m.group(1)) * scale
    return lo, (float(m.group(2)) * scale if m.group(2) else lo)


def java_anchors(path):
    """Section D of the anchors file: ({(assignor, size prefix, phase): (lo s, hi s)}, the table's lines)."""
    if not os.path.isfile(path):
        return {}, []
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    start = text.find("## D.")
    if start < 0:
        return {}, []
    lines = [ln for ln in text[start:].splitlines() if ln.startswith("|")]
    out = {}
    for ln in lines[2:]:
        cells = [c.strip() for c in ln.strip("|").split("|")]
        if len(cells) < 6:
            continue
        names = [n.strip() for n in cells[0].split("/")]
        size = cells[1].split(" ")[0]
        fresh = [f.strip() for f in cells[4].split(" / ")] if len(names) > 1 else [cells[4]]
        for name, value in zip(names, fresh):
            if _seconds(value):
                out[(name, size, "fresh")] = _seconds(value)
        reb = cells[5]
        if len(names) > 1:
            # "coop 56 ms": the rebalance figure of the one assignor named first.
            word, _, rest = reb.partition(" ")
            for name in names:
                if name.lower().startswith(word.lower()) and _seconds(rest):
                    out[(name, size, "rebalance")] = _seconds(rest)
        elif _seconds(reb):
            out[(names[0], size, "rebalance")] = _seconds(reb)
    return out, lines


# --------------------------------------------------------------------------------------------------------
# Assignor cases
# --------------------------------------------------------------------------------------------------------

@dataclass
class AssignorCase:
    id: str
    what: str
    #: () -> {library: zero-argument callable}; built just before the case runs, dropped after.
    build: Callable[[], Dict[str, Callable[[], object]]]
    java: Optional[Tuple[str, str, str]] = None
    quick: bool = True
    #: Timed rounds for kwire and for the (much slower) pure-Python peers, at most.
    rounds: Tuple[int, int] = (30, 5)
    results: Dict[str, float] = field(default_factory=dict)


def _impl():
    return "python" if os.environ.get("KWIRE_NO_EXTENSIONS", "") not in ("", "0") else None


_shared_inputs = {}


def _once(key, make):
    if key not in _shared_inputs:
        _shared_inputs[key] = make()
    return _shared_inputs[key]


def _peer_members_aiokafka(topics, member_ids):
    from aiokafka.coordinator.protocol import ConsumerProtocolMemberMetadata

    return {m: ConsumerProtocolMemberMetadata(0, list(topics), b"") for m in member_ids}


def _shape_a(strategy):
    def build():
        from kwire.assignors import ArrayGroup, assign_arrays

        T, P, M = BA.SHAPES["A"]
        raw = BA.raw_arrays(T, P, M)
        impl = _impl()
        fns = {"kwire": lambda: assign_arrays(strategy, ArrayGroup(**raw), implementation=impl)}
        try:
            cluster, members = _once("kp-A", lambda: BA.kafka_python_inputs(T, P, M))
        except ImportError:
            pass
        else:
            fns["kwire via kafka-python adapter"] = lambda: BA.kwire_adapter(strategy).assign(cluster, members)
            fns["kafka-python"] = lambda: BA.kafka_python_assignor(strategy).assign(cluster, members)
        try:
            from aiokafka.coordinator.assignors.range import RangePartitionAssignor
            from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

            from kwire.contrib.aiokafka import KwireRangeAssignor, KwireRoundRobinAssignor
        except ImportError:
            pass
        else:
            acluster = BS.Cluster({t: P for t in raw["topics"]})
            amembers = _once("aio-A", lambda: _peer_members_aiokafka(raw["topics"], raw["member_ids"]))
            ours = KwireRangeAssignor if strategy == "range" else KwireRoundRobinAssignor
            theirs = RangePartitionAssignor if strategy == "range" else RoundRobinPartitionAssignor
            fns["kwire via aiokafka adapter"] = lambda: ours.assign(acluster, amembers)
            fns["aiokafka"] = lambda: theirs.assign(acluster, amembers)
        return fns
    return build


def _arrays_only(strategy, T, P, M):
    def build():
        from kwire.assignors import ArrayGroup, assign_arrays

        raw = BA.raw_arrays(T, P, M)
        impl = _impl()
        return {"kwire": lambda: assign_arrays(strategy, ArrayGroup(**raw), implementation=impl)}
    return build


def _coop(make_groups, phase):
    def build():
        from kwire.assignors._sticky import assign_cooperative_sticky

        fresh, after = make_groups()
        g = fresh if phase == "fresh" else after
        impl = _impl()
        return {"kwire": lambda: assign_cooperative_sticky(g, implementation=impl)}
    return build


def _coop_10k():
    from benches._sticky_groups import after_leave, group
    from kwire.assignors._sticky import assign_cooperative_sticky

    g = group(10, 1000, 1000)
    return g, after_leave(g, assign_cooperative_sticky(g), [0])


def _sticky_small():
    from types import SimpleNamespace

    from kwire.assignors._sticky import assign_sticky

    g = BS.sticky_small()
    impl = _impl()
    fns = {"kwire": lambda: assign_sticky(g, implementation=impl)}
    counts = dict(zip(g.topics, g.partition_counts.tolist()))
    try:
        from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor as KP
    except ImportError:
        pass
    else:
        cluster = BS.Cluster(counts)
        members = [SimpleNamespace(member_id=m, metadata=SimpleNamespace(topics=list(g.topics), user_data=b""))
                   for m in g.member_ids]
        fns["kafka-python"] = lambda: KP().assign(cluster, members)
    try:
        from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor as AIO
    except ImportError:
        pass
    else:
        acluster = BS.Cluster(counts)
        amembers = _peer_members_aiokafka(g.topics, g.member_ids)
        fns["aiokafka"] = lambda: AIO.assign(acluster, amembers)
    return fns


def assignor_cases():
    big = BA.SHAPES["B"]
    return [
        AssignorCase("A-range", "range, 100x100 partitions, 1000 members", _shape_a("range")),
        AssignorCase("A-roundrobin", "roundrobin, 100x100 partitions, 1000 members", _shape_a("roundrobin")),
        AssignorCase("sticky-10x100x100", "sticky, 10x100 partitions, 100 members", _sticky_small),
        AssignorCase("10k-range", "range, 10x1000 partitions, 1000 members", _arrays_only("range", 10, 1000, 1000),
                     java=("Range", "10×1000", "fresh")),
        AssignorCase("10k-roundrobin", "roundrobin, 10x1000 partitions, 1000 members",
                     _arrays_only("roundrobin", 10, 1000, 1000), java=("RoundRobin", "10×1000", "fresh")),
        AssignorCase("10k-coop-fresh", "cooperative-sticky, 10x1000, 1000 members, fresh", _coop(_coop_10k, "fresh"),
                     java=("Coop", "10×1000", "fresh")),
        AssignorCase("10k-coop-rebalance", "cooperative-sticky, 10x1000, 1000 members, one leaves",
                     _coop(_coop_10k, "after"), java=("Coop", "10×1000", "rebalance")),
        AssignorCase("20k-halves-fresh", "cooperative-sticky, 100x200, 500 members in two halves, fresh",
                     _coop(BS.halves_20k, "fresh"), java=("CooperativeSticky (general)", "100×200", "fresh")),
        AssignorCase("20k-halves-rebalance", "cooperative-sticky, 100x200, 500 members in two halves, one leaves",
                     _coop(BS.halves_20k, "after"), java=("CooperativeSticky (general)", "100×200", "rebalance")),
        AssignorCase("1M-range", "range, 500x2000 partitions, 2000 members", _arrays_only("range", *big),
                     java=("Range", "500×2000", "fresh"), quick=False, rounds=(7, 1)),
        AssignorCase("1M-roundrobin", "roundrobin, 500x2000 partitions, 2000 members",
                     _arrays_only("roundrobin", *big), java=("RoundRobin", "500×2000", "fresh"), quick=False,
                     rounds=(7, 1)),
        AssignorCase("1M-coop-equal-fresh", "cooperative-sticky, 1M partitions, 2000 members, fresh",
                     _coop(BS.uniform_1m, "fresh"), java=("CooperativeSticky (constrained)", "500×2000", "fresh"),
                     quick=False, rounds=(5, 1)),
        AssignorCase("1M-coop-equal-rebalance", "cooperative-sticky, 1M partitions, 2000 members, one leaves",
                     _coop(BS.uniform_1m, "after"),
                     java=("CooperativeSticky (constrained)", "500×2000", "rebalance"), quick=False, rounds=(5, 1)),
        AssignorCase("1M-coop-unequal-fresh", "cooperative-sticky, 1M, last member on one topic, fresh",
                     _coop(BS.unequal_1m, "fresh"), java=("CooperativeSticky (general)", "500×2000", "fresh"),
                     quick=False, rounds=(5, 1)),
        AssignorCase("1M-coop-unequal-rebalance", "cooperative-sticky, 1M, last member on one topic, one leaves",
                     _coop(BS.unequal_1m, "after"), java=("CooperativeSticky (general)", "500×2000", "rebalance"),
                     quick=False, rounds=(5, 1)),
    ]


def median_s(fn, rounds, budget_s):
    """``(median seconds, rounds run)``: one untimed warm-up call, then up to ``rounds`` timed calls, fewer
    when the warm-up says they would take longer than ``budget_s`` (the pure-Python twins and the peers can
    take seconds per call)."""
    t = time.perf_counter()
    fn()
    first = time.perf_counter() - t
    rounds = max(1, min(rounds, int(budget_s / max(first, 1e-9))))
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), rounds


def run_assignors(cases, quick, log):
    budget = 2.0 if quick else 20.0
    for case in cases:
        fns = case.build()
        for lib, fn in fns.items():
            rounds = case.rounds[0] if lib.startswith("kwire") else case.rounds[1]
            if quick:
                rounds = max(1, rounds // 5)
            t0 = time.perf_counter()
            case.results[lib], ran = median_s(fn, rounds, budget)
            log(f"  {case.id:28s} {lib:32s} {case.results[lib] * 1e3:12.3f} ms "
                f"(median of {ran}, {time.perf_counter() - t0:.1f} s)")
        del fns
        if case.id == "A-roundrobin":
            _shared_inputs.clear()  # the shape-A client inputs are not used again


def run_leader(quick, log):
    """The leader path's cases (``bench_leader.measure`` rows); the best of a few rounds each, since its
    ratios compare two times of the same run."""
    rows = []
    for shape, strategy, gen in BL.cases(quick):
        t0 = time.perf_counter()
        row = BL.measure(shape, strategy, gen, rounds=3 if quick else 7, memory=False)
        rows.append(row)
        log(f"  leader {shape:9s} {strategy:19s} {gen:7s} {row['whole'] * 1e3:10.3f} ms "
            f"(bytes out {row['frame'] * 1e3:.3f} ms, core {row['core'] * 1e3:.3f} ms, "
            f"{time.perf_counter() - t0:.1f} s)")
    return rows


def run_records(quick, log):
    """The record-batch codec against aiokafka's compiled record classes and kafka-python's
    (``bench_records``): decode and encode of 1, 100 and 10,000 records, uncompressed and with each codec.

    In a process of its own: this one holds the assignor cases' million-partition groups by now, and a decode
    that keeps 10,000 records alive pays for the collector's passes over that heap, which a consumer does not."""
    import json
    import subprocess

    codecs, sizes, budget = (("none", "lz4"), (100,), 0.05) if quick else (BR.CODECS, BR.SIZES, 0.4)
    log("records: decode and encode")
    out = subprocess.run([sys.executable, os.path.join(REPO, "benches", "bench_records.py"), "--json", str(budget),
                          "--codecs", ",".join(codecs), "--sizes", ",".join(map(str, sizes))],
                         capture_output=True, text=True, check=True, cwd=REPO, timeout=3600)
    return json.loads(out.stdout)


def render_records(rec):
    crc = ", ".join(f"{label} {rate:.2f} GB/s" for label, rate in rec["crc"].items())
    return "\n".join([f"{rec['library']}.", "", "Decode (read every batch, check its CRC, read every record's offset, "
                      "timestamp, key, value and headers; \"decompress\" is each side's own library call alone on the "
                      "same payload, named under the table, and \"own\" each side's time minus it):", "",
                      BR.render_decode(rec["decode"]), "",
                      "Uncompressed, against the benchmark's loop alone (its call, loops and five field reads over "
                      "records made beforehand, no decoding), which any decoder driven from Python pays:", "",
                      BR.render_loop(rec["decode"]), "",
                      "Encode, from the same Python values to bytes:", "", BR.render_encode(rec["encode"]), "",
                      f"CRC-32C over 1 MiB: {crc}."])


def run_records_server(quick, log):
    """One confluent-kafka producer and consumer through ``kwire serve`` and librdkafka's mock cluster
    (``bench_records_server``), one after the other."""
    n = 100_000 if quick else 1_000_000
    log(f"records through the server: {n:,} records")
    return BRS.measure(records=n)


# --------------------------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------------------------

def run_server(quick, log):
    """The coordinator's KIP-848 assignors at the shapes of Kafka's timing harness (``bench_server_assignors``)."""
    names = ["uniform-homo-full", "range-homo-full"] if quick else list(BSA.SCENARIOS)
    rows = []
    for name in names:
        log(f"server assignors: {name}")
        rows.append(BSA.measure(name, 3 if quick else 20, cold=not quick))
    return rows


def render_server(rows):
    out = ["| case | members | partitions | array level | member level, shared lists | member level, fresh lists "
           "| cold first call |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        cold = "—" if r["cold_ms"] != r["cold_ms"] else f"{r['cold_ms']:.1f} ms"
        out.append(f"| {r['scenario']} | {r['members']:,} | {r['partitions']:,} | {r['array_ms']:.2f} ms | "
                   f"{r['member_shared_ms']:.2f} ms | {r['member_fresh_ms']:.2f} ms | {cold} |")
    return "\n".join(out)


def _fmt_s(seconds):
    if seconds < 1e-3:
        return f"{seconds * 1e6:.3g} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds:.3g} s"


def _ratio(x):
    return f"{x:.1f}×" if x < 100 else f"{x:,.0f}×"


def render_codec(results, libs):
    ours = "kwire-c" if "kwire-c" in libs else "kwire-py"
    lines = ["Median time per call in µs (one run; repeats interleaved across libraries). "
             "`[vN]`: aiokafka implements only older versions of these APIs, so it ran its highest, smaller "
             "layout instead.", ""]
    lines.append("| case | op | " + " | ".join(libs) + " |")
    lines.append("|---|---|" + "---:|" * len(libs))
    for (cid, op), by_lib in results.items():
        row = [cid, op]
        for lib in libs:
            lbl, samples = by_lib[lib]
            text = codec_ratios.fmt_us(statistics.median(samples))
            row.append(text if lbl == lib else f"{text} [{lbl.split('@')[1]}]")
        lines.append("| " + " | ".join(row) + " |")
    peers = [p for p in PEERS if p in libs]
    lines += ["", f"Speed-up of {ours} (peer median / {ours} median; above 1: kwire is faster). "
              "`*`: the peer ran an older, smaller version.", ""]
    lines.append("| case | op | " + " | ".join(peers) + " |")
    lines.append("|---|---|" + "---:|" * len(peers))
    for (cid, op), by_lib in results.items():
        k = statistics.median(by_lib[ours][1])
        row = [cid, op]
        for p in peers:
            plbl, ps = by_lib[p]
            row.append(_ratio(statistics.median(ps) / k) + ("*" if plbl != p else ""))
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def render_assignors(cases, anchors):
    cols = ["kwire via kafka-python adapter", "kafka-python", "kwire via aiokafka adapter", "aiokafka"]
    lines = ["Median wall time per assignment. Ratios are peer / kwire from this run; Java's figures are not "
             "from this run (see below), so its column is a rough scale only.", ""]
    lines.append("| case | what | kwire | " + " | ".join(cols) + " | peer / kwire | Java (reference) | Java / kwire |")
    lines.append("|---|---|---:|" + "---:|" * len(cols) + "---|---:|---:|")
    for c in cases:
        if "kwire" not in c.results:
            continue
        k = c.results["kwire"]
        cells = [_fmt_s(c.results[x]) if x in c.results else "" for x in cols]
        ratios = []
        for p in ("kafka-python", "aiokafka"):
            if p in c.results:
                adapter = c.results.get(f"kwire via {p} adapter")
                via = f" (its kwire adapter: {_ratio(c.results[p] / adapter)})" if adapter else ""
                ratios.append(f"{p}: {_ratio(c.results[p] / k)}{via}")
        java = anchors.get(c.java) if c.java else None
        jtext = ""
        jratio = ""
        if java:
            lo, hi = java
            jtext = _fmt_s(lo) if lo == hi else f"{_fmt_s(lo)} – {_fmt_s(hi)}"
            jratio = _ratio(lo / k) if lo == hi else f"{_ratio(lo / k)} – {_ratio(hi / k)}"
        lines.append(f"| {c.id} | {c.what} | {_fmt_s(k)} | " + " | ".join(cells)
                     + f" | {'; '.join(ratios)} | {jtext} | {jratio} |")
    return "\n".join(lines)


def render_leader(rows):
    lines = ["Best wall time of the whole path a group leader calls, JoinGroupResponse frame to SyncGroupRequest "
             "frame: *classic*, the frame decoded, `kwire.leader_assignments`, a SyncGroupRequest encoded with "
             "`kwire.encode_request`; *bytes out*, the frame decoded with `views=True` (no member's metadata "
             "copied) and `kwire.assignors.leader_sync_request` (the same bytes, each Assignment written straight "
             "into the frame).  Beside them the array core "
             "(`assign_arrays`) on the very group the path builds, built afresh for each run, and kafka-python "
             "3's own leader path on the same frame (its decoders, assignor and encoders). *2nd gen*: every "
             "member owns what a first cooperative-sticky rebalance gave it, 10% of the members gone. Targets: "
             "benches/bench_leader.py's TARGETS_S.", ""]
    lines.append("| group | strategy | generation | classic | bytes out | target | array core | bytes out / core "
                 "| kafka-python | kafka-python / bytes out |")
    lines.append("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        target = _fmt_s(r["target"]) if r["target"] else ""
        kp = r["kafka_python"]
        lines.append(f"| {r['shape']} | {r['strategy']} | {r['gen']} | {_fmt_s(r['whole'])} | "
                     f"{_fmt_s(r['frame'])} | {target} | {_fmt_s(r['core'])} | {_ratio(r['frame'] / r['core'])} | "
                     f"{_fmt_s(kp) if kp else ''} | {_ratio(kp / r['frame']) if kp else ''} |")
    return "\n".join(lines)


def chart(path, codec_results, libs, cases, anchors, leader_rows=()):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ours = "kwire-c" if "kwire-c" in libs else "kwire-py"
    peers = [p for p in PEERS if p in libs]
    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(22, 8), gridspec_kw={"width_ratios": [1, 1.2, 1]})

    keys = list(codec_results)
    h = 0.8 / max(1, len(peers))
    for i, p in enumerate(peers):
        vals = [statistics.median(codec_results[k][p][1]) / statistics.median(codec_results[k][ours][1])
                for k in keys]
        label = f"{p} (older, smaller versions)" if p == "aiokafka" else p
        ax1.barh([j + i * h for j in range(len(keys))], vals, height=h, label=label)
    ax1.set_yticks([j + 0.4 - h / 2 for j in range(len(keys))])
    ax1.set_yticklabels([f"{cid} {op}" for cid, op in keys], fontsize=8)
    ax1.invert_yaxis()
    ax1.set_xscale("log")
    ax1.axvline(1, color="black", linewidth=0.8)
    ax1.set_xlabel(f"peer time / {ours} time (log; right of 1: kwire faster)")
    ax1.set_title("Codec: how many times faster kwire is")
    ax1.legend(fontsize=8)

    shown = [c for c in cases if "kwire" in c.results]
    series = ["kwire", "kafka-python", "aiokafka", "Java (reference)"]
    h = 0.8 / len(series)
    for i, s in enumerate(series):
        ys, xs, errs = [], [], []
        for j, c in enumerate(shown):
            if s == "Java (reference)":
                java = anchors.get(c.java) if c.java else None
                if java:
                    ys.append(j + i * h)
                    xs.append((java[0] + java[1]) / 2 * 1e3)
                    errs.append((java[1] - java[0]) / 2 * 1e3)
            elif s in c.results:
                ys.append(j + i * h)
                xs.append(c.results[s] * 1e3)
                errs.append(0)
        if ys:
            ax2.barh(ys, xs, height=h, xerr=errs, label=s, hatch="//" if s.startswith("Java") else None)
    ax2.set_yticks([j + 0.4 - h / 2 for j in range(len(shown))])
    ax2.set_yticklabels([c.id for c in shown], fontsize=8)
    ax2.invert_yaxis()
    ax2.set_xscale("log")
    ax2.set_xlabel("ms per assignment (log; Java: figures from another machine, range shown as error bar)")
    ax2.set_title("Assignors: time per assignment")
    ax2.legend(fontsize=8)

    labels = [f"{r['shape']} {r['strategy']} {r['gen']}" for r in leader_rows]
    h = 0.8 / 4
    for i, (key, label) in enumerate((("whole", "kwire classic path"), ("frame", "kwire bytes out"),
                                      ("core", "kwire array core"), ("kafka_python", "kafka-python leader path"))):
        ys = [j + i * h for j, r in enumerate(leader_rows) if r[key]]
        xs = [r[key] * 1e3 for r in leader_rows if r[key]]
        if ys:
            ax3.barh(ys, xs, height=h, label=label)
    ax3.set_yticks([j + 0.4 - h / 2 for j in range(len(leader_rows))])
    ax3.set_yticklabels(labels, fontsize=8)
    ax3.invert_yaxis()
    ax3.set_xscale("log")
    ax3.set_xlabel("ms, JoinGroupResponse bytes to SyncGroupRequest bytes (log)")
    ax3.set_title("The leader's whole path against its array core")
    ax3.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _versions():
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for dist in ("kwire", "numpy", "kafka-python", "aiokafka", "kio"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            pass
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="few repeats, no 1M-partition cases (a smoke run)")
    ap.add_argument("--out", default=os.path.join(REPO, "benches", "results"), help="output directory")
    ap.add_argument("--anchors", default=os.environ.get("KWIRE_PERF_ANCHORS", DEFAULT_ANCHORS),
                    help="Java's figures (benches/data/java-assignor-timings.md)")
    ap.add_argument("--no-chart", action="store_true", help="skip the PNG (no matplotlib needed)")
    ap.add_argument("--readme", action="store_true",
                    help="also copy the tables and chart into README.md, between its benchmark-report markers")
    ap.add_argument("--server-only", action="store_true",
                    help="measure only the KIP-848 assignors and replace that section of REPORT.md (and, with "
                         "--readme, of README.md), saying when and at what load it was re-measured")
    ap.add_argument("--no-records", action="store_true",
                    help="skip the record-batch codec and the records-through-the-server sections")
    args = ap.parse_args(argv)
    if args.readme and args.quick:
        ap.error("--readme publishes: not from a --quick run")
    if args.server_only:
        return server_only(args)

    if not args.no_chart:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            ap.error("the chart needs matplotlib (pip install matplotlib), or pass --no-chart")

    import kwire

    stem = "REPORT-quick" if args.quick else "REPORT"
    os.makedirs(args.out, exist_ok=True)
    # Progress goes to stderr; stdout gets the finished report.
    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    load_before = os.getloadavg()
    started = time.perf_counter()

    libs = [lib for lib in LIBRARIES if available(lib)]
    missing = [lib for lib in LIBRARIES if lib not in libs]
    repeat, target = (3, 0.005) if args.quick else (7, 0.05)
    log(f"codec: {len(libs)} libraries, {repeat} repeats of ~{target * 1e3:g} ms")
    codec_results = codec_ratios.measure(repeat, target, libs)

    anchors, anchor_lines = java_anchors(args.anchors)
    cases = [c for c in assignor_cases() if c.quick or not args.quick]
    log(f"assignors: {len(cases)} cases")
    run_assignors(cases, args.quick, log)
    log("leader path")
    leader_rows = run_leader(args.quick, log)
    server_rows = run_server(args.quick, log)
    records = run_records(args.quick, log) if not args.no_records else None
    through_server = run_records_server(args.quick, log) if not args.no_records else None
    load_after = os.getloadavg()

    v = _versions()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    md = [
        f"# kwire benchmark report{' (quick smoke run: few repeats, not for publication)' if args.quick else ''}",
        "",
        f"Made by `python -m benches.report{' --quick' if args.quick else ''}` on {now} in "
        f"{time.perf_counter() - started:.0f} s: Python {platform.python_version()} on {platform.machine()} "
        f"({platform.system()}), {os.cpu_count()} CPUs; load average {' '.join(f'{x:.2f}' for x in load_before)}"
        f" before, {' '.join(f'{x:.2f}' for x in load_after)} after. kwire {v.get('kwire', '(source tree)')} "
        f"({kwire.IMPLEMENTATION}), " + ", ".join(f"{k} {val}" for k, val in v.items() if k != "kwire") + ".",
        "",
    ]
    if missing:
        md += [f"Not installed, so not measured: {', '.join(missing)}.", ""]
    md += ["## Wire codec", "", "Every library encodes the same values and decodes its own bytes of them "
           "(cases: `benches/bench_codec.py`).", "", render_codec(codec_results, libs), ""]
    md += ["## Partition assignors", "", "kwire at the array level from raw arrays (a fresh `ArrayGroup` per "
           "call), its kafka-python and aiokafka adapters on those clients' own inputs, and the clients' "
           "built-in assignors on the same groups (cases: `benches/bench_assignors.py`, "
           "`benches/bench_sticky.py`).", "", render_assignors(cases, anchors), ""]
    md += ["## The leader's whole path", "", "Bytes to bytes, as a group leader calls it (cases: "
           "`benches/bench_leader.py`).", "", render_leader(leader_rows), ""]
    md += ["## " + SERVER_HEADING, "", SERVER_INTRO + ".", "", render_server(server_rows), ""]
    if records is not None:
        md += ["## Record batches", "", "The same batches (a 12-byte key, a 100-byte value and two headers per "
               "record) decoded and encoded by each library, the bytes written by aiokafka's builder (cases: "
               "`benches/bench_records.py`).", "", render_records(records), ""]
        md += ["## Records through the server", "", "`kwire serve` (its own process, 3 brokers) and librdkafka's "
               "mock cluster (inside a client process, 3 brokers), the same clients one after the other "
               f"(`benches/bench_records_server.py`): {BRS.summary(through_server)}.", "",
               BRS.render(through_server), ""]
    md += ["## Java's figures (reference, not measured in this run)", ""]
    if anchor_lines:
        md += [f"Quoted from `{os.path.relpath(args.anchors, REPO)}`, section D: single-shot wall times of the "
               "Java client's assignors (JDK 17.0.15, 2-vCPU AMD EPYC VM), three repetitions each, JIT warm-up "
               "included.", ""] + anchor_lines + [""]
    else:
        md += [f"`{args.anchors}` not found: no Java figures.", ""]
    if not args.no_chart:
        png = os.path.join(args.out, f"{stem}.png")
        chart(png, codec_results, libs, cases, anchors, leader_rows)
        md += ["## Chart", "", f"![kwire against its peers]({stem}.png)", ""]
    path = os.path.join(args.out, f"{stem}.md")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(md))
    print("\n".join(md))
    log(f"wrote {path}")
    if args.readme:
        update_readme(md, os.path.relpath(os.path.join(args.out, f"{stem}.png"), REPO))
        log("updated README.md")
    return 0


SERVER_HEADING = "The coordinator's assignors (KIP-848)"
SERVER_INTRO = ("`uniform` and `range` as Kafka's group coordinator runs them, on the groups of Kafka's own timing "
                "harness (cases: `benches/bench_server_assignors.py`; Java's figures from the same sitting are in "
                "docs/ASSIGNORS.md)")


def server_only(args):
    """Re-measure the KIP-848 section alone and put it in place of the old one, in REPORT.md and (``--readme``)
    README.md, with a line saying it was measured apart from the rest of the report."""
    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    load_before = os.getloadavg()
    rows = run_server(args.quick, log)
    load_after = os.getloadavg()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    body = [SERVER_INTRO + ". Re-measured on its own by `python -m benches.report --server-only` on "
            f"{now}, load average {' '.join(f'{x:.2f}' for x in load_before)} before, "
            f"{' '.join(f'{x:.2f}' for x in load_after)} after; the rest of the report is from the run above.",
            "", render_server(rows), ""]
    print("\n".join(body))
    if args.quick:
        return 0
    targets = [(os.path.join(args.out, "REPORT.md"), "## ")] + ([(os.path.join(REPO, "README.md"), "### ")]
                                                               if args.readme else [])
    for path, level in targets:
        replace_section(path, level + SERVER_HEADING, body)
        log(f"updated {path}")
    return 0


def replace_section(path, heading, body):
    """Replace the lines under ``heading`` (up to the next heading, image or marker) with ``body``."""
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    if heading not in lines:
        raise SystemExit(f"{path} has no line {heading!r}")
    start = lines.index(heading) + 1
    end = start
    while end < len(lines) and not lines[end].startswith(("#", "![", "<!--")):
        end += 1
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines[:start] + [""] + body + lines[end:]))


README_START = "<!-- benchmark-report:start -->"
README_END = "<!-- benchmark-report:end -->"


def update_readme(md, png):
    """Put the report's tables (its headings one level down) and chart into README.md."""
    keep, skipping = [], False
    for line in md[3:]:
        if line.startswith("## "):
            skipping = line.startswith("## Java") or line.startswith("## Chart")
            if not skipping:
                keep.append("#" + line)
            continue
        if not skipping:
            keep.append(line)
    block = [README_START, "", md[2], ""] + keep + [f"![kwire against its peers]({png})", "", README_END]
    path = os.path.join(REPO, "README.md")
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    if README_START not in text or README_END not in text:
        raise SystemExit(f"README.md has no {README_START} ... {README_END} markers")
    head, rest = text.split(README_START, 1)
    _old, tail = rest.split(README_END, 1)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(head + "\n".join(block) + tail)


if __name__ == "__main__":
    sys.exit(main())
