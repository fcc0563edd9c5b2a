#!/usr/bin/env bash
# Fuzzes each libFuzzer target for a given time, one after another, at the lowest CPU priority, and records
# what each run did (seconds, executions, crashes) in build/fuzz-sanitized/fuzz_log.tsv, so that several
# shorter runs add up (docs/FUZZING.md has the totals).
# Usage: bench/fuzz/run.sh SECONDS [TARGET...]    (default: every target of tests/fuzz/targets.txt)
#        bench/fuzz/run.sh --summary              totals per target from the log
# Crashes are written to build/fuzz-sanitized/artifacts/TARGET/; new interesting inputs to
# build/fuzz-sanitized/corpus_TARGET (merge the useful ones into tests/fuzz/corpus_TARGET by hand).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=build/fuzz-sanitized
log=$out/fuzz_log.tsv
mkdir -p "$out"

if [[ ${1:-} == --summary ]]; then
    [[ -f $log ]] || { echo "no fuzzing recorded yet ($log)"; exit 0; }
    awk -F'\t' 'NR > 1 { s[$2] += $3; e[$2] += $4; c[$2] += $5; r[$2]++ }
        END { printf "%-18s %6s %10s %14s %8s\n", "target", "runs", "hours", "executions", "crashes";
              for (t in s) printf "%-18s %6d %10.2f %14d %8d\n", t, r[t], s[t] / 3600, e[t], c[t] }' "$log"
    exit 0
fi

seconds=${1:?usage: bench/fuzz/run.sh SECONDS [TARGET...]}
shift
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
    mapfile -t targets < <(grep -v '^#' tests/fuzz/targets.txt | cut -d: -f1)
fi
[[ -f $log ]] || printf 'date\ttarget\tseconds\texecutions\tcrashes\tcommit\n' >"$log"

for target in "${targets[@]}"; do
    tests/fuzz/replay.sh --build "$target" >/dev/null
    artifacts=$out/artifacts/$target
    mkdir -p "$artifacts"
    before=$(find "$artifacts" -type f | wc -l)
    run_log=$out/$target.last.log
    start=$(date +%s)
    # -fork keeps fuzzing after a crash (each crash is saved); -ignore_crashes records and goes on.
    nice -n 19 tests/fuzz/replay.sh "$target" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048 \
        -print_final_stats=1 -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
        -artifact_prefix="$artifacts/" >"$run_log" 2>&1 || true
    elapsed=$(($(date +%s) - start))
    # In fork mode the parent prints "#N ... exec/s"; the last such count is the total.
    execs=$(grep -oE '^#[0-9]+' "$run_log" | tail -1 | tr -d '#')
    crashes=$(($(find "$artifacts" -type f | wc -l) - before))
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$target" "$elapsed" "${execs:-0}" "$crashes" \
        "$(git rev-parse --short HEAD)" >>"$log"
    echo "$target: ${elapsed}s, ${execs:-0} executions, $crashes new crash files (log: $run_log)"
done
