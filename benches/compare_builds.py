"""Time the paths users call on two builds of kwire in one run, interleaved.

    python benches/compare_builds.py BEFORE_TREE AFTER_TREE [--rounds 5] [--quick]

Each tree is a checkout with its extensions built in place (``python setup.py
build_ext --inplace``).  Every round runs each case once per tree, in a fresh
subprocess with ``PYTHONPATH`` set to that tree, alternating which tree goes
first, so machine noise lands on both sides alike; the table gives each side's
median over the rounds and after ÷ before.  Only kwire's public API is used
(``kwire.encode_request``, ``kwire.leader_assignments``, ``kwire.assign``,
``kwire.assignors.assign_arrays`` ...), which is what makes two layouts of the tree
comparable.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

# One case a line: (name, setup code, timed statement, calls per timing).  The setup builds inputs; the
# statement is what a user calls.  ``best`` of a few repeats inside one process keeps the noise of a single
# subprocess down; the medians across rounds handle the rest.
_COMMON = """
import kwire
from kwire.assignors import ArrayGroup, GroupMember, assign_arrays

def join_response(n_members, n_topics, parts, strategy):
    topics = [f"topic-{t:04d}" for t in range(n_topics)]
    sub = kwire.Subscription(topics=topics).encode(3)
    members = [kwire.JoinGroupResponseMember(member_id=f"consumer-{i:05d}-0f6b7c2e-5d1a-4b7e-9e0f", metadata=sub)
               for i in range(n_members)]
    resp = kwire.JoinGroupResponse(generation_id=1, protocol_type="consumer", protocol_name=strategy,
                                   leader=members[0].member_id, member_id=members[0].member_id, members=members)
    return kwire.encode_response(resp, 9, correlation_id=1), {t: parts for t in topics}

def leader_path(frame, counts, strategy):
    _h, resp = kwire.decode_response(frame, 11, 9)
    out = kwire.leader_assignments(strategy, resp, counts)
    req = kwire.SyncGroupRequest(group_id="g", generation_id=1, member_id=resp.leader, protocol_type="consumer",
                                 protocol_name=strategy, assignments=out)
    return kwire.encode_request(req, 5, correlation_id=2, client_id="c")
