"""The what-if's replay: every strategy on every generation a bucket packed
(:mod:`kwire.pipeline._whatif_pack`), and its rows read off the answers.

A generation's rows are the observed assignment, then each strategy's: how
many partitions it assigns and moves, its members' highest and lowest load,
and whether it gives each member the list the member received.
"""

from __future__ import annotations

import time
from typing import List

import numpy as np
import pyarrow as pa

from kwire import assignors
from kwire.assignors import segment_starts
from kwire.errors import KwireError
from kwire.pipeline._events import STRATEGIES, WHATIF_SCHEMA
from kwire.pipeline._whatif_pack import I32, I64, LAID_OUT, Packed, Variant, gather, whatif_generations

# The batch reads a generation's rows with a fixed number of NumPy calls per
# block of generations instead of about ten per generation and strategy (as
# the tests' reference, tests/whatif_oracle.py, reads them one by one),
# which on the what-if's groups of three or four members cost more than the
# arithmetic; for the same reason range and roundrobin run on all the
# generations in one call each (assignors.assign_arrays_many).  Each
# generation (and each answer) gets ranges of its own in concatenated
# arrays: owner codes from a code base, topic ids from a topic base (so
# partition keys stay sorted across generations), partition slots from a
# slot base, members from a member base.  Per-segment results are reduceat
# over segments that are never empty (every generation has members, every
# answer a slot past its end) or bincount of the segment numbers.


def _moved_counts(now, prev_codes, none_code, segment, n):
    """Per segment, how many previously owned partitions have another owner
    (``now``: each one's owner code, -1 for none; ``none_code``: each
    segment's code of an owner named None, or -2)."""
    same = now == prev_codes
    if (none_code >= 0).any():  # rare: most generations name no owner None
        same |= (now == -1) & (prev_codes == none_code[segment])
    return np.bincount(segment[~same], minlength=n)


def _loads_range(loads, starts):
    return np.maximum.reduceat(loads, starts), np.minimum.reduceat(loads, starts)


def _read_observed(c):
    """``(assigned, moved, max_load, min_load)`` of every generation's observed row
    (``c``: the generations' :class:`_Columns`)."""
    n = len(c.head)
    sizes, has_prev, head = c.sizes, c.has_prev, c.head
    every = np.arange(n)
    obs_len = head["observed"]
    code_base, n_codes = segment_starts(head["owner_codes"])
    codes = gather(c.obs_codes, every)[0]
    member_codes = c.codes_of(every) + np.repeat(code_base, sizes)
    loads = np.bincount(codes + np.repeat(code_base, obs_len), minlength=n_codes)[member_codes]
    hi, lo = _loads_range(loads, segment_starts(sizes)[0])
    moved = np.zeros(n, I64)
    with_prev = np.flatnonzero(has_prev)
    if len(with_prev):
        topic_base = segment_starts(head["topic_ids"])[0] << 32
        keys = gather(c.obs_keys, every)[0] + np.repeat(topic_base, obs_len)
        prev_codes, prev_len = gather(c.prev_codes, with_prev)
        prev_keys = gather(c.prev_keys, with_prev)[0] + np.repeat(topic_base[with_prev], prev_len)
        at = np.minimum(np.searchsorted(keys, prev_keys), len(keys) - 1)
        now = np.where(keys[at] == prev_keys, codes[at], -1)
        moved[with_prev] = _moved_counts(now, prev_codes, c.none_code[with_prev],
                                         np.repeat(np.arange(len(with_prev)), prev_len), len(with_prev))
    return obs_len, moved, hi, lo



class _Columns:
    """What the batch reads of the generations and (:meth:`of_answers`)
    of their two variants: their heads, and their columns (:data:`LAID_OUT`),
    each a ragged ``(values, starts, lengths)`` over a :class:`Packed`'s
    arrays; an answer picks its generation's and variant's pieces by index
    (many answers share them: each generation has four)."""

    def __init__(self, packed: Packed):
        self.head = head = packed.head
        self.sizes = np.ascontiguousarray(head["members"])
        self.has_prev = head["has_prev"] > 0
        self.none_code = np.ascontiguousarray(head["none_code"])
        for (name, field), (values, starts) in zip(LAID_OUT, packed.columns):
            setattr(self, name, (values, starts, head[field]))
        self.values = packed.variant_values
        # (generation, variant) -> where each of the variant's columns starts; one variant stands for both
        self.variant_bases = packed.variant_bases
        self.variant_lengths = head["variant_lengths"]

    def codes_of(self, which):
        """The member codes of generations ``which``, end to end."""
        sizes = self.sizes[which]
        base, total = segment_starts(sizes)
        codes = np.arange(total) - np.repeat(base, sizes)
        coded = np.flatnonzero(self.head["coded_members"][which])
        if len(coded):
            values, n = gather(self.member_codes, which[coded])
            codes[np.repeat(base[coded] - segment_starts(n)[0], n) + np.arange(len(values))] = values
        return codes

    def of_answers(self, gen, sticky):
        """The columns of each answer's variant: generation ``gen``'s sticky
        one where ``sticky``, its plain one otherwise."""
        bases, lengths = self.variant_bases[gen, sticky], self.variant_lengths[gen, sticky]
        values = self.values
        # each group's topic offsets, its partition count last
        self.topic_starts = (values, bases[:, 0], lengths[:, 0])
        self.n_partitions = values[bases[:, 0] + lengths[:, 0] - 1]
        self.topic_ids = (values, bases[:, 1], lengths[:, 1])
        self.prev_slots = (values, bases[:, 2], lengths[:, 2])


