"""librdkafka's own mock cluster as a process: an independent server for tests/test_consumer848_clients.py.

    python tests/librdkafka_mock.py --brokers 3 --topic orders:12 --session-timeout-ms 6000 \
        --heartbeat-interval-ms 500 --run-seconds 120

It prints ``librdkafka mock: listening on HOST:PORT,HOST:PORT,...`` (the bootstrap servers) once its topics
exist, then runs until SIGTERM, SIGINT or its time limit.

confluent-kafka's ``Producer({"test.mock.num.brokers": N})`` starts the same mock, but Python cannot reach its
settings: it auto-creates topics with 4 partitions on the first Metadata request naming them, its
AdminClient.create_topics times out against it, and its consumer groups keep the mock's defaults (a
heartbeat interval of 3 s, which is what makes a group of three take about 3 s to form there).  The mock's
C API (rdkafka_mock.h) is exported by the librdkafka that confluent-kafka bundles, so this script calls it with
ctypes: ``rd_kafka_mock_cluster_new`` on a handle of its own, then ``rd_kafka_mock_topic_create`` and
``rd_kafka_mock_set_group_consumer_{session_timeout,heartbeat_interval}_ms``, which a group takes when its
first member joins.  The mock listens on 127.0.0.1 only.
"""

import argparse
import ctypes
import glob
import os
import signal
import sys
import threading

RD_KAFKA_PRODUCER = 0


def load_librdkafka():
    """The librdkafka shared library bundled with (and loaded by) the installed confluent-kafka wheel."""
    import confluent_kafka

    here = os.path.dirname(confluent_kafka.__file__)
    found = sorted(glob.glob(os.path.join(here, os.pardir, "confluent_kafka.libs", "librdkafka*.so*")))
    # A confluent-kafka built against a system librdkafka has no bundled copy.
    lib = ctypes.CDLL(found[0] if found else "librdkafka.so.1")
    lib.rd_kafka_conf_new.restype = ctypes.c_void_p
    lib.rd_kafka_conf_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                      ctypes.c_size_t]
    lib.rd_kafka_new.restype = ctypes.c_void_p
    lib.rd_kafka_new.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.rd_kafka_destroy.argtypes = [ctypes.c_void_p]
    lib.rd_kafka_mock_cluster_new.restype = ctypes.c_void_p
    lib.rd_kafka_mock_cluster_new.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.rd_kafka_mock_cluster_destroy.argtypes = [ctypes.c_void_p]
    lib.rd_kafka_mock_cluster_bootstraps.restype = ctypes.c_char_p
    lib.rd_kafka_mock_cluster_bootstraps.argtypes = [ctypes.c_void_p]
    lib.rd_kafka_mock_topic_create.restype = ctypes.c_int
    lib.rd_kafka_mock_topic_create.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
    for name in ("rd_kafka_mock_set_group_consumer_session_timeout_ms",
                 "rd_kafka_mock_set_group_consumer_heartbeat_interval_ms",
                 "rd_kafka_mock_group_initial_rebalance_delay_ms"):
        getattr(lib, name).argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.rd_kafka_mock_push_request_errors_array.argtypes = [ctypes.c_void_p, ctypes.c_int16, ctypes.c_size_t,
                                                             ctypes.POINTER(ctypes.c_int)]
    lib.rd_kafka_mock_partition_set_leader.restype = ctypes.c_int
    lib.rd_kafka_mock_partition_set_leader.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32,
                                                       ctypes.c_int32]
    lib.rd_kafka_err2str.restype = ctypes.c_char_p
    lib.rd_kafka_err2str.argtypes = [ctypes.c_int]
    return lib


