#!/usr/bin/env bash
# Decode speed of the bundled model with and without speculative decoding (prompt lookup, a draft model), same
# run, alternating the modes in each round because this VM's speed drifts. Greedy; every mode's tokens are
# compared with plain decoding's (they must be identical). Prints per mode: decode tokens, decode ms, tokens/s,
# drafted/accepted, and the speed-up over plain decoding.
#
# Usage: bench/engine/speculative.sh [rounds=3] [threads=2]
# MODEL (default models/sluice-tiny-moe.gguf), DRAFT (default models/sluice-tiny-draft.gguf if present, else
# MODEL itself: a self-draft, every draft accepted), N (tokens per prompt, default 128). Needs jq.
# Run it through bench/quiet.sh on a shared machine.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
rounds=${1:-3}
threads=${2:-2}
sluice=${SLUICE:-$root/build/release/cli/sluice}
model=${MODEL:-$root/models/sluice-tiny-moe.gguf}
if [[ -z "${DRAFT:-}" ]]; then
    DRAFT=$root/models/sluice-tiny-draft.gguf
    [[ -f "$DRAFT" ]] || DRAFT=$model
fi
n=${N:-128}

# The bundled model's test tasks (chat) and prose continuations (the model was trained on the King James Bible).
prompts=(
    "chat:What is 478 + 356?"
    "chat:Reverse the word \"water\"."
    "chat:How many times does the letter \"e\" appear in \"sheep\"?"
    "chat:What is the capital of France?"
    "text:In the beginning God created the heaven and the earth."
    "text:And God said, Let there be light: and there was light."
    "text:The LORD is my shepherd; I shall not want."
)
modes=(off lookup draft)
flags_off=()
flags_lookup=(--lookup)
flags_draft=(--draft "$DRAFT")

declare -A tokens ms drafted accepted ref mismatches
for m in "${modes[@]}"; do tokens[$m]=0; ms[$m]=0; drafted[$m]=0; accepted[$m]=0; mismatches[$m]=0; done

one() { # mode prompt -> json
    local mode=$1 p=$2 kind=${2%%:*} text=${2#*:}
    local -n extra="flags_$mode"
    local args=(run -m "$model" -p "$text" -n "$n" --temp 0 --threads "$threads" --json --ignore-eos "${extra[@]}")
    [[ $kind == chat ]] && args+=(--chat)
    "$sluice" "${args[@]}" 2>/dev/null
}

for ((r = 0; r < rounds; r++)); do
    # Rotate the order each round: off lookup draft, lookup draft off, draft off lookup.
    order=("${modes[@]:r%3}" "${modes[@]:0:r%3}")
    for i in "${!prompts[@]}"; do
        for m in "${order[@]}"; do
            out=$(one "$m" "${prompts[$i]}")
            toks=$(jq -c .tokens <<<"$out")
            if [[ $m == off ]]; then ref[$i]=$toks; fi
            if [[ -n "${ref[$i]:-}" && $m != off && "$toks" != "${ref[$i]}" ]]; then
                mismatches[$m]=$((mismatches[$m] + 1))
            fi
            read -r t d dr ac < <(jq -r '[(.timings.per_token_ms | length) - 1, .timings.decode_ms,
                (.speculative.drafted_tokens // 0), (.speculative.accepted_tokens // 0)] | @tsv' <<<"$out")
            tokens[$m]=$((tokens[$m] + t))
            ms[$m]=$(jq -n "${ms[$m]} + $d")
            drafted[$m]=$((drafted[$m] + dr))
            accepted[$m]=$((accepted[$m] + ac))
        done
    done
done

echo "model $(basename "$model"), draft $(basename "$DRAFT"), $rounds rounds x ${#prompts[@]} prompts x $n tokens, $threads threads"
printf '%-7s %8s %10s %9s %8s %8s %8s %10s\n' mode tokens decode_ms tok/s drafted accepted speedup mismatches
base=$(jq -n "${tokens[off]} * 1000 / ${ms[off]}")
for m in "${modes[@]}"; do
    rate=$(jq -n "${tokens[$m]} * 1000 / ${ms[$m]}")
    printf '%-7s %8d %10.1f %9.1f %8d %8d %7.2fx %10d\n' "$m" "${tokens[$m]}" "${ms[$m]}" "$rate" "${drafted[$m]}" \
        "${accepted[$m]}" "$(jq -n "$rate / $base")" "${mismatches[$m]}"
done
