#!/usr/bin/env bash
# A long, bounded fuzzing campaign: every family in turn, restarted after a
# crash so one finding does not end the run.  Findings land in OUT/crashes.
#
#   fuzz/campaign.sh OUT_DIR SECONDS_PER_FAMILY [FAMILY ...]
#
# Runs with the kwire on PYTHONPATH (build it first).  For the compiled codec
# under ASan+UBSan with C coverage, build a copy with clang as described in
# docs/RELIABILITY.md and set FUZZ_PRELOAD to atheris' asan_with_fuzzer.so.
set -uo pipefail
out=${1:?usage: campaign.sh OUT_DIR SECONDS_PER_FAMILY [FAMILY ...]}
per=${2:?seconds per family}
shift 2
families=("$@")
[ ${#families[@]} -eq 0 ] && families=(api headers frames consumer batch cluster)
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out/crashes"
for fam in "${families[@]}"; do
    mkdir -p "$out/corpus-$fam"
    end=$(( $(date +%s) + per ))
    round=0
    while [ "$(date +%s)" -lt "$end" ]; do
        left=$(( end - $(date +%s) ))
        round=$((round + 1))
        LD_PRELOAD="${FUZZ_PRELOAD:-}" nice -n 19 python "$here/fuzz_codec.py" "$fam" \
            -max_total_time="$left" -timeout=5 -rss_limit_mb="${FUZZ_RSS_MB:-2048}" -max_len=4096 \
            -print_final_stats=1 -artifact_prefix="$out/crashes/$fam-" \
            "$out/corpus-$fam" "$here/corpus/$fam" > "$out/$fam.$round.log" 2>&1
        echo "$fam round $round exit $? at $(date -u +%H:%M:%S)" >> "$out/summary.txt"
        sleep 1
    done
done
echo "campaign done at $(date -u +%H:%M:%S)" >> "$out/summary.txt"
