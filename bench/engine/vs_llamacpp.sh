#!/usr/bin/env bash
# Prefill and decode of one GGUF file by Sluice and by llama.cpp's llama-bench, same thread count, alternating
# (llama.cpp, Sluice, llama.cpp, Sluice) because this VM's speed drifts; prints each run's tokens/s per test.
#
# Usage: bench/engine/vs_llamacpp.sh MODEL.gguf LLAMA_BENCH [threads=2] [reps=3]   (ROUNDS, default 2)
# LLAMA_BENCH: a llama-bench binary (built from llama.cpp with -DGGML_NATIVE=ON, CPU only). Needs jq.
# Sluice runs with --memory-budget ${BUDGET:-20GiB}, enough to hold the 17 GB model resident. PROMPTS (default 64,512)
# are the prefill lengths, GEN (default 32) the decode length. VARIANTS (optional) lists environment settings for
# several Sluice runs per round, each one word (e.g. VARIANTS="SLUICE_REPACK=0 SLUICE_REPACK=1": GGUF's layout, then
# repacked Q4_K); each round then runs llama.cpp and every variant in that order. BASELINE (optional): another sluice
# binary (an older build) run after them in every round, its lines marked [baseline].
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
model=${1:?model}
llama=${2:?llama-bench binary}
threads=${3:-2}
reps=${4:-3}
sluice=${SLUICE:-$root/build/release/cli/sluice}
prompts=${PROMPTS:-64,512}
gen=${GEN:-32}
read -ra prompt_list <<<"${prompts//,/ }"
read -ra variants <<<"${VARIANTS:-SLUICE_VARIANT=default}"

for round in $(seq 1 "${ROUNDS:-2}"); do
    "$llama" -m "$model" -t "$threads" -p "$prompts" -n "$gen" -r "$reps" -o json |
        jq -r --arg r "$round" '.[] | "llama.cpp round \($r) " +
            (if .n_prompt > 0 then "pp\(.n_prompt)" else "tg\(.n_gen)" end) + " \(.avg_ts) tok/s (\(.stddev_ts))"'
    for v in "${variants[@]}"; do
        env "$v" "$sluice" bench -m "$model" --threads "$threads" -p "${prompt_list[@]}" -n "$gen" -r "$reps" \
            --memory-budget "${BUDGET:-20GiB}" --json |
            jq -r --arg r "$round" --arg v "${VARIANTS:+ [$v]}" \
                '.results[] | "sluice    round \($r) \(.test) \(.tokens_per_s.mean) tok/s (\(.tokens_per_s.stddev))\($v)"'
    done
    if [[ -n "${BASELINE:-}" ]]; then
        "$BASELINE" bench -m "$model" --threads "$threads" -p "${prompt_list[@]}" -n "$gen" -r "$reps" \
            --memory-budget "${BUDGET:-20GiB}" --json |
            jq -r --arg r "$round" \
                '.results[] | "sluice    round \($r) \(.test) \(.tokens_per_s.mean) tok/s (\(.tokens_per_s.stddev)) [baseline]"'
    fi
done
