"""Record batch benchmarks: kwire's compiled record codec against aiokafka's compiled record classes and
kafka-python's, on the same bytes.

Run: ``python benches/bench_records.py [--quick]``; prints Markdown tables and the load average.  ``benches/report.py``
runs the same cases for the published report (``decode_rows``, ``encode_rows``).

The batches: 1, 100 and 10,000 records, each a 12-byte key, a 100-byte value and two headers, uncompressed and
with each codec.  aiokafka's builder writes them (real client bytes); every library decodes those bytes.

* **decode** = read the batch, check its CRC (aiokafka and kafka-python: ``validate_crc()``, which their consumers
  call by default), and read every record's offset, timestamp, key, value and headers.  kwire's two ways:
  ``for record in batch`` over ``read_record_batches`` (each record made as the loop reaches it, the way
  docs/RECORDS.md gives for reading records, and the figure the ratios compare) and ``batch.records`` of
  ``decode_record_batches`` (every record made first, in a list); aiokafka and kafka-python iterate their batch,
  making each record as the loop reaches it;
* the same, reading only each record's key and value (what most consumers read), and reading no field: both
  kwire and aiokafka make every field's object when they make the record, so these differ by the reads alone;
* uncompressed cases also time the benchmark's loop alone: the same call, loops and field reads over records
  made beforehand, no decoding (``loop_alone``).  Every decoder driven from Python pays it; the table under the
  decode table gives each library's time beyond it, and how much a decoder has left at 30x kafka-python;
* page faults: minor faults per decode of 10,000 records (``getrusage``), for each way;
* **encode** = from Python values (key, value, headers, offset, timestamp) to the batch's bytes;
* compressed cases also give each side's decompression alone (its own library's call on the same payload:
  ``decompress_only`` for kwire, ``peer_decompress_only`` for aiokafka) and its own share, its time minus that.
  The libraries are the same but for zstd where python-zstandard is installed: kwire then decompresses with it,
  keeping its context from one call to the next, and aiokafka with cramjam, which makes a context per call; and
  for gzip where python-isal is installed: kwire's compiled twin then inflates payloads of 320 bytes or more with
  it (ISA-L), aiokafka with the gzip module (zlib).
* glibc's malloc thresholds are fixed for the whole run (``--allocator-as-is`` keeps its adaptive ones), so no
  library's allocations change how the next one's pages are found.

Goals (compiled kwire, uncompressed, 100 and 10,000 records): decode >= 2x aiokafka's compiled classes and
>= 30x kafka-python; CRC-32C >= 5 GB/s over 1 MiB.
"""

import argparse
import os
import sys
import time
import timeit
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from kwire import _impl  # noqa: E402

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
SIZES = (1, 100, 10_000)
VALUE = bytes(range(100))


def values(n):
    return [(b"key-%08d" % i, VALUE, [("trace-id", b"%016x" % i), ("source", b"bench")], i, 1_700_000_000_000 + i)
            for i in range(n)]


def aiokafka_bytes(codec, n):
    from aiokafka.record.default_records import DefaultRecordBatchBuilder

    b = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=0, producer_id=-1,
                                  producer_epoch=-1, base_sequence=-1, batch_size=1 << 30)
    for key, value, headers, offset, ts in values(n):
        b.append(offset, timestamp=ts, key=key, value=value, headers=headers)
    return bytes(b.build())


def _time(fn, number):
    # CPU time of this process, not wall time: on a machine with more runnable work than cores, the time other
    # processes hold the CPU would otherwise be counted against whichever library was running.
    return timeit.Timer(fn, timer=time.process_time).timeit(number)


def _number(fn, budget):
    number = 1
    while _time(fn, number) < budget / 20 and number < 1 << 20:
        number *= 4
    return number


def best(*fns, budget):
    """Best CPU time of one call (s) of each of ``fns``, timed in turns (A B C A B C ...) for about ``budget``
    seconds in all: on a shared machine, load that comes and goes then falls on every library alike."""
    numbers = [_number(fn, budget / len(fns)) for fn in fns]
    out = [float("inf")] * len(fns)
    for _ in range(7):
        for i, fn in enumerate(fns):
            out[i] = min(out[i], _time(fn, numbers[i]) / numbers[i])
    return out


# --- The libraries -----------------------------------------------------------------------------------------------

