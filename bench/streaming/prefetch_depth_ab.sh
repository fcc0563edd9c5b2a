#!/usr/bin/env bash
# Prefetch one layer ahead against two layers ahead (--prefetch-depth 1 / 2), alternating in one run: for each
# budget, ROUNDS x (stream_bench at depth 1, then at depth 2), each a fresh process on the same file and workload,
# then one fio run at the cache's mean request size (O_DIRECT, io_uring, random reads, depth 32) for the I/O bound.
# Prints each run's JSON (kept in OUT_DIR) and a Markdown table: decode tok/s, read MB/token, hit rate, prefetch
# accuracy per depth, prefetch MB/token wasted (all depths; depth 2's part), read GB/s while reading, and the I/O
# bound tok/s at fio's rate and at the cache's own rate (GB/s while reading / bytes per token).
#
# Usage: bench/streaming/prefetch_depth_ab.sh MODEL.gguf BUDGET [BUDGET...]
# Env: STREAM_BENCH (default build/release/bench/streaming/stream_bench), TOKENS (48), WARMUP (24), THREADS (2),
#      ROUNDS (2), POLICY (lru-2), ROUTING (a recording replayed instead of the file's router: docs/ROUTING.md;
#      depth 2 replays its predictions two layers ahead, version-2 recordings only), FIO_SECONDS (6; 0 skips fio),
#      FIO_OPTS (extra fio options, e.g. --fixedbufs=1),
#      OUT_DIR (.cache/bench/prefetch_depth).
# Needs jq (and fio unless FIO_SECONDS=0).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${STREAM_BENCH:-$root/build/release/bench/streaming/stream_bench}
model=${1:?model path}
shift
(($#)) || { echo "usage: $0 MODEL.gguf BUDGET [BUDGET...]" >&2; exit 2; }
tokens=${TOKENS:-48}
warmup=${WARMUP:-24}
threads=${THREADS:-2}
rounds=${ROUNDS:-2}
policy=${POLICY:-lru-2}
fio_seconds=${FIO_SECONDS:-6}
out_dir=${OUT_DIR:-$root/.cache/bench/prefetch_depth}
mkdir -p "$out_dir"
for tool in jq "$bin"; do
    command -v "$tool" >/dev/null || { echo "prefetch_depth_ab: $tool not found" >&2; exit 1; }
done
routing=()
[[ -n ${ROUTING:-} ]] && routing=(--routing "$ROUTING")

. "$root/bench/streaming/fio_rate.sh"

echo "model $model; $(lscpu | sed -n 's/^Model name: *//p'); $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "stream_bench TOKENS=$tokens WARMUP=$warmup THREADS=$threads POLICY=$policy ${ROUTING:+ROUTING=$ROUTING}"
rows=()
for budget in "$@"; do
    for ((r = 1; r <= rounds; ++r)); do
        for depth in 1 2; do
            out="$out_dir/$budget-depth$depth-round$r.json"
            "$bin" "$model" "$budget" "$tokens" "$warmup" "$threads" "$depth" "$policy" "${routing[@]}" >"$out"
            cat "$out"
            rows+=("$budget|$r|$out")
        done
    done
    # fio at the mean request size of this budget's last run (page-aligned), for the bound.
    bs=$(jq '.cache.mean_read_bytes / 4096 | round * 4096' "$out_dir/$budget-depth2-round$rounds.json")
    fio=0
    ((fio_seconds > 0)) && fio=$(fio_gbps "$model" "$bs" 32 "$fio_seconds")
    echo "fio $budget: $fio GB/s at $bs bytes, depth 32"
    rows+=("$budget|fio|$fio|$bs")
done

echo
echo "| budget | round | depth | decode tok/s | read MB/token | hit rate | prefetch accuracy: depth 1 / depth 2 | wasted MB/token (depth 2's) | read GB/s while reading | I/O bound tok/s: fio / own rate | decode / own-rate bound |"
echo "|---|---:|---:|---:|---:|---:|---|---:|---:|---|---:|"
declare -A fio_of
for row in "${rows[@]}"; do
    IFS='|' read -r budget r a b <<<"$row"
    [[ $r == fio ]] && fio_of[$budget]=$a
done
for row in "${rows[@]}"; do
    IFS='|' read -r budget r out _ <<<"$row"
    [[ $r == fio ]] && continue
    jq -r --arg b "$budget" --arg r "$r" --argjson fio "${fio_of[$budget]:-0}" '
        .cache as $c | ($c.bytes_per_token) as $bpt |
        "| \($b) | \($r) | \(.prefetch_depth) | \(.decode_tokens_per_s * 100 | round / 100) | " +
        "\($bpt / 1e6 | round) | \($c.hit_rate * 1000 | round / 10)% | " +
        "\($c.prefetch1_accuracy * 1000 | round / 10)% / " +
        "\(if $c.prefetch2_issued > 0 then ($c.prefetch2_accuracy * 1000 | round / 10 | tostring) + "%" else "-" end) | " +
        "\($c.prefetch_wasted_bytes_per_token / 1e6 | round) (\($c.prefetch2_wasted_bytes_per_token / 1e6 | round)) | " +
        "\($c.read_gbps_busy * 100 | round / 100) | " +
        "\(if $fio > 0 and $bpt > 0 then ($fio * 1e9 / $bpt * 100 | round / 100 | tostring) else "-" end) / " +
        "\(if $bpt > 0 then ($c.read_gbps_busy * 1e9 / $bpt * 100 | round / 100 | tostring) else "-" end) | " +
        "\(if $bpt > 0 then (.decode_tokens_per_s / ($c.read_gbps_busy * 1e9 / $bpt) * 100 | round | tostring) + "%" else "-" end) |"' "$out"
done
