"""A deterministic mutation fuzzer over the committed corpus (no atheris needed).

    python fuzz/mutate.py FAMILY COUNT [SEED]

It is what tests/test_fuzz_bounded.py runs in CI, and a fallback where
atheris is not installed.  The mutations aim at what wire decoders get
wrong: lengths and counts (int16/int32/varint) set to boundary values,
varints made long, bool bytes, truncation, duplication and splicing of
real frames.  The same (seed, corpus) always gives the same inputs, so a
failure reproduces from the test's output alone.
"""

import os
import random
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")

_INTERESTING32 = (0, 1, 2, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF,
                  0xFFFFFFFE, 0x100, 0x10000)
_INTERESTING_VARINTS = (b"\x00", b"\x01", b"\x7f", b"\x80\x01", b"\xff\xff\xff\xff\x0f", b"\xff\xff\xff\xff\x1f",
                        b"\x80\x80\x80\x80\x80\x01", b"\x81\x00", b"\xfe\xff\xff\xff\x0f", b"\x80\x80\x80\x80\x10")


def load_corpus(family, root=CORPUS):
    d = os.path.join(root, family)
    out = []
    for name in sorted(os.listdir(d)):
        with open(os.path.join(d, name), "rb") as fh:
            out.append(fh.read())
    return out


def mutate(rnd, data, corpus):
    """One mutated input; the selector byte (data[0]) is kept most of the time."""
    b = bytearray(data)
    for _ in range(rnd.choice((1, 1, 1, 2, 3))):
        if len(b) < 2:
            b += bytes([rnd.randrange(256)])
        op = rnd.randrange(10)
        i = rnd.randrange(1, len(b))
        if op == 0:
            b[i] ^= 1 << rnd.randrange(8)
        elif op == 1:
            b[i] = rnd.choice((0, 1, 2, 0x7F, 0x80, 0xFE, 0xFF))
        elif op == 2 and len(b) - i >= 4:
            b[i:i + 4] = struct.pack(">I", rnd.choice(_INTERESTING32))
        elif op == 3 and len(b) - i >= 2:
            b[i:i + 2] = struct.pack(">H", rnd.choice(_INTERESTING32) & 0xFFFF)
        elif op == 4:
            b[i:i + rnd.randrange(1, 3)] = rnd.choice(_INTERESTING_VARINTS)
        elif op == 5:
            del b[rnd.randrange(1, len(b) + 1):]
        elif op == 6:
            j = rnd.randrange(i, len(b) + 1)
            b[j:j] = b[i:min(len(b), i + rnd.randrange(1, 16))]
        elif op == 7:
            other = rnd.choice(corpus)
            j = rnd.randrange(1, len(other)) if len(other) > 1 else 1
            b[i:] = other[j:]
        elif op == 8:
            del b[i:i + rnd.randrange(1, 5)]
        else:
            b[0] = rnd.randrange(256)
    return bytes(b)


def inputs(family, count, seed=0, root=CORPUS):
    """The seeds of ``family``, then ``count`` mutants of them."""
    corpus = load_corpus(family, root)
    rnd = random.Random(f"{family}:{seed}")
    yield from corpus
    for _ in range(count):
        yield mutate(rnd, rnd.choice(corpus), corpus)


def main():
    sys.path.insert(0, HERE)
    import differential

    family, count = sys.argv[1], int(sys.argv[2])
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    stats = {}
    n = 0
    for data in inputs(family, count, seed):
        try:
            differential.check(family, data, stats)
        except differential.Finding:
            print(f"input {n}: {data.hex()}")
            raise
        n += 1
    print(f"{family}: {n} inputs, {stats}")


if __name__ == "__main__":
    main()
