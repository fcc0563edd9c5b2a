#!/usr/bin/env bash
# What continuous batching can gain when experts stream from disk, by simulation on a routing recording: for each
# stream count and policy, `sluice inspect --plan --header-only --routing REC --streams N` replays N sequences at once
# as the batch engine runs them (each step one token of each stream, streams started at evenly spaced records, each
# layer's distinct experts fetched once per step, the union of the next-layer predictions read ahead up to 8 x top-k),
# through the cache the plan sizes, and reports per step the distinct experts (the union over its tokens), the
# misses and the reads ahead, the bytes read per token and the disk-bound aggregate tokens/s at GBPS (disk time only:
# N tokens per step over the step's bytes at GBPS), and that bound against one stream's.
#
# Usage: bench/streaming/batch_union.sh MODEL.gguf RECORDING [BUDGET]   (default budget 4GiB)
# Env: STREAMS ("1 2 4 8 16"), POLICIES ("lru lru-2 lru-2-cycle"), GBPS (disk GB/s, default 1.2), PARALLEL (the
#      plan's slots, 16 as bench/server/batch.sh), CTX (256), THREADS (2), SLUICE (build/release/cli/sluice).
# Prints a Markdown table. Needs jq.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
model=${1:?model}
rec=${2:?routing recording}
budget=${3:-4GiB}
sluice=${SLUICE:-$root/build/release/cli/sluice}
streams=${STREAMS:-1 2 4 8 16}
policies=${POLICIES:-lru lru-2 lru-2-cycle}
gbps=${GBPS:-1.2}
command -v jq >/dev/null || { echo "batch_union: needs jq" >&2; exit 1; }
[[ -x $sluice ]] || { echo "batch_union: $sluice is not built" >&2; exit 1; }

echo "recording $rec on $model, budget $budget (--parallel ${PARALLEL:-16} --ctx ${CTX:-256}); disk bound at $gbps GB/s;" \
    "$(date -u '+%Y-%m-%d %H:%M UTC')"
echo
echo "| policy | streams | slots | distinct experts per step | of N x top-k per layer | misses per step | read ahead per step | hit rate | MB read per token | disk-bound aggregate tok/s | vs 1 stream |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for policy in $policies; do
    one=""
    for n in $streams; do
        row=$("$sluice" inspect --plan --header-only --threads "${THREADS:-2}" --ctx "${CTX:-256}" \
            --parallel "${PARALLEL:-16}" --memory-budget "$budget" --disk-bandwidth "$gbps" --routing "$rec" \
            --policy "$policy" --streams "$n" "$model")
        bound=$(jq -r '.routing.tokens_per_s_bound' <<<"$row")
        [[ -z $one ]] && one=$bound
        jq -r --arg n "$n" --arg one "$one" '
            .cache_slots as $slots | .routing |
            "| \(.policy) | \($n) | \($slots) | \(.distinct_per_step * 10 | round / 10) | " +
            "\(.distinct_per_step / (.routed_layers * ($n | tonumber) * .top_k) * 1000 | round / 10)% | " +
            "\(.misses_per_step * 10 | round / 10) | \(.prefetch_reads_per_step * 10 | round / 10) | " +
            "\(.demand_hit_rate * 1000 | round / 10)% | \(.read_bytes_per_token / 1e6 | round) | " +
            "\(.tokens_per_s_bound * 100 | round / 100) | \(.tokens_per_s_bound / ($one | tonumber) * 100 | round / 100)x |"' \
            <<<"$row"
    done
done
