#!/usr/bin/env bash
# FIFO against priority read order (--read-order fifo / priority), alternating in one run: for each budget, ROUNDS x
# DEPTHS x (stream_bench in FIFO order, then in priority order), each a fresh process on the same file and workload,
# then fio at the cache's mean request size (O_DIRECT, io_uring, random reads) at each of FIO_DEPTHS for the I/O
# bound. Prints each run's JSON (kept in OUT_DIR) and a Markdown table: decode tok/s and the priority / FIFO ratio,
# seconds per token the forward pass waited for reads, read MB/token, hit rate, prefetch accuracy, wasted MB/token,
# predictions dropped unread per token, the reads in flight ahead of a demand read and its mean latency (asked for
# to done), read GB/s while reading, and the I/O bound tok/s at fio's rate and at the cache's own.
#
# Usage: bench/streaming/read_order_ab.sh MODEL.gguf BUDGET [BUDGET...]
# Env: STREAM_BENCH (default build/release/bench/streaming/stream_bench), TOKENS (24), WARMUP (40), THREADS (2),
#      ROUNDS (2), DEPTHS ("1 2": --prefetch-depth values), POLICY (lru-2), WINDOW (priority's --read-window; empty:
#      the default), ROUTING (a recording replayed instead of the file's router: docs/ROUTING.md; depth 2 needs a
#      version-2 recording), FIO_SECONDS (5; 0 skips fio), FIO_DEPTHS ("8 32"), FIO_OPTS (extra fio options, e.g.
#      --fixedbufs=1), OUT_DIR (.cache/bench/read_order).
# Needs jq (and fio unless FIO_SECONDS=0).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${STREAM_BENCH:-$root/build/release/bench/streaming/stream_bench}
model=${1:?model path}
shift
(($#)) || { echo "usage: $0 MODEL.gguf BUDGET [BUDGET...]" >&2; exit 2; }
tokens=${TOKENS:-24}
warmup=${WARMUP:-40}
threads=${THREADS:-2}
rounds=${ROUNDS:-2}
depths=${DEPTHS:-1 2}
policy=${POLICY:-lru-2}
fio_seconds=${FIO_SECONDS:-5}
fio_depths=${FIO_DEPTHS:-8 32}
out_dir=${OUT_DIR:-$root/.cache/bench/read_order}
mkdir -p "$out_dir"
for tool in jq "$bin"; do
    command -v "$tool" >/dev/null || { echo "read_order_ab: $tool not found" >&2; exit 1; }
done
extra=()
[[ -n ${ROUTING:-} ]] && extra+=(--routing "$ROUTING")
window=()
[[ -n ${WINDOW:-} ]] && window=(--read-window "$WINDOW")

. "$root/bench/streaming/fio_rate.sh"

echo "model $model; $(lscpu | sed -n 's/^Model name: *//p'); $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "stream_bench TOKENS=$tokens WARMUP=$warmup THREADS=$threads POLICY=$policy DEPTHS=\"$depths\" WINDOW=${WINDOW:-default}" \
    "${ROUTING:+ROUTING=$ROUTING} FIO_OPTS=${FIO_OPTS:-}"
runs=()
declare -A fio_of
for budget in "$@"; do
    for ((r = 1; r <= rounds; ++r)); do
        for depth in $depths; do
            for order in fifo priority; do
                out="$out_dir/$budget-depth$depth-$order-round$r.json"
                args=("${extra[@]}" --read-order "$order")
                [[ $order == priority ]] && args+=("${window[@]}")
                "$bin" "$model" "$budget" "$tokens" "$warmup" "$threads" "$depth" "$policy" "${args[@]}" >"$out"
                cat "$out"
                runs+=("$budget|$r|$out")
            done
        done
    done
    # fio at the mean request size of this budget's last run (page-aligned), at each depth, for the bound.
    fio_of[$budget]="-"
    if ((fio_seconds > 0)); then
        bs=$(jq '.cache.mean_read_bytes / 4096 | round * 4096' "$out")
        list=""
        for d in $fio_depths; do
            g=$(fio_gbps "$model" "$bs" "$d" "$fio_seconds")
            echo "fio $budget: $g GB/s at $bs bytes, depth $d ${FIO_OPTS:-}"
            list+="${list:+ }$g"
        done
        fio_of[$budget]=$list
    fi
done

echo
echo "| budget | round | depth | order | decode tok/s | priority / fifo | read wait s/token | read MB/token | hit rate | prefetch accuracy | wasted MB/token | dropped unread /token | demand read: reads ahead, ms | read GB/s while reading | I/O bound tok/s: fio ($fio_depths) / own rate |"
echo "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|"
declare -A fifo_tps
for row in "${runs[@]}"; do
    IFS='|' read -r budget r out <<<"$row"
    depth=$(jq '.prefetch_depth' "$out")
    order=$(jq -r '.read_order' "$out")
    tps=$(jq '.decode_tokens_per_s' "$out")
    ratio=""
    if [[ $order == fifo ]]; then
        fifo_tps["$budget/$r/$depth"]=$tps
    else
        ratio=$(jq -n --argjson a "$tps" --argjson b "${fifo_tps["$budget/$r/$depth"]}" '$a / $b * 100 | round / 100')
    fi
    jq -r --arg b "$budget" --arg r "$r" --arg ratio "$ratio" --arg fio "${fio_of[$budget]}" '
        .cache as $c | ($c.bytes_per_token) as $bpt | (.tokens) as $n |
        "| \($b) | \($r) | \(.prefetch_depth) | \(.read_order) | \(.decode_tokens_per_s * 100 | round / 100) | " +
        "\(if $ratio == "" then "" else "**" + $ratio + "**" end) | \(.expert_wait_s_per_token * 1000 | round / 1000) | " +
        "\($bpt / 1e6 | round) | \($c.hit_rate * 1000 | round / 10)% | \($c.prefetch_accuracy * 1000 | round / 10)% | " +
        "\($c.prefetch_wasted_bytes_per_token / 1e6 | round) | \($c.prefetch_dropped / $n * 10 | round / 10) | " +
        "\($c.demand_mean_queued_behind * 10 | round / 10), \($c.demand_mean_latency_ms * 10 | round / 10) | " +
        "\($c.read_gbps_busy * 100 | round / 100) | " +
        "\(if $fio == "-" or $bpt == 0 then "-" else ($fio | split(" ") | map(tonumber * 1e9 / $bpt * 100 | round / 100 | tostring) | join(" / ")) end) / " +
        "\(if $bpt > 0 then ($c.read_gbps_busy * 1e9 / $bpt * 100 | round / 100 | tostring) else "-" end) |"' "$out"
done
