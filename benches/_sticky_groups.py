"""Group builders for the sticky benchmarks (ArrayGroup built straight from arrays)."""

import numpy as np

from kwire.assignors import ArrayGroup


def names(prefix, n):
    width = len(str(max(n - 1, 0)))
    return [f"{prefix}{i:0{width}d}" for i in range(n)]


def group(num_topics, parts, num_members, subs_of=None, owned=None, generation=None):
    """``subs_of(i) -> topic indices`` (default: all topics). ``owned`` is an
    (indptr, topic, partition) triple for members, sorted per member by
    (topic, partition) as the Subscription carries them."""
    topics = names("topic-", num_topics)
    members = names("consumer-", num_members)
    counts = np.full(num_topics, parts, dtype=np.int32)
    if subs_of is None:
        sub_indptr = np.arange(num_members + 1, dtype=np.int64) * num_topics
        sub_topics = np.tile(np.arange(num_topics, dtype=np.int32), num_members)
    else:
        lists = [np.asarray(subs_of(i), dtype=np.int32) for i in range(num_members)]
        sub_indptr = np.zeros(num_members + 1, dtype=np.int64)
        sub_indptr[1:] = np.cumsum([len(x) for x in lists])
        sub_topics = np.concatenate(lists) if lists else np.zeros(0, np.int32)
    kw = {}
    if owned is not None:
        kw = dict(owned_indptr=owned[0], owned_topic=owned[1], owned_partition=owned[2],
                  generation=np.full(num_members, generation, np.int32),
                  subscription_generation=np.full(num_members, generation, np.int32))
    return ArrayGroup(topics, counts, members, sub_indptr, sub_topics, **kw)


def after_leave(g, result, leaving, generation=1):
    """The next rebalance: members in ``leaving`` are gone, the rest re-join
    owning what ``result`` gave them (sorted by topic, partition)."""
    keep = np.array([i for i in range(g.num_members) if i not in set(leaving)], dtype=np.int64)
    M = len(keep)
    owned_t, owned_p, indptr = [], [], np.zeros(M + 1, dtype=np.int64)
    for j, i in enumerate(keep):
        t, p = result.member_slice(int(i))
        order = np.lexsort((p, t))
        owned_t.append(t[order])
        owned_p.append(p[order])
        indptr[j + 1] = indptr[j] + len(t)
    sp = g.sub_indptr
    lists = [g.sub_topics[sp[i]:sp[i + 1]] for i in keep]
    sub_indptr = np.zeros(M + 1, dtype=np.int64)
    sub_indptr[1:] = np.cumsum([len(x) for x in lists])
    return ArrayGroup(g.topics, g.partition_counts, [g.member_ids[i] for i in keep], sub_indptr,
                      np.concatenate(lists).astype(np.int32),
                      owned_indptr=indptr, owned_topic=np.concatenate(owned_t).astype(np.int32),
                      owned_partition=np.concatenate(owned_p).astype(np.int32),
                      generation=np.full(M, generation, np.int32),
                      subscription_generation=np.full(M, generation, np.int32))