def _reader(fields):
    """A loop over a batch's records that reads ``fields`` ("all", "key-value" or "none") of each."""
    body = {"all": "r.offset, r.timestamp, r.key, r.value, r.headers", "key-value": "r.key, r.value",
            "none": "pass"}[fields]
    ns = {}
    exec(f"def read(records):\n    for r in records:\n        {body}\n", ns)
    return ns["read"]


def kwire_decode(R, data, fields="all"):
    """``for record in batch`` over read_record_batches: the way docs/RECORDS.md gives for reading records."""
    read = _reader(fields)

    def run():
        for batch in R.read_record_batches(data):
            read(batch)
    return run


def loop_alone(R, data):
    """kwire_decode's loop with no decoder in it: the same call, loops and five field reads, over records kwire
    decoded beforehand and a dict lookup (a C call, as read_record_batches is) standing in for the read.  What
    any decoder driven from Python adds its own time to."""
    import types

    read = _reader("all")
    # A module's attribute, as kwire_decode's R.read_record_batches is, so the call is found the same way.
    M = types.ModuleType("made_beforehand")
    M.read_record_batches = {data: [batch.records for batch in R.decode_record_batches(data)]}.__getitem__

    def run():
        for batch in M.read_record_batches(data):
            read(batch)
    return run


def kwire_decode_list(R, data, fields="all"):
    """``batch.records`` of decode_record_batches: every record made, in a list, before the loop starts."""
    read = _reader(fields)

    def run():
        for batch in R.decode_record_batches(data):
            read(batch.records)
    return run


def peer_decode(batch_class, data, fields="all"):
    read = _reader(fields)

    def run():
        batch = batch_class(data)
        if not batch.validate_crc():
            raise AssertionError("bad CRC")
        read(batch)
    return run


def kwire_encode(R, codec, vals):
    Record, RecordBatch = R.Record, R.RecordBatch

    def run():
        return RecordBatch([Record(k, v, h, offset=o, timestamp=t) for k, v, h, o, t in vals],
                           compression=codec).encode()
    return run


def peer_encode(builder_class, codec, vals):
    def run():
        b = builder_class(magic=2, compression_type=codec, is_transactional=0, producer_id=-1, producer_epoch=-1,
                          base_sequence=-1, batch_size=1 << 30)
        for k, v, h, o, t in vals:
            b.append(o, timestamp=t, key=k, value=v, headers=h)
        return b.build()
    return run


def decompress_only(codec, data):
    """kwire's decompression library call on the batch's payload, as kwire makes it: zlib's decompress, cramjam's
    raw snappy per block of snappy-java's stream, cramjam's raw LZ4 block call per block of a frame the compiled
    twin reads itself (else its LZ4 frame call), and for zstd python-zstandard's decompress with a kept context
    where it is installed (else cramjam's, which makes a context per call)."""
    import cramjam

    from kwire.codec import _records_common as common

    payload = data[61:]
    if codec == 1 and _inflates_with_isal(payload):
        from isal.isal_zlib import decompressobj

        size = min(int.from_bytes(payload[-4:], "little"), R_LIMIT)  # the bound kwire gives: the trailer's size

        return lambda: decompressobj(31).decompress(payload, size + 1)
    if codec == 1:
        return lambda: zlib.decompress(payload, 47)
    if codec == 2:
        blocks, pos = [], 16
        while pos < len(payload):
            n = int.from_bytes(payload[pos:pos + 4], "big")
            blocks.append(payload[pos + 4:pos + 4 + n])
            pos += 4 + n
        return lambda: [cramjam.snappy.decompress_raw(b) for b in blocks]
    if codec == 3 and _reads_lz4_itself(payload):
        return _lz4_blocks(cramjam, payload)
    if codec == 4 and common.ZSTD_CONTEXTS.chosen() == "zstandard":
        import zstandard

        context, capacity = zstandard.ZstdDecompressor(), common.zstd_capacity(payload, R_LIMIT)
        return lambda: context.decompress(payload, max_output_size=capacity, allow_extra_data=False)
    return {3: lambda: cramjam.lz4.decompress(payload), 4: lambda: cramjam.zstd.decompress(payload)}[codec]


def _reads_lz4_itself(payload):
    """Whether kwire's compiled twin reads this (valid) LZ4 frame itself, calling cramjam per block: a frame of
    version 1 with independent blocks and no dictionary, as Kafka's clients write them (docs/RECORDS.md)."""
    return _impl.IMPLEMENTATION == "cython" and payload[4] & 0xE3 == 0x60


