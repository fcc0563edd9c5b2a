#!/usr/bin/env bash
# Load and soak benchmark of `sluice serve`: starts the server on a model, drives it with bench/server/load.mjs
# (CLIENTS concurrent clients: short chat completions, half streamed, plus /health) for DURATION seconds while
# sampling its RSS, then stops it with SIGTERM and checks it exits cleanly.
#
# Usage: bench/server/load.sh [path/to/sluice] [extra serve flags...]
# Env: MODEL (default: .cache/bench/tiny-qwen3moe.gguf, generated), DURATION (60 s), CLIENTS (200),
#      REQUESTS (0: only the duration bounds it), MAX_TOKENS (8), PARALLEL (2), QUEUE (256), THREADS (2),
#      JSON (report file, default .cache/bench/server_load.json).
# Prints load.mjs's summary; exit status 1 on any answer other than 200 or a designed 503, or an unclean exit.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
sluice=${1:-$root/build/release/cli/sluice}
shift || true
model=${MODEL:-$root/.cache/bench/tiny-qwen3moe.gguf}
json=${JSON:-$root/.cache/bench/server_load.json}
mkdir -p "$(dirname "$json")"

for tool in node "$sluice"; do
    command -v "$tool" >/dev/null || { echo "missing: $tool" >&2; exit 1; }
done
if [[ ! -f $model ]]; then
    mkdir -p "$(dirname "$model")"
    "$sluice" mkmodel -q -o "$model" --preset tiny-qwen3moe --type q8_0 --seed 1
fi

source "$root/bench/server/serve_lib.sh"
start_server "$sluice" -m "$model" --threads "${THREADS:-2}" --parallel "${PARALLEL:-2}" --queue "${QUEUE:-256}" "$@"
grep ' loaded in ' "$log" >&2

status=0
node "$root/bench/server/load.mjs" --url "http://127.0.0.1:$port" --pid "$pid" --clients "${CLIENTS:-200}" \
    --duration "${DURATION:-60}" --requests "${REQUESTS:-0}" --max-tokens "${MAX_TOKENS:-8}" --json "$json" ||
    status=1

kill -TERM "$pid"
wait "$pid" || { echo "sluice serve exited with status $?" >&2; status=1; }
trap 'rm -f "$log"' EXIT
echo "report: $json" >&2
exit $status
