#!/usr/bin/env bash
# Speculative decoding in Sluice against llama.cpp's, resident, on the same two GGUF files (the bundled model and
# its trained draft), the same raw prompts (the chat test tasks rendered with the model's ChatML template, so that
# both tokenise the same text), the same threads, greedy, one cold process per prompt and mode, the modes
# alternating in each round (the order rotating) because this VM's speed drifts:
#
#   sluice        sluice run (no draft)
#   sluice-draft  sluice run --draft DRAFT (the default adaptive length, unless EXTRA says otherwise)
#   llama         llama-completion (no draft)
#   llama-draft   llama-speculative-simple --spec-type draft-simple -md DRAFT --spec-draft-n-max K
#
# Prints per mode: decode tokens, decode ms, tokens/s (their sums), drafted/accepted, speed-up over the same tool
# without a draft, the median of the runs' tokens/s and its speed-up (on a loaded VM a few runs take many times
# their usual time and dominate the sums), and how many answers differ from plain Sluice's (text compared after trimming trailing whitespace).
# Decode time is each tool's own: Sluice's timings.decode_ms (tokens after the first), llama-completion's "eval
# time" (its runs), llama-speculative-simple's "decoded ... in" (its loop from the first generated token). The
# tokens of llama-speculative-simple are its n_predict capped at the answer's length + 1 (it counts the tokens a
# last step accepted past the end of the answer).
#
# Usage: bench/engine/speculative_vs_llamacpp.sh [rounds=3] [threads=2]
# MODEL, DRAFT (default the bundled pair), K (llama.cpp's --spec-draft-n-max, default 4), EXTRA (more flags for
# sluice-draft, e.g. "--draft-fixed --draft-max 4"), LLAMA_BIN (default /work/llamacpp/build/bin), N (most tokens,
# default 256), MODES (default "sluice sluice-draft llama llama-draft"). Needs jq.
# Run it under the shared lock and bench/quiet.sh: flock /work/gen/bench.lock bench/quiet.sh bench/engine/...
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
rounds=${1:-3}
threads=${2:-2}
sluice=${SLUICE:-$root/build/release/cli/sluice}
model=${MODEL:-$root/models/sluice-tiny-moe.gguf}
draft=${DRAFT:-$root/models/sluice-tiny-draft.gguf}
llama_bin=${LLAMA_BIN:-/work/llamacpp/build/bin}
k=${K:-4}
n=${N:-256}
read -ra extra <<<"${EXTRA:-}"
read -ra modes <<<"${MODES:-sluice sluice-draft llama llama-draft}"
for tool in llama-completion llama-speculative-simple; do
    [[ -x "$llama_bin/$tool" ]] || { echo "no $llama_bin/$tool (LLAMA_BIN)" >&2; exit 1; }
done

questions=("What is 478 + 356?" "What is 91 - 38?" "Reverse the word \"water\"." "Reverse the word \"garden\"."
    "How many times does the letter \"e\" appear in \"sheep\"?" "What is the capital of France?"
    "What is the capital of Peru?" "What is 5 + 7?")
render() { printf '<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n' "$1"; }
trim() { sed -e ':a' -e '/^\n*$/{$d;N;ba' -e '}' <<<"$1" | sed -e 's/[[:space:]]*$//'; }

