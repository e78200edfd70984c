"""Derive the facts kwire's tests need from Apache Kafka's JSON message specs.

Kafka's spec files (``clients/src/main/resources/common/message/*.json``) are
JSON with ``//`` comment lines and an ``about`` sentence on most fields.  The
tests need only the facts: names, api keys, types, version ranges, nullable,
tagged and flexible versions, tags, defaults, map keys and ignorable flags.
This script keeps exactly those (every key but ``about`` and the comments),
one file per message under ``tests/data/kafka-spec/``, so a plain clone of
kwire runs its spec tests with nothing beside it.

    python scripts/kafka_spec_facts.py --write SPEC_DIR   # add or refresh the facts of SPEC_DIR's specs
    python scripts/kafka_spec_facts.py --check SPEC_DIR   # fail if any of them differs (CI runs this)

SPEC_DIR defaults to ``$KWIRE_KAFKA_SPEC_DIR``.  Several folders may feed
the committed copy (tests/data/README.md says which spec came from where), so
``--write`` never deletes a file and ``--check`` compares the specs SPEC_DIR
holds, listing the committed files it does not hold.
"""

import argparse
import json
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FACTS_DIR = os.path.join(REPO, "tests", "data", "kafka-spec")

# Prose, not facts: dropped wherever it appears.
_PROSE_KEYS = {"about"}


def _strip(node):
    if isinstance(node, dict):
        return {k: _strip(v) for k, v in node.items() if k not in _PROSE_KEYS}
    if isinstance(node, list):
        return [_strip(v) for v in node]
    return node


def load_spec(path):
    """One spec file as data, its ``//`` comment lines removed."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    return json.loads(re.sub(r"^\s*//.*$", "", text, flags=re.M))


def derive(spec_dir):
    """``{file name: facts text}`` for every message spec directly in ``spec_dir``."""
    out = {}
    for name in sorted(os.listdir(spec_dir)):
        if name.endswith(".json"):
            facts = _strip(load_spec(os.path.join(spec_dir, name)))
            out[name] = json.dumps(facts, indent=1, sort_keys=False) + "\n"
    if not out:
        raise SystemExit(f"no *.json message specs in {spec_dir}")
    return out


def committed():
    out = {}
    if os.path.isdir(FACTS_DIR):
        for name in sorted(os.listdir(FACTS_DIR)):
            if name.endswith(".json"):
                with open(os.path.join(FACTS_DIR, name), encoding="utf-8") as fh:
                    out[name] = fh.read()
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="write tests/data/kafka-spec from SPEC_DIR")
    mode.add_argument("--check", action="store_true", help="exit 1 if tests/data/kafka-spec differs from SPEC_DIR")
    parser.add_argument("spec_dir", nargs="?", default=os.environ.get("KWIRE_KAFKA_SPEC_DIR"))
    args = parser.parse_args(argv)
    if not args.spec_dir or not os.path.isdir(args.spec_dir):
        parser.error(f"give Kafka's message spec folder (or set KWIRE_KAFKA_SPEC_DIR); got {args.spec_dir!r}")
    derived = derive(args.spec_dir)
    if args.write:
        os.makedirs(FACTS_DIR, exist_ok=True)
        for name, text in derived.items():
            with open(os.path.join(FACTS_DIR, name), "w", encoding="utf-8") as fh:
                fh.write(text)
        print(f"wrote {len(derived)} spec fact files to {os.path.relpath(FACTS_DIR, REPO)}")
        return 0
    have = committed()
    problems = [f"missing {n}" for n in sorted(set(derived) - set(have))]
    problems += [f"differs: {n}" for n in sorted(set(derived) & set(have)) if derived[n] != have[n]]
    if problems:
        print("tests/data/kafka-spec is out of date with the specs "
              "(run scripts/kafka_spec_facts.py --write SPEC_DIR):", *problems, sep="\n  ")
        return 1
    others = sorted(set(have) - set(derived))
    print(f"tests/data/kafka-spec matches {len(derived)} specs in {args.spec_dir}"
          + (f"; {len(others)} more come from elsewhere: {', '.join(others)}" if others else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
