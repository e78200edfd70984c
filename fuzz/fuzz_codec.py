"""Coverage-guided differential fuzzing of kwire's decoders with atheris.

    python fuzz/fuzz_codec.py FAMILY [libFuzzer flags] [CORPUS_DIR ...]

FAMILY is one of ``api``, ``headers``, ``frames``, ``consumer``, ``batch``
(see fuzz/differential.py for the targets of each).  For example, a bounded run
over the committed seeds, writing new inputs to a scratch corpus:

    mkdir -p /tmp/corpus-api
    nice python fuzz/fuzz_codec.py api -max_total_time=3600 -timeout=5 \\
        -rss_limit_mb=2048 -max_len=4096 /tmp/corpus-api fuzz/corpus/api

Coverage comes from atheris' bytecode instrumentation of the pure twin,
kwire.framing and kwire.assignors.userdata (every Python module under
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
    if len(sys.argv) < 2 or sys.argv[1] not in differential.FAMILIES:
        sys.exit(f"usage: {sys.argv[0]} {{{','.join(differential.FAMILIES)}}} [libFuzzer args]")
    family = sys.argv[1]
    check = differential.check

    def one_input(data):
        check(family, data)

    atheris.Setup([sys.argv[0]] + sys.argv[2:], one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