def _read_answers(c, generation, sticky, answer):
    """``(assigned, moved, max_load, min_load, reproduces)`` of each answer in
    ``answer``, end to end (``assignors.end_to_end``), one per generation
    ``generation[j]`` on its sticky variant's group where ``sticky[j]`` and
    its plain one's otherwise; ``moved`` is 0 where the generation has no
    previous one.  ``c``: the generations' :class:`_Columns`."""
    n_answers = len(generation)
    c.of_answers(generation, sticky.astype(I64))
    sizes = c.sizes[generation]
    # each answer's partition slots, and one past its end for "not in the group"
    slot_base, n_slots = segment_starts(c.n_partitions + 1)
    member_base, n_members = segment_starts(sizes)
    indptr = answer.indptr
    n_entries = int(indptr[-1])
    entries_per_answer = np.diff(np.append(indptr[member_base], n_entries))
    answer_of_member = np.repeat(np.arange(n_answers), sizes)
    answer_of_entry = np.repeat(np.arange(n_answers), entries_per_answer)

    topic = answer.topic.astype(I64)  # the group's own topic index
    partition = answer.partition.astype(I64)
    counts = np.diff(indptr)
    member = np.repeat(np.arange(n_members), counts)
    # Owner per partition slot; a partition given twice keeps its last owner, as a dict would.
    owner = np.full(n_slots, -1, I64)
    topic_values, topic_at, _n = c.topic_starts
    owner[slot_base[answer_of_entry] + topic_values[topic_at[answer_of_entry] + topic] + partition] = member
    taken = owner >= 0
    assigned = np.add.reduceat(taken, slot_base, dtype=I64)
    # Each member's load is its count of entries unless a slot was written
    # twice, and then some answer has fewer slots taken than entries.
    loads = counts
    if (assigned != entries_per_answer).any():
        loads = np.bincount(owner[taken], minlength=n_members)
    hi, lo = _loads_range(loads, member_base)

    moved = np.zeros(n_answers, I64)
    picked = np.flatnonzero(c.has_prev[generation])
    if len(picked):
        prev_slots, prev_len = gather(c.prev_slots, picked)
        now = owner[prev_slots + np.repeat(slot_base[picked], prev_len)]
        now = np.where(now >= 0, c.codes_of(generation)[now], -1)
        moved[picked] = _moved_counts(now, gather(c.prev_codes, generation[picked])[0], c.none_code[generation[picked]],
                                      np.repeat(np.arange(len(picked)), prev_len), len(picked))

    # Reproduces: every member's count as received, then its list as it reads
    # back from the Assignment bytes (topics grouped in order of first
    # appearance) or as it stands (a received list may repeat a topic apart).
    miscounted = counts != gather(c.obs_counts, generation)[0]
    counted = np.bincount(answer_of_member[miscounted], minlength=n_answers) == 0
    reproduces = counted.copy()
    if counted.any():
        keep = counted[answer_of_entry]
        id_values, id_at, id_len = c.topic_ids
        entry_answer = answer_of_entry[keep]
        keys = (id_values[id_at[entry_answer] + topic[keep]] << 32) | partition[keep]
        received = gather(c.obs_lists, generation[counted])[0]
        as_is = np.bincount(entry_answer[keys != received], minlength=n_answers) == 0
        reproduces &= as_is
        redo = ~as_is[entry_answer]  # only the lists that differ as they stand are regrouped
        if redo.any():
            # each entry's place is where its (member, topic) first appears:
            # written from the back, a repeated index keeps the first one
            width = int(id_len.max()) + 1
            member_topic = (member[keep] * width + topic[keep])[redo]
            place = np.arange(len(member_topic))
            first = np.empty(n_members * width, I64)
            first[member_topic[::-1]] = place[::-1]
            grouped = keys[redo][np.argsort(first[member_topic], kind="stable")]
            regrouped = np.bincount(entry_answer[redo][grouped != received[redo]], minlength=n_answers) == 0
            reproduces |= counted & regrouped
    return assigned, moved, hi, lo, reproduces