# One run: prints "tokens ms drafted accepted" on stdout's first line, the answer's text after it.
run_one() { # mode prompt answer_tokens
    local mode=$1 prompt=$2 cap=$3 out err
    err=$(mktemp)
    case $mode in
    sluice | sluice-draft)
        local args=(run -m "$model" -p "$prompt" -n "$n" --temp 0 --threads "$threads" --json)
        [[ $mode == sluice-draft ]] && args+=(--draft "$draft" "${extra[@]}")
        out=$("$sluice" "${args[@]}" 2>"$err" </dev/null)
        jq -r '[(.timings.per_token_ms | length) - 1, .timings.decode_ms, (.speculative.drafted_tokens // 0),
            (.speculative.accepted_tokens // 0)] | @tsv' <<<"$out"
        jq -r .text <<<"$out"
        ;;
    llama)
        # llama.cpp logs through a thread of its own and may exit before it wrote the last lines (common/log.cpp
        # says so): a run whose timings are missing is run again.
        local line runs ms try
        for try in 1 2 3 4 5; do
            out=$("$llama_bin/llama-completion" -m "$model" -p "$prompt" -n "$n" --temp 0 -t "$threads" -c 512 \
                -no-cnv --no-warmup 2>"$err" </dev/null)
            line=$(grep -E 'common_perf_print: +eval time' "$err" || true)
            [[ -n "$line" ]] && break
        done
        [[ -n "$line" ]] || { echo "llama-completion printed no timings: $(tail -3 "$err")" >&2; exit 1; }
        ms=$(sed -E 's/.*eval time = *([0-9.]+) ms.*/\1/' <<<"$line")
        runs=$(sed -E 's/.*\/ *([0-9]+) runs.*/\1/' <<<"$line")
        printf '%s\t%s\t0\t0\n' "$runs" "$ms"
        out=$(printf '%s' "$out" | sed -e '1,/^assistant$/d') # it prints the prompt without its control tokens
        printf '%s\n' "${out%\[end of text\]*}"
        ;;
    llama-draft)
        local speed predicted drafted acc try
        for try in 1 2 3 4 5; do
            out=$("$llama_bin/llama-speculative-simple" -m "$model" -md "$draft" -p "$prompt" -n "$n" --temp 0 \
                -t "$threads" -td "$threads" -c 512 --spec-type draft-simple --spec-draft-n-max "$k" 2>"$err" \
                </dev/null)
            acc=$(sed -nE 's/.*n_accept  = ([0-9]+).*/\1/p' "$err")
            [[ -n "$acc" ]] && break
        done
        [[ -n "$acc" ]] || { echo "llama-speculative-simple printed no counts: $(tail -3 "$err")" >&2; exit 1; }
        speed=$(sed -nE 's/.*decoded +[0-9]+ tokens in +[0-9.]+ seconds, speed: +([0-9.]+) t\/s.*/\1/p' "$err")
        predicted=$(sed -nE 's/.*n_predict = ([0-9]+).*/\1/p' "$err")
        drafted=$(sed -nE 's/.*n_drafted = ([0-9]+).*/\1/p' "$err")
        local ms # from the printed speed, which has more digits than the printed seconds
        ms=$(jq -n "$predicted * 1000 / $speed")
        ((predicted > cap + 1)) && predicted=$((cap + 1))
        printf '%s\t%s\t%s\t%s\n' "$predicted" "$ms" "$drafted" "$acc"
        out=$(printf '%s' "$out" | sed -e '1,/^<|im_start|>assistant$/d')
        printf '%s\n' "$out"
        ;;
    esac
    rm -f "$err"
}

declare -A tokens ms drafted accepted mismatches ref reflen rates
for m in "${modes[@]}"; do tokens[$m]=0; ms[$m]=0; drafted[$m]=0; accepted[$m]=0; mismatches[$m]=0; done
nm=${#modes[@]}
for ((r = 0; r < rounds; r++)); do
    order=("${modes[@]:r%nm}" "${modes[@]:0:r%nm}")
    for i in "${!questions[@]}"; do
        prompt=$(render "${questions[$i]}"; printf x) # the x keeps the prompt's final newline
        prompt=${prompt%x}
        if [[ -z "${ref[$i]:-}" ]]; then # plain Sluice's answer: the reference text and length
            res=$(run_one sluice "$prompt" 0)
            ref[$i]=$(trim "$(tail -n +2 <<<"$res")")
            reflen[$i]=$(($(head -1 <<<"$res" | cut -f1) + 1))
        fi
        for m in "${order[@]}"; do
            res=$(run_one "$m" "$prompt" "${reflen[$i]}")
            read -r t d dr ac <<<"$(head -1 <<<"$res")"
            text=$(trim "$(tail -n +2 <<<"$res")")
            [[ "$text" != "${ref[$i]}" ]] && mismatches[$m]=$((mismatches[$m] + 1))
            tokens[$m]=$((tokens[$m] + t)); ms[$m]=$(jq -n "${ms[$m]} + $d")
            drafted[$m]=$((drafted[$m] + dr)); accepted[$m]=$((accepted[$m] + ac))
            rates[$m]="${rates[$m]:-} $(jq -n "$t * 1000 / $d")"
            echo "round $r q$i $m: $t tokens in $d ms, drafted $dr accepted $ac" >&2
        done
    done
done

echo "model $(basename "$model"), draft $(basename "$draft"), $rounds rounds x ${#questions[@]} prompts, $threads" \
    "threads, llama.cpp --spec-draft-n-max $k, sluice-draft flags: ${EXTRA:-default (adaptive)}"
median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
printf '%-13s %7s %10s %9s %8s %8s %8s %12s %10s %10s\n' mode tokens decode_ms tok/s drafted accepted speedup \
    median_tok/s med_speedup mismatches
for m in "${modes[@]}"; do
    rate=$(jq -n "${tokens[$m]} * 1000 / ${ms[$m]}")
    base_mode=${m%-draft}
    med=$(median "${rates[$m]}")
    speed="-"
    med_speed="-"
    if [[ -n "${tokens[$base_mode]:-}" && ${tokens[$base_mode]} -gt 0 ]]; then
        speed=$(printf '%.2fx' "$(jq -n "$rate / (${tokens[$base_mode]} * 1000 / ${ms[$base_mode]})")")
        med_speed=$(printf '%.2fx' "$(jq -n "$med / $(median "${rates[$base_mode]}")")")
    fi
    printf '%-13s %7d %10.1f %9.1f %8d %8d %8s %12.1f %10s %10d\n' "$m" "${tokens[$m]}" "${ms[$m]}" "$rate" \
        "${drafted[$m]}" "${accepted[$m]}" "$speed" "$med" "$med_speed" "${mismatches[$m]}"
done