def _inflates_with_isal(payload):
    """Whether kwire's compiled twin inflates this gzip payload with python-isal (installed, and the payload
    long enough for it to be the faster)."""
    from kwire.codec import _records_common as common

    return (_impl.IMPLEMENTATION == "cython" and len(payload) >= common.GZIP_ISAL_FROM
            and common.isal_decompressobj() is not None)


def _lz4_blocks(cramjam, payload):
    """cramjam's raw block call on each block of the frame, into one buffer: the library's share of kwire's read of
    an LZ4 frame (the frame's header, sizes and checksums are read by kwire)."""
    flg, blocks = payload[4], []
    pos = 7 + (8 if flg & 0x08 else 0)
    while True:
        size = int.from_bytes(payload[pos:pos + 4], "little")
        pos += 4
        if not size:
            break
        blocks.append((size >> 31, memoryview(payload)[pos:pos + (size & 0x7FFFFFFF)]))
        pos += (size & 0x7FFFFFFF) + (4 if flg & 0x10 else 0)
    out = memoryview(bytearray(len(blocks) * (4 << 20)))
    block_max = 1 << (16 + 2 * (((payload[5] >> 4) & 7) - 4))

    def run():
        at = 0
        for stored, block in blocks:
            if stored:
                out[at:at + len(block)] = block
                at += len(block)
            else:
                at += cramjam.lz4.decompress_block_into(block, out[at:at + block_max], output_len=block_max)
    return run


R_LIMIT = 64 << 20  # kwire's default max_decompressed_size


def peer_decompress_only(codec, data):
    """aiokafka's own decompression call on the same payload (``aiokafka.codec``: the gzip module, cramjam)."""
    from aiokafka import codec as ac

    payload = data[61:]
    return {1: ac.gzip_decode, 2: ac.snappy_decode, 3: ac.lz4_decode, 4: ac.zstd_decode}[codec].__get__(payload)


def decompress_libraries(codec, data):
    """(kwire's, aiokafka's) decompression library for the batch ``data`` of ``codec``, as the table's note names
    them."""
    from kwire.codec import _records_common as common

    if codec == 1 and _inflates_with_isal(data[61:]):
        return "python-isal (ISA-L's inflate)", "the gzip module (zlib)"
    if codec == 1:
        return "zlib", "the gzip module (zlib)"
    if codec == 3 and _reads_lz4_itself(data[61:]):
        return "cramjam's raw block call (the frame read by kwire)", "cramjam's frame call"
    if codec == 4 and common.ZSTD_CONTEXTS.chosen() == "zstandard":
        return "python-zstandard, a kept context", "cramjam, a context per call"
    return "cramjam", "cramjam"


# --- The run -----------------------------------------------------------------------------------------------------

def crc_rates(R, budget):
    blob = os.urandom(1 << 20)
    fns = {"kwire": lambda: R.crc32c(blob), "zlib.crc32 (CRC-32, not -C)": lambda: zlib.crc32(blob)}
    try:
        import crc32c

        fns["crc32c package"] = lambda: crc32c.crc32c(blob)
    except ImportError:
        pass
    return {label: (1 << 20) / t / 1e9 for label, t in zip(fns, best(*fns.values(), budget=budget))}


def decode_rows(R, budget, codecs=CODECS, sizes=SIZES):
    """One row per codec and size: kwire's, aiokafka's and kafka-python's decode times (s) of the same bytes,
    the key-and-value and no-field variants against aiokafka's, and the decompression alone."""
    import aiokafka.record.default_records as aio
    import kafka.record.default_records as kp

    aio_batch = aio.DefaultRecordBatch
    # aiokafka falls back to pure Python without its extension: the comparison is with the compiled classes.
    assert "_crecords" in aio_batch.__module__, f"aiokafka's record classes are not compiled ({aio_batch.__module__})"
    rows = []
    for codec, name in enumerate(CODECS):
        if name not in codecs:
            continue
        for n in sizes:
            data = aiokafka_bytes(codec, n)
            fns = [kwire_decode(R, data), kwire_decode_list(R, data), peer_decode(aio_batch, data),
                   peer_decode(kp.DefaultRecordBatch, data), kwire_decode(R, data, "key-value"),
                   peer_decode(aio_batch, data, "key-value"), kwire_decode(R, data, "none"),
                   peer_decode(aio_batch, data, "none")]
            # Compressed: each side's decompression alone; uncompressed: the benchmark's loop alone.
            fns += [decompress_only(codec, data), peer_decompress_only(codec, data)] if codec else [
                loop_alone(R, data)]
            k, k_list, a, p, k_kv, a_kv, k_none, a_none, *d = best(*fns, budget=budget * 4)
            loop = None if codec else d.pop()
            libraries = decompress_libraries(codec, data) if codec else (None, None)
            rows.append({"codec": name, "records": n, "kwire": k, "kwire_list": k_list, "aiokafka": a,
                         "kafka-python": p, "kwire_kv": k_kv, "aiokafka_kv": a_kv, "kwire_none": k_none,
                         "aiokafka_none": a_none, "decompress": d[0] if d else None,
                         "decompress_aiokafka": d[1] if d else None, "library": libraries[0],
                         "library_aiokafka": libraries[1], "loop": loop})
    return rows


