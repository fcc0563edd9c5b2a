#!/usr/bin/env bash
# Decode speed through one `sluice serve` process (warm caches, one session reused, as a server runs) with and
# without speculative decoding, per request: the bundled model's chat test tasks, greedy, each request sent in
# every mode in turn (order rotating per round) with the request's `speculative` field. Sums the responses'
# timings (predicted_n, predicted_ms, draft_n, draft_n_accepted) per mode and checks that every mode's answer is
# the plain one.
#
# Usage: bench/engine/speculative_serve.sh [rounds=5] [threads=2]
# MODEL, DRAFT (default models/sluice-tiny-draft.gguf if present, else MODEL), PORT (default 8093),
# EXTRA (more serve flags, e.g. "--draft-fixed --draft-max 4"), MODES (default "off lookup draft"; "mtp" drafts
# with the model's own MTP block and loads it with --mtp, e.g. MODEL=models/sluice-tiny-glm.gguf MODES="off mtp
# lookup draft"). Needs curl and jq. Run it through bench/quiet.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
rounds=${1:-5}
threads=${2:-2}
sluice=${SLUICE:-$root/build/release/cli/sluice}
model=${MODEL:-$root/models/sluice-tiny-moe.gguf}
if [[ -z "${DRAFT:-}" ]]; then
    DRAFT=$root/models/sluice-tiny-draft.gguf
    [[ -f "$DRAFT" ]] || DRAFT=$model
fi
port=${PORT:-8093}
read -ra extra <<<"${EXTRA:-}"
read -ra modes <<<"${MODES:-off lookup draft}" # "off" must be first: the others are checked against it
[[ " ${modes[*]} " == *" draft "* ]] && extra+=(--draft "$DRAFT")
[[ " ${modes[*]} " == *" mtp "* ]] && extra+=(--mtp)
"$sluice" serve -m "$model" --port "$port" --threads "$threads" "${extra[@]}" 2>/dev/null &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done

questions=("What is 478 + 356?" "What is 91 - 38?" "Reverse the word \"water\"." "Reverse the word \"garden\"."
    "How many times does the letter \"e\" appear in \"sheep\"?" "What is the capital of France?"
    "What is the capital of Peru?" "What is 5 + 7?")
declare -A n ms drafted accepted ref mismatches
for m in "${modes[@]}"; do n[$m]=0; ms[$m]=0; drafted[$m]=0; accepted[$m]=0; mismatches[$m]=0; done
for ((r = 0; r < rounds; r++)); do
    order=("${modes[@]:r%${#modes[@]}}" "${modes[@]:0:r%${#modes[@]}}")
    for i in "${!questions[@]}"; do
        for m in "${order[@]}"; do
            body=$(jq -nc --arg q "${questions[$i]}" --arg m "$m" \
                '{messages: [{role: "user", content: $q}], temperature: 0, max_tokens: 256, speculative: {mode: $m}}')
            out=$(curl -sf "http://127.0.0.1:$port/v1/chat/completions" -H 'Content-Type: application/json' -d "$body")
            text=$(jq -c '.choices[0].message' <<<"$out")
            [[ $m == off ]] && ref[$i]=$text
            if [[ -n "${ref[$i]:-}" && $m != off && "$text" != "${ref[$i]}" ]]; then
                mismatches[$m]=$((mismatches[$m] + 1))
            fi
            read -r pn pm dn da < <(jq -r '.timings | [.predicted_n, .predicted_ms, (.draft_n // 0),
                (.draft_n_accepted // 0)] | @tsv' <<<"$out")
            n[$m]=$((n[$m] + pn))
            ms[$m]=$(jq -n "${ms[$m]} + $pm")
            drafted[$m]=$((drafted[$m] + dn))
            accepted[$m]=$((accepted[$m] + da))
        done
    done
done
echo "serve: model $(basename "$model"), modes ${modes[*]}, draft $(basename "$DRAFT"), $rounds rounds x ${#questions[@]} questions," \
    "$threads threads, extra flags: ${EXTRA:-none}"
printf '%-7s %8s %10s %9s %8s %8s %8s %10s\n' mode tokens decode_ms tok/s drafted accepted speedup mismatches
base=$(jq -n "${n[off]} * 1000 / ${ms[off]}")
for m in "${modes[@]}"; do
    rate=$(jq -n "${n[$m]} * 1000 / ${ms[$m]}")
    printf '%-7s %8d %10.1f %9.1f %8d %8d %7.2fx %10d\n' "$m" "${n[$m]}" "${ms[$m]}" "$rate" "${drafted[$m]}" \
        "${accepted[$m]}" "$(jq -n "$rate / $base")" "${mismatches[$m]}"
done
