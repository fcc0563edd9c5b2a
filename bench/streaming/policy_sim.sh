#!/usr/bin/env bash
# Replacement policies and prefetch widths compared by simulation on a routing recording: for each budget, policy
# and prefetch setting, `sluice inspect --plan --header-only --routing REC` replays the recording through the cache
# the plan sizes (replacement_policy::simulate, the policy classes the runtime uses; no weights read, no model run)
# and reports the demand hit rate, prefetch accuracy, bytes read per token (all, demand misses, prefetches evicted
# unused) and the disk bound at GBPS.
#
# Usage: bench/streaming/policy_sim.sh MODEL.gguf RECORDING [BUDGET...]   (default budgets: 4GiB 6GiB 8GiB)
# Env: POLICIES (default "lru lfu lru-2 layer-quota pin-hot:25 pin-hot:50 pin-hot:75"), PREFETCH (default
#      "8 0": prefetch widths, 0 = off; a width of top_k or more reads the whole prediction; WIDTH:2 also reads
#      the recorded prediction two layers ahead, --prefetch-depth 2, version-2 recordings), GBPS (disk GB/s for
#      the bound, default 1), SLUICE (default build/release/cli/sluice), THREADS (2), CTX (512, as stream_bench).
# Prints a Markdown table. Needs jq.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
model=${1:?model}
rec=${2:?routing recording}
shift 2
budgets=("$@")
((${#budgets[@]})) || budgets=(4GiB 6GiB 8GiB)
sluice=${SLUICE:-$root/build/release/cli/sluice}
policies=${POLICIES:-lru lfu lru-2 layer-quota pin-hot:25 pin-hot:50 pin-hot:75}
widths=${PREFETCH:-8 0}
gbps=${GBPS:-1}
command -v jq >/dev/null || { echo "policy_sim: needs jq" >&2; exit 1; }
[[ -x $sluice ]] || { echo "policy_sim: $sluice is not built" >&2; exit 1; }

echo "recording $rec on $model; disk bound at $gbps GB/s; $(date -u '+%Y-%m-%d %H:%M UTC')"
echo
echo "| budget | slots | policy | prefetch | demand hit rate | prefetch accuracy | read MB/token | miss MB/token | wasted prefetch MB/token | disk bound tok/s |"
echo "|---|---:|---|---|---:|---:|---:|---:|---:|---:|"
for budget in "${budgets[@]}"; do
    for policy in $policies; do
        for spec in $widths; do
            width=${spec%%:*}
            depth=1
            [[ $spec == *:* ]] && depth=${spec#*:}
            if ((width == 0)); then
                pf=(--no-prefetch)
                label=off
            else
                pf=(--prefetch-width "$width" --prefetch-depth "$depth")
                label="top-$width"
                ((depth == 1)) || label+=", depth $depth"
            fi
            "$sluice" inspect --plan --header-only --threads "${THREADS:-2}" --ctx "${CTX:-512}" \
                --memory-budget "$budget" --disk-bandwidth "$gbps" --routing "$rec" --policy "$policy" "${pf[@]}" \
                "$model" |
                jq -r --arg b "$budget" --arg pf "$label" '
                    .cache_slots as $slots | .routing |
                    "| \($b) | \($slots) | \(.policy) | \($pf) | \(.demand_hit_rate * 1000 | round / 10)% | " +
                    "\(if .prefetch_reads > 0 then (.prefetch_accuracy * 1000 | round / 10 | tostring) + "%" else "-" end) | " +
                    "\(.read_bytes_per_token / 1e6 | round) | \(.miss_bytes_per_token / 1e6 | round) | " +
                    "\(.wasted_prefetch_bytes_per_token / 1e6 | round) | \(.tokens_per_s_bound * 100 | round / 100) |"'
        done
    done
done