def encode_rows(R, budget, codecs=CODECS, sizes=SIZES):
    """One row per codec and size: the encode times (s) of kwire, aiokafka and kafka-python."""
    import aiokafka.record.default_records as aio
    import kafka.record.default_records as kp

    rows = []
    for codec, name in enumerate(CODECS):
        if name not in codecs:
            continue
        for n in sizes:
            vals = values(n)
            k, a, p = best(kwire_encode(R, name, vals), peer_encode(aio.DefaultRecordBatchBuilder, codec, vals),
                           peer_encode(kp.DefaultRecordBatchBuilder, codec, vals), budget=budget * 2)
            rows.append({"codec": name, "records": n, "kwire": k, "aiokafka": a, "kafka-python": p})
    return rows


def render_decode(rows):
    """kwire's figures are ``for record in batch``'s; "list" is ``batch.records`` of decode_record_batches.  For a
    compressed batch, each side's decompression alone (its own library's call on the same payload) and its own
    share (its time minus that call); the note under the table names the libraries."""
    out = ["| codec | records | kwire decode µs | kwire list µs | aiokafka | kafka-python | × aiokafka "
           "| × kafka-python | list: × aiokafka | list: × kafka-python | × aiokafka, key and value read "
           "| × aiokafka, no field read | decompress µs: kwire's | aiokafka's | own µs: kwire | aiokafka |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    libraries = {}
    for r in rows:
        k, kl, a, p, d, da = (r["kwire"], r["kwire_list"], r["aiokafka"], r["kafka-python"], r["decompress"],
                              r.get("decompress_aiokafka"))
        out.append(f"| {r['codec']} | {r['records']} | {k * 1e6:.1f} | {kl * 1e6:.1f} | {a * 1e6:.1f} | {p * 1e6:.1f} "
                   f"| {a / k:.2f} | {p / k:.1f} | {a / kl:.2f} | {p / kl:.1f} "
                   f"| {r['aiokafka_kv'] / r['kwire_kv']:.2f} | {r['aiokafka_none'] / r['kwire_none']:.2f} "
                   f"| {_us(d)} | {_us(da)} | {_us(d and k - d)} | {_us(da and a - da)} |")
        if r.get("library"):  # a library may depend on the batch's size: each is named with the sizes it read
            pair = f"kwire {r['library']}, aiokafka {r['library_aiokafka']}"
            libraries.setdefault(r["codec"], {}).setdefault(pair, []).append(str(r["records"]))
    if libraries:
        out += ["", "Decompression: " + "; ".join(
            f"{codec}: " + "; ".join(pair if len(pairs) == 1 else f"{pair} ({', '.join(sizes)} records)"
                                     for pair, sizes in pairs.items())
            for codec, pairs in libraries.items()) + "."]
    return "\n".join(out)


def render_loop(rows):
    """The uncompressed rows against the benchmark's loop alone (see loop_alone): what is left of each library's
    time beyond it, and the time the 30x goal against kafka-python leaves a decoder once the loop is paid."""
    out = ["| records | loop alone µs | kwire µs | aiokafka µs | kwire beyond the loop µs | aiokafka beyond it µs "
           "| × aiokafka beyond the loop | kafka-python ÷ 30 µs | left for a decoder at 30× µs |",
           "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if r.get("loop") is None:
            continue
        k, a, p, f = r["kwire"], r["aiokafka"], r["kafka-python"], r["loop"]
        cells = [f * 1e6, k * 1e6, a * 1e6, (k - f) * 1e6, (a - f) * 1e6]
        out.append(f"| {r['records']} | " + " | ".join(f"{c:.2f}" for c in cells)
                   + f" | {(a - f) / (k - f):.2f} | {p / 30 * 1e6:.2f} | {(p / 30 - f) * 1e6:.2f} |")
    return "\n".join(out)


def _us(t):
    return "–" if t is None else f"{t * 1e6:.1f}"


def page_faults(R, n=10_000, decodes=50):
    """Minor page faults per decode of the same uncompressed batch of ``n`` records, for each way of reading it
    (every field read): whether a decode's objects land in memory the allocator already holds, or in pages it
    maps afresh on every decode (a list of all the records outgrows what the allocator keeps between decodes)."""
    import resource

    import aiokafka.record.default_records as aio
    import kafka.record.default_records as kp

    data = aiokafka_bytes(0, n)
    fns = {"kwire, for record in batch": kwire_decode(R, data), "kwire, batch.records": kwire_decode_list(R, data),
           "aiokafka": peer_decode(aio.DefaultRecordBatch, data),
           "kafka-python": peer_decode(kp.DefaultRecordBatch, data)}
    out = {}
    for label, fn in fns.items():
        fn()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(decodes):
            fn()
        out[label] = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / decodes
    return out


def render_encode(rows):
    out = ["| codec | records | kwire encode µs | aiokafka | kafka-python | × aiokafka | × kafka-python |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        k, a, p = r["kwire"], r["aiokafka"], r["kafka-python"]
        out.append(f"| {r['codec']} | {r['records']} | {k * 1e6:.1f} | {a * 1e6:.1f} | {p * 1e6:.1f} | {a / k:.2f} "
                   f"| {p / k:.1f} |")
    return "\n".join(out)


def library_line(R):
    import aiokafka.record.default_records as aio
    import kafka.record.default_records as kp

    return (f"kwire {R.__name__} (CRC-32C: {R.crc32c_backend()}), aiokafka {aio.DefaultRecordBatch.__module__}, "
            f"kafka-python {kp.DefaultRecordBatch.__module__}")


# glibc moves its mmap threshold up when it frees a large mapping, so how fast a library's decode of a large batch
# runs (fresh pages faulted in, or heap reused) depended on what ran before it in the process: which library
# decompressed the previous case, with which allocator.  Fixed thresholds, set before the interpreter starts, put
# every side under the same allocator state (the values `kwire serve` sets for itself).
_FIXED_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(4 << 20), "MALLOC_TRIM_THRESHOLD_": str(8 << 20)}


def _with_fixed_allocator():
    """Run this script again with :data:`_FIXED_MALLOC` in its environment, unless it is there already or
    ``--allocator-as-is`` was given."""
    if "--allocator-as-is" in sys.argv or all(os.environ.get(k) == v for k, v in _FIXED_MALLOC.items()):
        return
    os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **_FIXED_MALLOC})