def new_mock_cluster(lib, brokers):
    """``(handle, mock cluster)``: a mock cluster of ``brokers`` on a librdkafka handle of its own; destroy the
    cluster (``rd_kafka_mock_cluster_destroy``), then the handle (``rd_kafka_destroy``)."""
    errstr = ctypes.create_string_buffer(512)
    conf = lib.rd_kafka_conf_new()
    # Its own handle's logs would only say it has no bootstrap servers; keep stderr for the mock's.
    lib.rd_kafka_conf_set(conf, b"log_level", b"3", errstr, len(errstr))
    rk = lib.rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, len(errstr))
    if not rk:
        raise SystemExit(f"rd_kafka_new: {errstr.value.decode()}")
    mcluster = lib.rd_kafka_mock_cluster_new(rk, brokers)
    if not mcluster:
        lib.rd_kafka_destroy(rk)
        raise SystemExit("rd_kafka_mock_cluster_new failed")
    return rk, mcluster


def read_commands(lib, mcluster, stop):
    """``fail API ERROR [COUNT]``: push COUNT errors for API onto the mock's error stack
    (``rd_kafka_mock_push_request_errors_array``); each command is acknowledged with an ``ok`` line."""
    from kwire.codec import ApiKey, ErrorCode

    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        try:
            if words[0] != "fail" or len(words) not in (3, 4):
                raise ValueError(f"unknown command {line.strip()!r}")
            count = int(words[3]) if len(words) == 4 else 1
            errors = (ctypes.c_int * count)(*[int(ErrorCode[words[2]])] * count)
            lib.rd_kafka_mock_push_request_errors_array(mcluster, int(ApiKey[words[1]]), count, errors)
        except (KeyError, ValueError) as exc:
            print(f"error {exc}", flush=True)
            continue
        print("ok", flush=True)
    stop.set()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--brokers", type=int, default=3)
    ap.add_argument("--topic", action="append", default=[], metavar="NAME:PARTITIONS")
    ap.add_argument("--session-timeout-ms", type=int, help="the mock's group.consumer.session.timeout.ms")
    ap.add_argument("--heartbeat-interval-ms", type=int, help="the mock's group.consumer.heartbeat.interval.ms")
    ap.add_argument("--initial-rebalance-delay-ms", type=int, help="the classic groups' initial delay")
    ap.add_argument("--run-seconds", type=float, default=300)
    ap.add_argument("--control", choices=("none", "stdin"), default="none",
                    help="stdin: read 'fail API ERROR [COUNT]' lines (kwire's ApiKey and ErrorCode names): the "
                         "next COUNT requests of API, on any broker, get ERROR")
    args = ap.parse_args(argv)

    lib = load_librdkafka()
    rk, mcluster = new_mock_cluster(lib, args.brokers)
    try:
        for spec in args.topic:
            name, _, parts = spec.rpartition(":")
            err = lib.rd_kafka_mock_topic_create(mcluster, name.encode(), int(parts), min(3, args.brokers))
            if err:
                raise SystemExit(f"topic {name}: {lib.rd_kafka_err2str(err).decode()}")
        if args.session_timeout_ms is not None:
            lib.rd_kafka_mock_set_group_consumer_session_timeout_ms(mcluster, args.session_timeout_ms)
        if args.heartbeat_interval_ms is not None:
            lib.rd_kafka_mock_set_group_consumer_heartbeat_interval_ms(mcluster, args.heartbeat_interval_ms)
        if args.initial_rebalance_delay_ms is not None:
            lib.rd_kafka_mock_group_initial_rebalance_delay_ms(mcluster, args.initial_rebalance_delay_ms)
        stop = threading.Event()
        if args.control == "stdin":
            threading.Thread(target=read_commands, args=(lib, mcluster, stop), daemon=True).start()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        print(f"librdkafka mock: listening on {lib.rd_kafka_mock_cluster_bootstraps(mcluster).decode()}",
              flush=True)
        stop.wait(args.run_seconds)
    finally:
        lib.rd_kafka_mock_cluster_destroy(mcluster)
        lib.rd_kafka_destroy(rk)


if __name__ == "__main__":
    sys.exit(main())
