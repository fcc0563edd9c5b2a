#!/usr/bin/env bash
# Soak of `sluice serve` streaming experts under a memory budget: starts the server on a model with a budget that
# holds only CACHE_SLOTS experts (so every step reads experts from disk through io_uring), drives it with
# bench/server/soak.mjs (SSE streams, plain requests, WebSocket sockets with cancellations, hostile requests) for
# DURATION seconds while sampling its RSS, open files and threads, then stops it with SIGTERM and checks that it
# drains and exits 0.
#
# Usage: bench/server/soak.sh [path/to/sluice] [extra serve flags...]
# Env: MODEL (default: the bundled models/sluice-tiny-moe.gguf, a trained model, so its routing is learned),
#      DURATION (1800 s), CACHE_SLOTS (16), PARALLEL (2), THREADS (2), SSE (3), REST (2), WS (2), HOSTILE (1),
#      MAX_TOKENS (24), JSON (report, default .cache/bench/soak.json).
# Exit status 1 on any unexpected answer, growth of RSS, open files or threads after warm-up, or an unclean exit.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
sluice=${1:-$root/build/release/cli/sluice}
shift || true
model=${MODEL:-$root/models/sluice-tiny-moe.gguf}
json=${JSON:-$root/.cache/bench/soak.json}
mkdir -p "$(dirname "$json")"
for tool in node jq "$sluice"; do
    command -v "$tool" >/dev/null || { echo "missing: $tool" >&2; exit 1; }
done
"$root/tests/server/fetch_npm.sh" "$root/.cache/npm"
ws_package=$(ls -d "$root"/.cache/npm/ws-* | head -1)

# The budget: everything resident but the routed experts, plus CACHE_SLOTS expert slots (and half a slot of slack).
parallel=${PARALLEL:-2}
plan=$("$sluice" inspect "$model" --plan --memory-budget 1TiB --disk-bandwidth 1 --threads "${THREADS:-2}" \
    --parallel "$parallel")
budget=$(jq -r --argjson slots "${CACHE_SLOTS:-16}" \
    '(.dense_bytes + .kv_bytes + .compute_bytes + $slots * .slot_bytes + .slot_bytes / 2) | floor' <<<"$plan")
echo "soak: $model, budget $budget bytes (${CACHE_SLOTS:-16} expert slots), ${DURATION:-1800} s" >&2

source "$root/bench/server/serve_lib.sh"
start_server "$sluice" -m "$model" --threads "${THREADS:-2}" --parallel "$parallel" --memory-budget "$budget" "$@"
grep -E ' loaded in |plan|stream' "$log" | head -5 >&2

status=0
node "$root/bench/server/soak.mjs" --url "http://127.0.0.1:$port" --pid "$pid" --ws-package "$ws_package" \
    --duration "${DURATION:-1800}" --sse "${SSE:-3}" --rest "${REST:-2}" --ws "${WS:-2}" --hostile "${HOSTILE:-1}" \
    --max-tokens "${MAX_TOKENS:-24}" --json "$json" || status=1

kill -TERM "$pid"
if wait "$pid"; then
    echo "soak: sluice serve drained and exited 0 on SIGTERM" >&2
else
    echo "soak: sluice serve exited with status $?" >&2
    status=1
fi
trap 'rm -f "$log"' EXIT
echo "report: $json" >&2
exit $status