def _sticky_pair_stacked(sticky, paired, sizes, implementation):
    """``{strategy: (generations, answer)}`` of both sticky
    strategies run on every generation of ``paired`` (those whose plain and
    sticky groups were built) in one call; a generation the call refuses is
    left out, to run (and report its failure) alone as :func:`run_strategies` runs it."""
    if not paired:
        return {}
    *both, refused = assignors.assign_sticky_pair_many([sticky[i].group for i in paired],
                                                       implementation=implementation)
    if refused:
        keep = np.ones(len(paired), bool)
        keep[list(refused)] = False
        # a refused group's members hold nothing: dropping their rows leaves the others' entries as they are
        member_kept = np.repeat(keep, sizes[paired])
        both = [assignors.ArrayAssignment(np.append(0, np.cumsum(np.diff(a.indptr)[member_kept])), a.topic,
                                          a.partition) for a in both]
        paired = [i for i, kept in zip(paired, keep) if kept]
    return {strategy: (paired, answer) for strategy, answer in zip(("sticky", "cooperative-sticky"), both)}


#: Generations replayed together.  The batch's arrays grow with it, and past
#: a few hundred generations its scattered reads and sorts leave the CPU's
#: caches: 4,766 generations in blocks of 512 replayed ~1.3x faster than in one.
_BLOCK = 512


def replay_batch(packed: Packed, strategies=STRATEGIES, implementation=None) -> pa.Table:
    """The what-if rows (:data:`WHATIF_SCHEMA`) of the generations ``packed``
    (as :func:`whatif_generations` packs them), in order:
    the observed row and each strategy's for each, with range, roundrobin
    and the sticky pair run on a block of generations at once, and every
    answer read for the whole block."""
    n, width = len(packed), len(strategies) + 1
    if not n:
        return WHATIF_SCHEMA.empty_table()
    # the blocks' columns end to end, made into Arrow once: a table per block cost more than its columns
    blocks = [_replay_block(packed.block(k, k + _BLOCK), strategies, implementation) for k in range(0, n, _BLOCK)]
    head, assigned, moved, max_load, min_load, reproduces, failed, error_at = (
        np.concatenate(column) for column in zip(*(b[:-1] for b in blocks)))
    errors = [e for b in blocks for e in b[-1]]
    # each block numbered its errors from 0
    error_base = np.repeat(segment_starts(np.array([len(b[-1]) for b in blocks], I64))[0],
                           [len(b[0]) * width for b in blocks])
    error_at = np.where(error_at < 0, -1, error_at + error_base)
    n_rows = n * width
    generation = np.repeat(np.arange(n), width)
    observed = np.zeros(n_rows, bool)
    observed[::width] = True
    # the observed row's name is the group's protocol, the others the strategy's
    names = pa.array(list(packed.protocol_names) + list(strategies), pa.string())
    name_at = np.where(observed, generation, n + np.arange(n_rows) % width - 1)

    def int32(values, mask):
        return pa.array(values.astype(I32), pa.int32(), mask=mask)

    return pa.Table.from_arrays([
        pa.array(packed.group_ids, pa.string()).take(generation),
        pa.array(head["generation_id"].astype(I32)[generation], pa.int32()),
        names.take(name_at),
        pa.array(observed, pa.bool_()),
        pa.array(head["members"].astype(I32)[generation], pa.int32()),
        pa.array(head["partitions"].astype(I32)[generation], pa.int32()),
        int32(assigned, failed),
        int32(moved, failed | (head["has_prev"] == 0)[generation]),
        int32(max_load, failed),
        int32(min_load, failed),
        int32(max_load - min_load, failed),
        pa.array(reproduces, pa.bool_(), mask=failed | observed),
        pa.array(errors, pa.string()).take(pa.array(error_at, mask=error_at < 0)),
    ], schema=WHATIF_SCHEMA)



