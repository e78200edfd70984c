"""Record batch benchmarks: kwire's compiled record codec against aiokafka's compiled record classes and
kafka-python's, on the same bytes.

Run: ``python benches/bench_records.py [--quick]``; prints Markdown tables and the load average.

The batches: 1, 100 and 10,000 records, each a 12-byte key, a 100-byte value and two headers, uncompressed and
with each codec.  aiokafka's builder writes them (real client bytes); every library decodes those bytes.

* **decode** = read the batch, check its CRC (aiokafka and kafka-python: ``validate_crc()``, which their consumers
  call by default), and read every record's offset, timestamp, key, value and headers;
* **decode, records only** = the same without reading the fields: kwire creates a field's object when it is first
  read, the others when the record is made;
* **encode** = from Python values (key, value, headers, offset, timestamp) to the batch's bytes;
* compressed cases also give the decompression alone (cramjam or zlib on the same payload, the same library for
  everyone) and kwire's own share, its time minus that.

Goals (compiled kwire, uncompressed, 100 and 10,000 records): decode >= 2x aiokafka's compiled classes and
>= 30x kafka-python; CRC-32C >= 5 GB/s over 1 MiB.
"""

import argparse
import os
import sys
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


def best(fn, budget):
    """Best time of one call (s), over repeats that take about ``budget`` seconds in all."""
    number, t = 1, 0.0
    while True:
        t = timeit.timeit(fn, number=number)
        if t > budget / 10 or number > 1 << 20:
            break
        number *= 4
    repeats = max(3, min(15, int(budget / max(t, 1e-9))))
    return min(timeit.repeat(fn, number=number, repeat=repeats)) / number


# --- The libraries -----------------------------------------------------------------------------------------------

def kwire_decode(R, data, read_fields=True):
    def run():
        for batch in R.decode_record_batches(data):
            for r in batch.records:
                if read_fields:
                    r.offset, r.timestamp, r.key, r.value, r.headers
    return run


def peer_decode(batch_class, data, read_fields=True):
    def run():
        batch = batch_class(data)
        if not batch.validate_crc():
            raise AssertionError("bad CRC")
        for r in batch:
            if read_fields:
                r.offset, r.timestamp, r.key, r.value, r.headers
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
    from kwire.codec import _records_common

    payload = data[61:]
    return lambda: _records_common.decompress(codec, payload, 1 << 30, 61)


# --- The run -----------------------------------------------------------------------------------------------------

def crc_rates(R, budget):
    blob = os.urandom(1 << 20)
    out = {"kwire": (1 << 20) / best(lambda: R.crc32c(blob), budget) / 1e9}
    try:
        import crc32c

        out["crc32c package"] = (1 << 20) / best(lambda: crc32c.crc32c(blob), budget) / 1e9
    except ImportError:
        pass
    out["zlib.crc32 (CRC-32, not -C)"] = (1 << 20) / best(lambda: zlib.crc32(blob), budget) / 1e9
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="shorter timings (noisier)")
    args = ap.parse_args()
    budget = 0.15 if args.quick else 0.6

    import aiokafka.record.default_records as aio
    import kafka.record.default_records as kp

    R = _impl.load("records", "cython", package="kwire.codec")
    aio_batch, aio_builder = aio.DefaultRecordBatch, aio.DefaultRecordBatchBuilder
    # aiokafka falls back to pure Python without its extension: the comparison is with the compiled classes.
    assert "_crecords" in aio_batch.__module__, f"aiokafka's record classes are not compiled ({aio_batch.__module__})"
    print(f"kwire {R.__name__} (CRC-32C: {R.crc32c_backend()}), aiokafka {aio_batch.__module__}, "
          f"kafka-python {kp.DefaultRecordBatch.__module__}\n")

    print("| codec | records | kwire decode µs | aiokafka | kafka-python | × aiokafka | × kafka-python "
          "| records only: kwire / aiokafka µs | decompress µs | kwire own µs |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for codec, name in enumerate(CODECS):
        for n in SIZES:
            data = aiokafka_bytes(codec, n)
            k = best(kwire_decode(R, data), budget)
            a = best(peer_decode(aio_batch, data), budget)
            p = best(peer_decode(kp.DefaultRecordBatch, data), budget / 2 if n > 100 else budget)
            k_lazy = best(kwire_decode(R, data, False), budget)
            a_lazy = best(peer_decode(aio_batch, data, False), budget)
            d = best(decompress_only(codec, data), budget) if codec else 0.0
            own = f"{(k - d) * 1e6:.1f}" if codec else "–"
            print(f"| {name} | {n} | {k * 1e6:.1f} | {a * 1e6:.1f} | {p * 1e6:.1f} | {a / k:.2f} | {p / k:.1f} "
                  f"| {k_lazy * 1e6:.1f} / {a_lazy * 1e6:.1f} | {d * 1e6:.1f} | {own} |")
    print()
    print("| codec | records | kwire encode µs | aiokafka | kafka-python | × aiokafka | × kafka-python |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for codec, name in enumerate(CODECS):
        for n in SIZES:
            vals = values(n)
            k = best(kwire_encode(R, name, vals), budget)
            a = best(peer_encode(aio_builder, codec, vals), budget)
            p = best(peer_encode(kp.DefaultRecordBatchBuilder, codec, vals), budget / 2 if n > 100 else budget)
            print(f"| {name} | {n} | {k * 1e6:.1f} | {a * 1e6:.1f} | {p * 1e6:.1f} | {a / k:.2f} | {p / k:.1f} |")
    print()
    for label, rate in crc_rates(R, budget).items():
        print(f"CRC over 1 MiB, {label}: {rate:.2f} GB/s")
    print(f"\nload average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