"""

CASES = [
    ("heartbeat encode_request v4", "msg = kwire.HeartbeatRequest(group_id='bench-group', generation_id=7, member_id='m' * 40)",
     "kwire.encode_request(msg, 4, 1, 'client')", 20000),
    ("heartbeat decode_request v4", "f = kwire.encode_request(kwire.HeartbeatRequest(group_id='bench-group', generation_id=7, member_id='m' * 40), 4, 1, 'client')",
     "kwire.decode_request(f)", 20000),
    ("JoinGroupResponse v9 x1000 decode", "frame, _ = join_response(1000, 1, 1, 'range'); body = frame[9:]  # size, correlation id, header tags",
     "kwire.JoinGroupResponse.decode(body, 9)", 50),
    ("JoinGroupResponse v9 x1000 decode_response", "frame, _ = join_response(1000, 1, 1, 'range')",
     "kwire.decode_response(frame, 11, 9)", 50),
    ("leader path range 100x1k", "frame, counts = join_response(100, 10, 100, 'range')",
     "leader_path(frame, counts, 'range')", 5),
    ("leader path roundrobin 100x1k", "frame, counts = join_response(100, 10, 100, 'roundrobin')",
     "leader_path(frame, counts, 'roundrobin')", 5),
    ("leader path coop-sticky 100x1k", "frame, counts = join_response(100, 10, 100, 'cooperative-sticky')",
     "leader_path(frame, counts, 'cooperative-sticky')", 5),
    ("leader path range 1000x10k", "frame, counts = join_response(1000, 100, 100, 'range')",
     "leader_path(frame, counts, 'range')", 1),
    ("leader path coop-sticky 1000x10k", "frame, counts = join_response(1000, 100, 100, 'cooperative-sticky')",
     "leader_path(frame, counts, 'cooperative-sticky')", 1),
    ("assign() range 1000x10k",
     "topics=[f't{i:03d}' for i in range(100)]; sub=kwire.Subscription(topics=topics); "
     "members=[GroupMember(f'm{i:05d}', None, sub) for i in range(1000)]; counts={t: 100 for t in topics}",
     "kwire.assign('range', members, counts)", 1),
    ("array core range 1000x10k",
     "import numpy as np; topics=[f't{i:03d}' for i in range(100)]; ids=[f'm{i:05d}' for i in range(1000)]; "
     "g = ArrayGroup(topics, np.full(100, 100, np.int32), ids, np.arange(0, 100001, 100, dtype=np.int64), "
     "np.tile(np.arange(100, dtype=np.int32), 1000))",
     "assign_arrays('range', g)", 5),
    ("array core coop-sticky 20k halves",
     "import numpy as np; topics=[f't{i:03d}' for i in range(100)]; ids=[f'm{i:04d}' for i in range(500)]; "
     "subs=[list(range(50)) if i % 4 == 0 else list(range(50, 100)) for i in range(500)]; "
     "ptr=np.zeros(501, np.int64); ptr[1:]=np.cumsum([len(s) for s in subs]); "
     "g = ArrayGroup(topics, np.full(100, 200, np.int32), ids, ptr, np.concatenate([np.array(s, np.int32) for s in subs]))",
     "assign_arrays('cooperative-sticky', g)", 3),
]

QUICK = {"heartbeat encode_request v4", "heartbeat decode_request v4", "JoinGroupResponse v9 x1000 decode",
         "leader path range 100x1k", "leader path coop-sticky 100x1k", "array core range 1000x10k"}

_RUNNER = r"""
import json, sys, time, gc
exec(sys.argv[1])
setup, stmt, number = sys.argv[2], sys.argv[3], int(sys.argv[4])
exec(setup)
code = compile(stmt, "<bench>", "eval")
eval(code)  # warm up (first-call imports, caches)
best = float("inf")
for _ in range(5):
    gc.collect()
    gc.disable()
    t = time.perf_counter()
    for _ in range(number):
        eval(code)
    best = min(best, (time.perf_counter() - t) / number)
    gc.enable()
print(json.dumps(best))
"""


def _time(tree, case):
    _name, setup, stmt, number = case
    env = dict(os.environ, PYTHONPATH=tree)
    env.pop("KWIRE_NO_EXTENSIONS", None)
    out = subprocess.run([sys.executable, "-c", _RUNNER, _COMMON, setup, stmt, str(number)], env=env,
                         capture_output=True, text=True, cwd=tree, timeout=600)
    if out.returncode:
        return None, out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "failed"
    return json.loads(out.stdout), None


def _fmt(seconds):
    if seconds is None:
        return "n/a"
    for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="only the cheap cases")
    args = ap.parse_args(argv)
    trees = [os.path.abspath(args.before), os.path.abspath(args.after)]
    cases = [c for c in CASES if not args.quick or c[0] in QUICK]
    times = {c[0]: ([], []) for c in cases}
    errors = {}
    for r in range(args.rounds):
        for case in cases:
            order = (0, 1) if r % 2 == 0 else (1, 0)
            for side in order:
                t, err = _time(trees[side], case)
                if t is None:
                    errors[(case[0], side)] = err
                else:
                    times[case[0]][side].append(t)
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    print(f"| case | before ({args.before}) | after ({args.after}) | after ÷ before |")
    print("|---|---|---|---|")
    for case in cases:
        b, a = (statistics.median(x) if x else None for x in times[case[0]])
        ratio = f"{a / b:.2f}" if a and b else "n/a"
        print(f"| {case[0]} | {_fmt(b)} | {_fmt(a)} | {ratio} |")
    for (name, side), err in errors.items():
        print(f"{name} on {'before' if side == 0 else 'after'}: {err}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