def _replay_block(packed: Packed, strategies, implementation):
    """One block of :func:`replay_batch`: the generations' heads, then per row
    (the observed one and each strategy's, generation after generation)
    assigned, moved, max load, min load, reproduces, failed and the index of
    its error in the list of errors that comes last."""
    n, width = len(packed), len(strategies) + 1
    n_rows = n * width
    columns = _Columns(packed)
    sizes = columns.sizes
    assigned, moved, max_load, min_load = (np.zeros(n_rows, I64) for _ in range(4))
    reproduces = np.zeros(n_rows, bool)
    failed = np.zeros(n_rows, bool)
    error_at = np.full(n_rows, -1, I64)
    errors: List[str] = []

    observed_rows = np.arange(n) * width
    (assigned[observed_rows], moved[observed_rows], max_load[observed_rows],
     min_load[observed_rows]) = _read_observed(columns)

    # Range and roundrobin run every generation in one call each (their
    # kernels split one topic at a time, whichever group it is of), and the
    # sticky pair every generation in one call too; a generation a stacked
    # call cannot take runs alone.
    head = columns.head
    plain_ok = head["plain_ok"] > 0
    plain = np.flatnonzero(plain_ok).tolist()
    plain_groups = [packed.plain[i].group for i in plain]
    stacked = {}  # strategy -> (generations, answer end to end)
    with assignors.sharing_stacks():  # range and roundrobin on the same groups: one stack of their columns
        for strategy in strategies:
            if strategy in ("range", "roundrobin") and plain and strategy not in stacked:
                try:
                    stacked[strategy] = (plain, assignors.assign_arrays_many(strategy, plain_groups,
                                                                             implementation=implementation))
                except KwireError:
                    pass  # each generation then runs, and reports its failure, on its own
    if "sticky" in strategies and "cooperative-sticky" in strategies:
        paired = np.flatnonzero(plain_ok & (head["sticky_ok"] > 0)).tolist()
        stacked.update(_sticky_pair_stacked(packed.sticky, paired, sizes, implementation))
    rows_of, answers = [], []
    # which strategies (columns 1 on) each generation still runs alone
    alone = np.ones((n, width), bool)
    for k, strategy in enumerate(strategies, 1):
        if strategy in stacked:
            done, answer = stacked[strategy]
            rows_of.append(np.array(done, I64) * width + k)
            answers.append(answer)
            alone[done, k] = False
    for i in np.flatnonzero(alone[:, 1:].any(axis=1)).tolist():
        todo = (np.flatnonzero(alone[i, 1:]) + 1).tolist()
        for k, (_v, result, error) in zip(todo, run_strategies(packed.plain[i], packed.sticky[i],
                                                         [strategies[k - 1] for k in todo], implementation)):
            k += i * width
            if result is None:
                failed[k] = True
                error_at[k] = len(errors)
                errors.append(error)
            else:
                rows_of.append(np.array([k], I64))
                answers.append(result)
    if rows_of:
        rows_of = np.concatenate(rows_of)
        # the sticky strategies claim the previous ownership: their answers are on the sticky variant's group
        on_sticky = np.array([False] + [s in ("sticky", "cooperative-sticky") for s in strategies])
        (assigned[rows_of], moved[rows_of], max_load[rows_of], min_load[rows_of],
         reproduces[rows_of]) = _read_answers(columns, rows_of // width, on_sticky[rows_of % width],
                                              assignors.end_to_end(answers))

    return columns.head, assigned, moved, max_load, min_load, reproduces, failed, error_at, errors


def run_strategies(plain: Variant, sticky: Variant, strategies, implementation):
    """Each strategy's ``(variant, ArrayAssignment, None)`` for a
    generation of these variants, or ``(variant, None, error text)`` where
    kwire's assignor refused its inputs."""
    answered = {}
    if sticky.error is None and "sticky" in strategies and "cooperative-sticky" in strategies:
        # The pair shares one run of Java's algorithm, most of what each costs on a small group.
        try:
            answered = dict(zip(("sticky", "cooperative-sticky"),
                                assignors.assign_sticky_pair(sticky.group, implementation=implementation)))
        except KwireError:
            pass  # each strategy then runs, and reports its failure, on its own below
    out = []
    for strategy in strategies:
        v = sticky if strategy in ("sticky", "cooperative-sticky") else plain
        try:
            if v.error is not None:
                raise v.error
            result = answered.get(strategy)
            if result is None:
                result = assignors.assign_arrays(strategy, v.group, implementation=implementation)
        except KwireError as exc:
            # The inputs the capture gives this generation are not a valid
            # group (the bad frames were already left out): the row reports
            # it and the other groups go on.
            out.append((v, None, f"{type(exc).__name__}: {exc}"))
            continue
        out.append((v, result, None))
    return out


def whatif_table(timelines, strategies=STRATEGIES, implementation=None, timer=None) -> pa.Table:
    """The what-if rows of ``timelines``.  ``timer``: gets ``add(seconds)``
    with the time spent in :func:`replay_batch` (its Arrow table included),
    not in building timelines or packing arrays."""
    return timed_replay(whatif_generations(timelines), strategies, implementation, timer)


def timed_replay(inputs, strategies=STRATEGIES, implementation=None, timer=None, cpu_timer=None) -> pa.Table:
    """:func:`replay_batch` of packed ``inputs``, its seconds added to ``timer``
    (as :func:`whatif_table` times them) and the CPU seconds of this thread
    in it to ``cpu_timer``: on a shared machine the first counts the time
    the process waited for a core too."""
    t, cpu = time.perf_counter(), time.thread_time()
    table = replay_batch(inputs, strategies, implementation)
    if timer is not None:
        timer.add(time.perf_counter() - t)
    if cpu_timer is not None:
        cpu_timer.add(time.thread_time() - cpu)
    return table
