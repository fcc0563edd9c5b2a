#!/usr/bin/env bash
# Continuous batching of `sluice serve`: aggregate tokens/s and per-stream inter-token latency at 1, 2, 4, 8 and 16
# concurrent streamed completions (greedy, end-of-generation ignored, TOKENS each), then the time to first token of a
# short request on the idle server and beside 7 long decoding streams (bench/server/batch.mjs). Run it through
# bench/quiet.sh.
#
# Usage: bench/server/batch.sh MODEL [path/to/sluice] [extra serve flags, e.g. --memory-budget 4GiB]
# Env: LEVELS (1,2,4,8,16), TOKENS (32), THREADS (2), CTX (1024), ROUNDS (1), LONG_TOKENS (256),
#      TTFT (1; 0 skips the time-to-first-token part), SHORT_PROMPTS (distinct: a new short prompt each time;
#      same: one prompt repeated, which an idle server answers from its caches), JSON (report file, default
#      .cache/bench/batch.json).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
model=${1:?usage: bench/server/batch.sh MODEL [sluice] [serve flags...]}
sluice=${2:-$root/build/release/cli/sluice}
shift 2 || shift $#
json=${JSON:-$root/.cache/bench/batch.json}
mkdir -p "$(dirname "$json")"
levels=${LEVELS:-1,2,4,8,16}
max_level=$(tr ',' '\n' <<<"$levels" | sort -n | tail -1)
parallel=$((max_level > 8 ? max_level : 8))

source "$root/bench/server/serve_lib.sh"
start_server "$sluice" -m "$model" --threads "${THREADS:-2}" --ctx "${CTX:-1024}" --parallel "$parallel" --queue 64 "$@"
grep ' loaded in ' "$log" >&2
node "$root/bench/server/batch.mjs" --url "http://127.0.0.1:$port" --levels "$levels" --tokens "${TOKENS:-32}" \
    --rounds "${ROUNDS:-1}" --long 7 --long-tokens "${LONG_TOKENS:-256}" --ttft "${TTFT:-1}" \
    --short-prompts "${SHORT_PROMPTS:-distinct}" | tee "$json"
kill -TERM "$pid"
wait "$pid" || true
echo "report: $json" >&2
