#!/usr/bin/env bash
# Continuous batching against llama-server on the same file, threads and client, in one run: for each pair (PAIRS),
# `sluice serve --parallel 8`, `llama-server --parallel 8` and `llama-server --parallel 1` in turn, each driven by
# bench/server/batch.mjs (streamed greedy /v1/completions of TOKENS tokens, end-of-generation ignored) at LEVELS
# concurrent streams (the --parallel 1 server at 1 stream only). Prints one table: server, run, streams, aggregate
# tokens/s, inter-token median and p90, and for sluice the steps' mean time and the gather before each. With BASE (a
# second sluice binary, e.g. an older build), each pair runs it first, as `sluice-base-np8`, so that old and new
# alternate in the same run. Run it through bench/quiet.sh.
#
# Usage: bench/server/batch_vs_llama.sh MODEL LLAMA_SERVER [SLUICE]
# Env: LEVELS (1,8), TOKENS (32), THREADS (2), CTX (context per slot, 1024), PAIRS (1), DIR (.cache/bench/vs-llama),
#      BASE (unset)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
model=${1:?usage: bench/server/batch_vs_llama.sh MODEL LLAMA_SERVER [SLUICE]}
llama=${2:?LLAMA_SERVER}
sluice=${3:-$root/build/release/cli/sluice}
dir=${DIR:-$root/.cache/bench/vs-llama}
levels=${LEVELS:-1,8}
threads=${THREADS:-2}
ctx=${CTX:-1024}
mkdir -p "$dir"
rm -f "$dir"/*.json

pid=""
trap '[[ -n $pid ]] && kill "$pid" 2>/dev/null || true' EXIT

# Waits until GET /health answers 200 (the model is loaded), or the server exits.
wait_health() {
    for _ in $(seq 1200); do
        curl -sf "http://127.0.0.1:$1/health" >/dev/null && return 0
        kill -0 "$pid" 2>/dev/null || { echo "server exited" >&2; return 1; }
        sleep 0.1
    done
    return 1
}

# run_client NAME RUN PORT LEVELS: batch.mjs against the server on PORT, its report to DIR/NAME-RUN.json.
run_client() {
    echo "== $1 run $2" >&2
    node "$root/bench/server/batch.mjs" --url "http://127.0.0.1:$3" --levels "$4" --tokens "${TOKENS:-32}" \
        --ttft 0 >"$dir/$1-$2.json"
    kill -TERM "$pid"
    wait "$pid" 2>/dev/null || true
    pid=""
}

port=18931
for run in $(seq "${PAIRS:-1}"); do
    if [[ -n ${BASE:-} ]]; then
        "$BASE" serve --port "$port" -m "$model" --threads "$threads" --ctx "$ctx" --parallel 8 --queue 64 \
            2>"$dir/sluice-base-$run.log" &
        pid=$!
        wait_health "$port"
        run_client sluice-base-np8 "$run" "$port" "$levels"
    fi
    "$sluice" serve --port "$port" -m "$model" --threads "$threads" --ctx "$ctx" --parallel 8 --queue 64 \
        2>"$dir/sluice-$run.log" &
    pid=$!
    wait_health "$port"
    run_client sluice-np8 "$run" "$port" "$levels"

    "$llama" -m "$model" -t "$threads" -c $((ctx * 8)) -np 8 --port "$port" --no-webui >"$dir/llama-np8-$run.log" 2>&1 &
    pid=$!
    wait_health "$port"
    run_client llama-np8 "$run" "$port" "$levels"

    "$llama" -m "$model" -t "$threads" -c "$ctx" -np 1 --port "$port" --no-webui >"$dir/llama-np1-$run.log" 2>&1 &
    pid=$!
    wait_health "$port"
    run_client llama-np1 "$run" "$port" 1
done
node -e '
const fs = require("fs");
const dir = process.argv[1];
console.log("| server | run | streams | aggregate tokens/s | inter-token median (ms) | p90 (ms) | ms per step | gather ms per step |");
console.log("|---|---:|---:|---:|---:|---:|---:|---:|");
const files = fs.readdirSync(dir).filter((f) => /-\d+\.json$/.test(f));
const order = (f) => [Number(/-(\d+)\.json$/.exec(f)[1]), ["sluice-base-np8", "sluice-np8", "llama-np8", "llama-np1"].indexOf(f.replace(/-\d+\.json$/, ""))];
files.sort((a, b) => { const x = order(a), y = order(b); return x[0] - y[0] || x[1] - y[1]; });
for (const f of files) {
    const r = JSON.parse(fs.readFileSync(`${dir}/${f}`, "utf8"));
    const [name, run] = [f.replace(/-\d+\.json$/, ""), /-(\d+)\.json$/.exec(f)[1]];
    for (const l of r.levels) {
        const p = l.profile ?? {};
        const step = p.steps ? `${p.step_ms.toFixed(1)} | ${p.gather_ms.toFixed(1)}` : " | ";
        console.log(`| ${name} | ${run} | ${l.streams} | ${l.aggregate_tps.toFixed(2)} | ${l.itl_median_ms.toFixed(0)} | ${l.itl_p90_ms.toFixed(0)} | ${step} |`);
    }
}' "$dir"
