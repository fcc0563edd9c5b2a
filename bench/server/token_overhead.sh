#!/usr/bin/env bash
# Server overhead per streamed token (bench/server/token_overhead.mjs explains the method): starts
# `sluice serve` on MODEL with one slot, streams RUNS greedy completions of TOKENS tokens through SSE and prints
# the client-seen time per token against the engine's own decode time per token.
#
# Usage: bench/server/token_overhead.sh [path/to/sluice] [extra serve flags...]
# Env: MODEL (default: .cache/bench/olmoe-8l.gguf, generated: the olmoe-1b-7b preset cut to 8 layers, 1.9 GiB),
#      TOKENS (128), RUNS (5), THREADS (2).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
sluice=${1:-$root/build/release/cli/sluice}
shift || true
model=${MODEL:-$root/.cache/bench/olmoe-8l.gguf}
if [[ ! -f $model ]]; then
    mkdir -p "$(dirname "$model")"
    "$sluice" mkmodel -q -o "$model" --preset olmoe-1b-7b --layers 8 --seed 1
fi

log=$(mktemp)
"$sluice" serve -m "$model" --port 0 --threads "${THREADS:-2}" "$@" 2>"$log" &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 1200); do
    grep -q ' loaded in ' "$log" && break
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; exit 1; }
    sleep 0.1
done
port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$log" | head -1)
grep ' loaded in ' "$log" >&2
node "$root/bench/server/token_overhead.mjs" --url "http://127.0.0.1:$port" --tokens "${TOKENS:-128}" \
    --runs "${RUNS:-5}"
