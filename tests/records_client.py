"""One real producer or consumer as a process, for tests/test_records_clients.py.

    python tests/records_client.py produce LIB BOOTSTRAP TOPIC COUNT COMPRESSION SEED [PACE_S]
    python tests/records_client.py consume LIB BOOTSTRAP TOPIC COUNT GROUP
    python tests/records_client.py member confluent-kafka BOOTSTRAP TOPIC IDLE_S GROUP PACE_S

LIB is confluent-kafka, kafka-python or aiokafka.  ``produce`` sends :func:`records` (COUNT of them, from SEED)
with the client's own producer (idempotent where the client supports it) and prints ``SENT n``.  ``consume``
joins GROUP, reads from the earliest offset until it has COUNT records, commits, and prints each record as one
JSON line (``{"p":, "o":, "k":, "v":, "h":, "t":}``, bytes in hex) and then ``DONE n``.  ``member`` is one member of a group that reads slowly (PACE_S per record), committing after each
poll, printing each record as ``consume`` does, until nothing arrives for IDLE_S, or until its standard input
says ``close``.  Every wait is bounded.
"""

import asyncio
import json
import random
import sys
import time

WAIT_S = 60


def records(count, seed, null_header_values=True):
    """``[(partition, key, value, headers, timestamp)]``: null keys and values, empty ones, headers (with null
    values where the client can send them), across four partitions, timestamps in order per partition."""
    rng = random.Random(seed)
    out = []
    base = 1_700_000_000_000
    for i in range(count):
        key = None if i % 7 == 3 else (b"" if i % 11 == 5 else b"key-%d" % rng.randrange(50))
        value = None if i % 9 == 4 else bytes(rng.randrange(256) for _ in range(rng.randrange(0, 120)))
        if key is None and value is None:
            value = b""  # aiokafka's producer wants a key or a value
        headers = [] if i % 3 else [("h%d" % j, None if j == 1 and null_header_values else b"x%d" % i) for j in range(i % 4)]
        out.append((i % 4, key, value, headers, base + i))
    return out


def null_header_values(lib):
    """Whether the client sends a header with a null value (kafka-python's producer refuses one)."""
    return lib != "kafka-python"


def say(text):
    print(text, flush=True)


def _hex(b):
    return None if b is None else b.hex()


def line(p, o, k, v, h, t):
    return json.dumps({"p": p, "o": o, "k": _hex(k), "v": _hex(v), "h": [[hk, _hex(hv)] for hk, hv in h or []],
                       "t": t})


def produce(lib, bootstrap, topic, count, compression, seed, pace_s=0.0):
    recs = records(count, seed, null_header_values(lib))
    if lib == "confluent-kafka":
        from confluent_kafka import Producer
        p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5,
                      "compression.type": compression})
        for i, (part, k, v, h, t) in enumerate(recs):
            p.produce(topic, value=v, key=k, partition=part, headers=h or None, timestamp=t)
            p.poll(0)
            if pace_s and i % 100 == 99:
                time.sleep(pace_s)  # spread the records over time, so faults land mid-stream
        left = p.flush(WAIT_S)
        if left:
            raise SystemExit(f"{left} records not delivered")
    elif lib == "kafka-python":
        from kafka import KafkaProducer
        p = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, enable_idempotence=True, acks="all",
                          compression_type=None if compression == "none" else compression)
        futures = [p.send(topic, value=v, key=k, partition=part, headers=h, timestamp_ms=t) for part, k, v, h, t in recs]
        for f in futures:
            f.get(WAIT_S)
        p.close(WAIT_S)
    else:
        async def run():
            from aiokafka import AIOKafkaProducer
            p = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, enable_idempotence=True,
                                 compression_type=None if compression == "none" else compression)
            await p.start()
            try:
                futures = [await p.send(topic, value=v, key=k, partition=part, headers=h, timestamp_ms=t)
                           for part, k, v, h, t in recs]
                await asyncio.wait_for(asyncio.gather(*futures), WAIT_S)
            finally:
                await p.stop()
        asyncio.run(run())
    say(f"SENT {count}")


def consume(lib, bootstrap, topic, count, group):
    got = 0
    deadline = time.monotonic() + WAIT_S
    if lib == "confluent-kafka":
        from confluent_kafka import Consumer
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                      "enable.auto.commit": False})
        c.subscribe([topic])
        while got < count and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None or m.error():
                continue
            say(line(m.partition(), m.offset(), m.key(), m.value(), m.headers(), m.timestamp()[1]))
            got += 1
        c.commit(asynchronous=False)
        c.close()
    elif lib == "kafka-python":
        from kafka import KafkaConsumer
        c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                          enable_auto_commit=False, fetch_max_wait_ms=100)
        while got < count and time.monotonic() < deadline:
            for _tp, batch in c.poll(200).items():
                for m in batch:
                    say(line(m.partition, m.offset, m.key, m.value, m.headers, m.timestamp))
                    got += 1
        c.commit()
        c.close()
    else:
        async def run():
            from aiokafka import AIOKafkaConsumer
            n = 0
            c = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                                 enable_auto_commit=False, fetch_max_wait_ms=100)
            await c.start()
            try:
                while n < count and time.monotonic() < deadline:
                    for _tp, batch in (await c.getmany(timeout_ms=200)).items():
                        for m in batch:
                            say(line(m.partition, m.offset, m.key, m.value, m.headers, m.timestamp))
                            n += 1
                await c.commit()
            finally:
                await c.stop()
            return n
        got = asyncio.run(run())
    say(f"DONE {got}")


def member(lib, bootstrap, topic, idle_s, group, pace_s):
    import threading

    from confluent_kafka import Consumer
    closing = threading.Event()

    def read():
        for text in sys.stdin:  # the end of standard input (the test is collecting output) is not a close
            if text.strip() == "close":
                closing.set()
    threading.Thread(target=read, daemon=True).start()
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "session.timeout.ms": 6000, "heartbeat.interval.ms": 300})
    c.subscribe([topic])
    got, last = 0, time.monotonic()
    deadline = last + WAIT_S
    while not closing.is_set() and time.monotonic() - last < idle_s and time.monotonic() < deadline:
        batch = [m for m in c.consume(50, 0.2) if not m.error()]
        for m in batch:
            say(line(m.partition(), m.offset(), m.key(), m.value(), m.headers(), m.timestamp()[1]))
            time.sleep(pace_s)
        if batch:
            got += len(batch)
            last = time.monotonic()
            c.commit(asynchronous=False)
    c.close()
    say(f"DONE {got}")


if __name__ == "__main__":
    role, lib, bootstrap, topic, count = sys.argv[1:6]
    if role == "produce":
        produce(lib, bootstrap, topic, int(count), sys.argv[6], int(sys.argv[7]),
                float(sys.argv[8]) if len(sys.argv) > 8 else 0.0)
    elif role == "member":
        member(lib, bootstrap, topic, float(count), sys.argv[6], float(sys.argv[7]))
    else:
        consume(lib, bootstrap, topic, int(count), sys.argv[6])
