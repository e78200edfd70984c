#!/usr/bin/env python3
"""Coverage-guided differential fuzzing of kwire's decoders with atheris.

    python fuzz/fuzz_codec.py FAMILY [libFuzzer flags] [CORPUS_DIR ...]

FAMILY is one of ``api``, ``headers``, ``frames``, ``consumer``, ``batch``
(see fuzz/differential.py for the targets of each).  For example, a bounded run
over the committed seeds, writing new inputs to a scratch corpus:

    mkdir -p /tmp/corpus-api
    nice python fuzz/fuzz_codec.py api -max_total_time=3600 -timeout=5 \\
        -rss_limit_mb=2048 -max_len=4096 /tmp/corpus-api fuzz/corpus/api

libFuzzer's ``-merge=1``, ``-fork=N`` and ``-jobs=N`` work too (the script
is executable and hands the family to its children), for example to fold
a campaign's new inputs into the committed corpus:

    fuzz/fuzz_codec.py api -merge=1 -max_len=4096 fuzz/corpus/api /tmp/corpus-api

Coverage comes from atheris' bytecode instrumentation of the pure twin,
kwire.codec._framing and kwire.assignors._userdata (every Python module under
``kwire``).  The compiled codec is driven differentially on every input; its
C code is instrumented too when it was built with clang's
``-fsanitize=fuzzer-no-link`` (see docs/RELIABILITY.md), and is a black box
otherwise.  A disagreement, an untyped exception or a wrong re-encoding
raises ``differential.Finding``, which libFuzzer reports as a crash and
saves as ``crash-*``.
"""

import os
import sys

import atheris

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

with atheris.instrument_imports(include=["kwire", "differential"]):
    import differential


def main():
    # libFuzzer's -merge, -fork and -jobs re-run this script with the
    # libFuzzer flags alone, so the family also travels in the environment.
    args = sys.argv[1:]
    if args and args[0] in differential.FAMILIES:
        family = args.pop(0)
    else:
        family = os.environ.get("KWIRE_FUZZ_FAMILY")
    if family not in differential.FAMILIES:
        sys.exit(f"usage: {sys.argv[0]} {{{','.join(differential.FAMILIES)}}} [libFuzzer args]")
    os.environ["KWIRE_FUZZ_FAMILY"] = family
    check = differential.check

    def one_input(data):
        check(family, data)

    atheris.Setup([sys.argv[0]] + args, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
