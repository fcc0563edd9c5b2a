#!/usr/bin/env bash
# Two builds of `sluice serve` against each other on bench/server/batch.sh, alternating A B A B ... in one run, so
# that the drift of a shared machine falls on both: PAIRS pairs (default 1), each run its own server. Prints one
# table row per build, run and level (aggregate tokens/s, inter-token median and p90, and the time to first token
# idle and beside 7 decoding streams); the JSON reports go to DIR. Run it through bench/quiet.sh.
#
# Usage: bench/server/batch_ab.sh MODEL SLUICE_A SLUICE_B [extra serve flags, e.g. --memory-budget 4GiB]
# Env: PAIRS (1), DIR (.cache/bench/batch-ab), A_FLAGS / B_FLAGS (serve flags for one side only, e.g. the same
#      build twice with B_FLAGS="--cache-policy lru-2-cycle"), and batch.sh's LEVELS, TOKENS, THREADS, CTX, ROUNDS,
#      LONG_TOKENS, TTFT.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
model=${1:?usage: bench/server/batch_ab.sh MODEL SLUICE_A SLUICE_B [serve flags...]}
a=${2:?SLUICE_A}
b=${3:?SLUICE_B}
shift 3
dir=${DIR:-$root/.cache/bench/batch-ab}
mkdir -p "$dir"
rm -f "$dir"/[AB]-*.json
for pair in $(seq "${PAIRS:-1}"); do
    for side in A B; do
        bin=$a
        flags=${A_FLAGS:-}
        if [[ $side == B ]]; then
            bin=$b
            flags=${B_FLAGS:-}
        fi
        echo "== $side run $pair: $bin $* $flags" >&2
        # shellcheck disable=SC2086 # the side's flags are words
        JSON="$dir/$side-$pair.json" "$root/bench/server/batch.sh" "$model" "$bin" "$@" $flags
    done
done
node -e '
const fs = require("fs");
const dir = process.argv[1];
console.log("| build | run | streams | aggregate tokens/s | inter-token median (ms) | p90 (ms) | TTFT idle (ms) | TTFT beside 7 (ms) | ms per step | of which expert wait | experts per step | misses per step | hit rate | MB read per token | disk GB/s while busy |");
console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
for (const f of fs.readdirSync(dir).filter((f) => /^[AB]-\d+\.json$/.test(f)).sort()) {
    const [side, run] = f.replace(".json", "").split("-");
    const r = JSON.parse(fs.readFileSync(`${dir}/${f}`, "utf8"));
    for (const l of r.levels) {
        const p = l.profile;
        console.log(`| ${side} | ${run} | ${l.streams} | ${l.aggregate_tps.toFixed(2)} | ${l.itl_median_ms.toFixed(0)} | ` +
                    `${l.itl_p90_ms.toFixed(0)} | ${(r.ttft.idle_ms ?? NaN).toFixed(0)} | ${(r.ttft.under_load_ms ?? NaN).toFixed(0)} | ` +
                    `${p.step_ms.toFixed(0)} | ${p.expert_wait_ms.toFixed(0)} | ${p.fetched_per_step.toFixed(0)} | ` +
                    `${(p.misses_per_step ?? NaN).toFixed(0)} | ${(100 * p.hit_rate).toFixed(1)}% | ${p.read_mb_per_token.toFixed(0)} | ` +
                    `${(p.read_gbps_busy ?? NaN).toFixed(2)} |`);
    }
}' "$dir"
