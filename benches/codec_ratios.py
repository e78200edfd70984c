"""Codec speed ratios, kwire against kafka-python, kio and aiokafka, in one run.

    python benches/codec_ratios.py [--repeat 7] [--target-time 0.05] [--gc] [--cpu]

Runs the cases of ``benches/bench_codec.py`` with ``timeit`` and prints two
Markdown tables: time per call (min over repeats, median in brackets) and
ratios (peer time / kwire time, from the mins; above 1 means kwire is
faster).  Repeats are interleaved across libraries (repeat 1 of every
library, then repeat 2, ...) so that a burst of machine noise lands on all
of them rather than on one, which keeps the ratios comparable within a run
even when absolute times drift between runs.

timeit switches the cyclic garbage collector off while it times, and so
does this script unless ``--gc`` is given.  Decoders that allocate a
thousand objects per call trigger several generation-0 collections per call
with it on, which is what a running client pays; ``--gc`` shows that cost
(pytest-benchmark, in bench_codec.py, leaves the collector on).

``--cpu`` times with the process's CPU clock instead of the wall clock: on a
shared machine (2 cores, other jobs running) time spent descheduled then
stops counting, although cache and frequency effects of the other jobs stay.
"""

import argparse
import os
import platform
import statistics
import sys
import time
import timeit

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benches.bench_codec import CASES, LIBRARIES, TARGETS_US, available, label, prepare  # noqa: E402


def _timeit(fn, setup, number, timer):
    return timeit.Timer(fn, setup=setup, timer=timer).timeit(number)


def _number_for(fn, target_time, setup, timer):
    """Calls per repeat so that one repeat takes about ``target_time`` seconds."""
    n = 1
    while True:
        t = _timeit(fn, setup, n, timer)
        if t >= target_time / 5 or n >= 1 << 24:
            return max(1, int(n * target_time / max(t, 1e-9)))
        n *= 4


def measure(repeat, target_time, libs, gc_on=False, timer=time.perf_counter):
    """{(case id, op): {lib: (label, [seconds per call, one per repeat])}}."""
    setup = "import gc; gc.enable()" if gc_on else "pass"
    results = {}
    for case in CASES:
        for op in ("encode", "decode"):
            fns = {}
            for lib in libs:
                version_used, encode, decode = prepare(lib, case)
                fn = encode if op == "encode" else decode
                fn()  # first call outside the timing: lazy codegen, plan caches
                fns[lib] = (label(lib, case, version_used), fn, _number_for(fn, target_time, setup, timer))
            samples = {lib: [] for lib in fns}
            for _ in range(repeat):
                for lib, (_, fn, number) in fns.items():
                    samples[lib].append(_timeit(fn, setup, number, timer) / number)
            results[(case.id, op)] = {lib: (fns[lib][0], samples[lib]) for lib in fns}
    return results


def fmt_us(seconds):
    """Microseconds, with fewer decimals the larger they are; public: benches/report.py prints times the same way."""
    us = seconds * 1e6
    if us < 10:
        return f"{us:.3f}"
    if us < 1000:
        return f"{us:.1f}"
    return f"{us:,.0f}"


def _cell(lbl, lib, samples):
    text = f"{fmt_us(min(samples))} ({fmt_us(statistics.median(samples))})"
    return text if lbl == lib else f"{text} [{lbl.split('@')[1]}]"