def main():
    _with_fixed_allocator()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--allocator-as-is", action="store_true",
                    help="keep glibc's adaptive malloc thresholds (by default the bench fixes them for every side)")
    ap.add_argument("--quick", action="store_true", help="shorter timings (noisier)")
    ap.add_argument("--json", metavar="BUDGET", type=float,
                    help="print the report's rows as JSON instead, with this time budget per case (benches/report.py)")
    ap.add_argument("--codecs", default=",".join(CODECS))
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    args = ap.parse_args()
    budget = 0.15 if args.quick else 0.6
    R = _impl.load("records", "python" if os.environ.get("KWIRE_NO_EXTENSIONS", "") not in ("", "0") else "cython",
                   package="kwire.codec")
    if args.json is not None:
        import json

        codecs, sizes = args.codecs.split(","), [int(n) for n in args.sizes.split(",")]
        print(json.dumps({"library": library_line(R), "decode": decode_rows(R, args.json, codecs, sizes),
                          "encode": encode_rows(R, args.json, codecs, sizes), "crc": crc_rates(R, args.json)}))
        return
    print(library_line(R) + "\n")
    faults = page_faults(R)  # first, in a heap that other cases have not grown
    rows = decode_rows(R, budget)
    print(render_decode(rows))
    print()
    print(render_loop(rows))
    print()
    for label, n in faults.items():
        print(f"Page faults per decode of 10,000 records, {label}: {n:.0f}")
    print()
    print(render_encode(encode_rows(R, budget)))
    print()
    for label, rate in crc_rates(R, budget).items():
        print(f"CRC over 1 MiB, {label}: {rate:.2f} GB/s")
    print(f"\nload average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
