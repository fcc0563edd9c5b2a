#!/usr/bin/env bash
# The planner against stream_bench (issue 18, requirement 6): for one budget, `sluice inspect --plan --probe
# --routing REC` predicts tokens/s, then stream_bench measures it on the same file, budget, threads, context and
# recording. The estimate is 1 / (1 / COMPUTE + read bytes per token / disk rate), shown with three disk rates:
# the uniform probe (steady random reads over the whole file), the pattern probe (the replay's own reads, burst
# by burst) and, as a check of the formula alone, the rate the cache itself got while reading in stream_bench.
#
# Usage: bench/streaming/plan_vs_stream.sh MODEL.gguf RECORDING BUDGET COMPUTE_TOKENS_PER_S WARMUP TOKENS
# COMPUTE is the model's decode tokens/s with everything in memory, or `measure`: stream_bench first runs the
# same tokens (same warm-up, so the same context positions: attention grows with them) at RESIDENT_BUDGET (20GiB),
# where the plan is resident, and its speed is the compute input. Env: THREADS (2), POLICY (lru-2), SLUICE,
# STREAM_BENCH, OUT_DIR (.cache/bench/plan), RESIDENT_BUDGET. Prints the JSON objects into OUT_DIR and one
# Markdown row. Needs jq. Run under bench/quiet.sh.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
sluice=${SLUICE:-$root/build/release/cli/sluice}
bin=${STREAM_BENCH:-$root/build/release/bench/streaming/stream_bench}
model=${1:?model} rec=${2:?recording} budget=${3:?budget} compute=${4:?compute tokens/s}
warmup=${5:?warmup tokens} tokens=${6:?timed tokens}
threads=${THREADS:-2}
policy=${POLICY:-lru-2}
out_dir=${OUT_DIR:-$root/.cache/bench/plan}
mkdir -p "$out_dir"
plan="$out_dir/plan-$budget.json" run="$out_dir/stream-$budget.json"
rm -f "$run"

# The plan is made for stream_bench's context (512 positions, doubled until 8 + warm-up + timed tokens fit) and
# threads.
ctx=512
while ((ctx < 8 + warmup + tokens)); do ctx=$((ctx * 2)); done
if [[ $compute == measure ]]; then
    # The streamed run first: run right after the resident one (17 GB freed), the 8 GiB pool's decode was 25%
    # slower in two runs of three, with the same bytes and disk rate (docs/PERFORMANCE.md, the planner section).
    "$bin" "$model" "$budget" "$tokens" "$warmup" "$threads" 1 "$policy" --routing "$rec" >"$run"
    resident="$out_dir/resident-$budget.json"
    "$bin" "$model" "${RESIDENT_BUDGET:-20GiB}" "$tokens" "$warmup" "$threads" 1 "$policy" --routing "$rec" >"$resident"
    if [[ $(jq -r .plan.strategy "$resident") != resident ]]; then
        echo "plan_vs_stream: ${RESIDENT_BUDGET:-20GiB} does not hold the model; give COMPUTE or a larger RESIDENT_BUDGET" >&2
        exit 1
    fi
    compute=$(jq -r .decode_tokens_per_s "$resident")
    echo "compute (resident, same positions): $compute tokens/s" >&2
fi
"$sluice" inspect -m "$model" --plan --threads "$threads" --ctx "$ctx" --memory-budget "$budget" --probe \
    --compute-tokens-per-s "$compute" --policy "$policy" --routing "$rec" >"$plan"
if [[ ! -s $run ]]; then
    "$bin" "$model" "$budget" "$tokens" "$warmup" "$threads" 1 "$policy" --routing "$rec" >"$run"
fi

jq -rn --slurpfile p "$plan" --slurpfile s "$run" --argjson c "$compute" --arg b "$budget" '
    $p[0] as $p | $s[0] as $s | $p.routing as $r |
    def est(bw): if $r.read_bytes_per_token == 0 then $c else 1 / (1 / $c + $r.read_bytes_per_token / bw) end;
    def r2: . * 100 | round / 100;
    def pct(e): ((e / $s.decode_tokens_per_s - 1) * 100 | round | tostring) + "%";
    (est($p.disk_bandwidth_bytes_per_s)) as $eu |
    (if $r.pattern_probe then est($r.pattern_probe.bytes_per_s) else null end) as $ep |
    (est($s.cache.read_gbps_busy * 1e9)) as $ec |
    "| \($b) | \($p.cache_slots) | \($c | r2) | \($r.demand_hit_rate * 1000 | round / 10)%, \($r.read_bytes_per_token / 1e6 | round) MB | " +
    "\($p.disk_bandwidth_bytes_per_s / 1e9 | r2) / \(if $r.pattern_probe then ($r.pattern_probe.bytes_per_s / 1e9 | r2) else "-" end) | " +
    "\($eu | r2) / \(if $ep then ($ep | r2) else "-" end) / \($ec | r2) | " +
    "**\($s.decode_tokens_per_s | r2)**, \($s.cache.bytes_per_token / 1e6 | round) MB, \($s.cache.hit_rate * 1000 | round / 10)%, " +
    "\($s.cache.read_gbps_busy | r2) GB/s | \(pct($eu)) / \(if $ep then pct($ep) else "-" end) / \(pct($ec)) |"'
