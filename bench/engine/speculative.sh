#!/usr/bin/env bash
# Decode speed of the bundled model with and without speculative decoding (prompt lookup, a draft model), same
# run, alternating the modes in each round because this VM's speed drifts. Greedy; every mode's tokens are
# compared with plain decoding's (they must be identical). Prints per mode: decode tokens, decode ms, tokens/s,
# drafted/accepted, and the speed-up over plain decoding.
#
# Usage: bench/engine/speculative.sh [rounds=3] [threads=2]
# MODEL (default models/sluice-tiny-moe.gguf), DRAFT (default models/sluice-tiny-draft.gguf if present, else
# MODEL itself: a self-draft, every draft accepted), N (tokens per prompt, default 128), BUDGET (a
# --memory-budget; with one that streams the experts, the table adds expert reads and bytes read per token),
# EXTRA (more `sluice run` flags for the speculative modes, e.g. "--draft-fixed --draft-max 4"), MODES (default
# "off lookup draft"; "mtp" drafts with the model's own MTP block, for files that carry one), IGNORE_EOS (default 1: every prompt generates N tokens; 0: answers end where the model
# ends them). Needs jq.
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
read -ra modes <<<"${MODES:-off lookup draft}" # "off" must be first: the others are checked against it
flags_off=()
read -ra extra_flags <<<"${EXTRA:-}"
flags_lookup=(--lookup "${extra_flags[@]}")
flags_draft=(--draft "$DRAFT" "${extra_flags[@]}")
flags_mtp=(--mtp "${extra_flags[@]}")
budget_flags=()
[[ -n "${BUDGET:-}" ]] && budget_flags=(--memory-budget "$BUDGET" --disk-bandwidth 1)

declare -A tokens ms drafted accepted ref mismatches misses bytes generated
for m in "${modes[@]}"; do
    tokens[$m]=0; ms[$m]=0; drafted[$m]=0; accepted[$m]=0; mismatches[$m]=0; misses[$m]=0; bytes[$m]=0; generated[$m]=0
done

one() { # mode prompt -> json
    local mode=$1 p=$2 kind=${2%%:*} text=${2#*:}
    local -n extra="flags_$mode"
    local args=(run -m "$model" -p "$text" -n "$n" --temp 0 --threads "$threads" --json
        "${budget_flags[@]}" "${extra[@]}")
    [[ ${IGNORE_EOS:-1} == 1 ]] && args+=(--ignore-eos)
    [[ $kind == chat ]] && args+=(--chat)
    "$sluice" "${args[@]}" 2>/dev/null
}

for ((r = 0; r < rounds; r++)); do
    # Rotate the order each round: off lookup draft, lookup draft off, draft off lookup.
    order=("${modes[@]:r%${#modes[@]}}" "${modes[@]:0:r%${#modes[@]}}")
    for i in "${!prompts[@]}"; do
        for m in "${order[@]}"; do
            out=$(one "$m" "${prompts[$i]}")
            toks=$(jq -c .tokens <<<"$out")
            if [[ $m == off ]]; then ref[$i]=$toks; fi
            if [[ -n "${ref[$i]:-}" && $m != off && "$toks" != "${ref[$i]}" ]]; then
                mismatches[$m]=$((mismatches[$m] + 1))
            fi
            read -r t d dr ac mi by g < <(jq -r '[(.timings.per_token_ms | length) - 1, .timings.decode_ms,
                (.speculative.drafted_tokens // 0), (.speculative.accepted_tokens // 0),
                (.experts.misses // 0), (.experts.bytes_read // 0), (.tokens | length)] | @tsv' <<<"$out")
            misses[$m]=$((misses[$m] + mi))
            bytes[$m]=$((bytes[$m] + by))
            generated[$m]=$((generated[$m] + g))
            tokens[$m]=$((tokens[$m] + t))
            ms[$m]=$(jq -n "${ms[$m]} + $d")
            drafted[$m]=$((drafted[$m] + dr))
            accepted[$m]=$((accepted[$m] + ac))
        done
    done
done

echo "model $(basename "$model"), draft $(basename "$DRAFT"), $rounds rounds x ${#prompts[@]} prompts x $n tokens," \
    "$threads threads, budget ${BUDGET:-default}, extra flags: ${EXTRA:-none}, ignore-eos ${IGNORE_EOS:-1}"
printf '%-7s %8s %10s %9s %8s %8s %8s %10s %14s %14s\n' mode tokens decode_ms tok/s drafted accepted speedup \
    mismatches expert_reads/t MB_read/t
base=$(jq -n "${tokens[off]} * 1000 / ${ms[off]}")
for m in "${modes[@]}"; do
    rate=$(jq -n "${tokens[$m]} * 1000 / ${ms[$m]}")
    printf '%-7s %8d %10.1f %9.1f %8d %8d %7.2fx %10d %14.1f %14.2f\n' "$m" "${tokens[$m]}" "${ms[$m]}" "$rate" \
        "${drafted[$m]}" "${accepted[$m]}" "$(jq -n "$rate / $base")" "${mismatches[$m]}" \
        "$(jq -n "${misses[$m]} / ${generated[$m]}")" "$(jq -n "${bytes[$m]} / ${generated[$m]} / 1e6")"
done