def render(results, libs):
    lines = ["Time per call in µs: min over repeats (median). [vN]: the library's highest version, used instead.", ""]
    lines.append("| case | op | " + " | ".join(libs) + " | kwire-c target | met |")
    lines.append("|" + "---|" * (len(libs) + 4))
    for (cid, op), by_lib in results.items():
        row = [cid, op]
        for lib in libs:
            lbl, samples = by_lib[lib]
            row.append(_cell(lbl, lib, samples))
        target = TARGETS_US.get((cid, op))
        if target is None or "kwire-c" not in by_lib:
            row += ["", ""]
        else:
            best = min(by_lib["kwire-c"][1]) * 1e6
            row += [f"≤ {target:g}", "yes" if best <= target else f"no ({best / target:.2f}x)"]
        lines.append("| " + " | ".join(row) + " |")

    peers = [p for p in ("kafka-python", "kio", "aiokafka") if p in libs]
    ours = [k for k in ("kwire-c", "kwire-py") if k in libs]
    pairs = [(p, k) for k in ours for p in peers]
    lines += ["", "Ratios (peer min / kwire min; > 1: kwire faster). *: the peer ran an older, smaller version.", ""]
    lines.append("| case | op | " + " | ".join(f"{p} / {k}" for p, k in pairs) + " |")
    lines.append("|" + "---|" * (len(pairs) + 2))
    for (cid, op), by_lib in results.items():
        row = [cid, op]
        for p, k in pairs:
            plbl, ps = by_lib[p]
            _, ks = by_lib[k]
            row.append(f"{min(ps) / min(ks):.2f}" + ("*" if plbl != p else ""))
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7, help="timed repeats per library and case (default 7)")
    ap.add_argument("--target-time", type=float, default=0.05, help="seconds per repeat (default 0.05)")
    ap.add_argument("--gc", action="store_true", help="keep the garbage collector on while timing")
    ap.add_argument("--cpu", action="store_true", help="time with process CPU time instead of wall time")
    args = ap.parse_args(argv)

    libs = [lib for lib in LIBRARIES if available(lib)]
    missing = [lib for lib in LIBRARIES if lib not in libs]
    load_before = os.getloadavg()
    timer = time.process_time if args.cpu else time.perf_counter
    results = measure(args.repeat, args.target_time, libs, gc_on=args.gc, timer=timer)

    import kafka
    import aiokafka
    versions = {"kafka-python": kafka.__version__, "aiokafka": aiokafka.__version__}
    try:
        from importlib.metadata import version
        versions["kio"] = version("kio")
    except Exception:  # noqa: BLE001 - only for the header line
        pass
    print(f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs; "
          + ", ".join(f"{k} {v}" for k, v in versions.items())
          + f"; {args.repeat} repeats of ~{args.target_time * 1000:g} ms each"
          + f"; garbage collector {'on' if args.gc else 'off (timeit default)'}"
          + f"; {'process CPU' if args.cpu else 'wall'} clock"
          + f"; load average {' '.join(f'{x:.2f}' for x in load_before)} before the run")
    if missing:
        print(f"Not available: {', '.join(missing)}")
    print()
    print(render(results, libs))
    if "kwire-c" in libs:
        print()
        print(render_framing(framing_ratios(args.repeat, args.target_time, timer)))


def framing_ratios(repeat, target_time, timer):
    """A Heartbeat frame against its body, encode and decode, in the compiled codec (goal: <= 1.5x).

    The frame's calls are kwire's public ones; the body's are the message class's own, so the ratio is what
    the size prefix and the header add."""
    import kwire.codec._codec_c as codec

    msg = codec.HeartbeatRequest(group_id="bench-group", generation_id=7, member_id="m" * 40)
    out = []
    for version in (0, 4):
        body, frame = msg.encode(version), codec.encode_request(msg, version, 1, "client")
        pairs = {
            "encode": (lambda: msg.encode(version), lambda: codec.encode_request(msg, version, 1, "client")),
            "decode": (lambda: codec.HeartbeatRequest.decode(body, version), lambda: codec.decode_request(frame)),
        }
        for op, fns in pairs.items():
            best = [float("inf"), float("inf")]
            numbers = [_number_for(fn, target_time, "pass", timer) for fn in fns]
            for _ in range(repeat):  # interleaved, as for the libraries
                for i, fn in enumerate(fns):
                    best[i] = min(best[i], _timeit(fn, "pass", numbers[i], timer) / numbers[i])
            out.append((f"HeartbeatRequest-v{version}", op, best[0], best[1]))
    return out


def render_framing(rows):
    lines = ["Framing (kwire-c): a Heartbeat frame against its body, min over repeats.", "",
             "| case | op | body | frame | frame / body | target | met |", "|---|---|---|---|---|---|---|"]
    for case, op, body, frame in rows:
        ratio = frame / body
        lines.append(f"| {case} | {op} | {fmt_us(body)} | {fmt_us(frame)} | {ratio:.2f} | <= 1.5 | "
                     f"{'yes' if ratio <= 1.5 else 'no'} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
