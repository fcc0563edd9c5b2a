#!/usr/bin/env bash
# Draft-guided expert prefetch with streamed experts: the same greedy generation plain, drafted with the prefetch
# and drafted without it (--no-draft-prefetch), same run, the order rotating each round because this VM's speed
# drifts. Every drafted run's tokens are compared with plain decoding's (they must be identical). Prints per
# variant: decode tokens and tokens/s, drafted/accepted, expert reads and MB read per generated token (prompt
# included, from the expert cache's counters), MB read per accepted draft, the prefetch's reads used and wasted,
# then where the decode steps' passes went: plain steps and verifications, their ms and the part of it stalled on
# expert reads (the rest is compute), the mean positions per verification and, over the verifications whose
# positions' reads the controller predicted from the expert cache's state, the predicted reads and the reads counted
# (experts not in memory when fetched; with the draft-guided prefetch a prefetched expert already read counts as none).
#
# Usage: MODEL=FILE.gguf BUDGET=4GiB bench/engine/draft_prefetch.sh [rounds=3] [threads=2]
# MODEL (a MoE file larger than BUDGET, so that experts stream), BUDGET, N (tokens per run, default 48), PROMPT
# (default: a short English sentence), CTX (--ctx, default 512), DRAFT_FLAGS (how drafts are made, default
# "--lookup"; "--mtp" for a file with an MTP block), EXTRA (more flags for the drafted variants, e.g.
# "--draft-fixed --draft-max 4"), ROUTING (a routing recording every variant replays, --routing: the replay hands
# out recorded tokens in forward order, so a drafted run routes a position differently from plain decoding and its
# tokens differ from plain's: mismatches then count that, not an error), SLUICE_OLD (another build: a fourth variant,
# "old", runs the drafted flags with it, so that two builds' drafting compare in one run). Needs jq.
# Run it under the shared lock and bench/quiet.sh: flock /work/gen/bench.lock bench/quiet.sh bench/engine/...
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
rounds=${1:-3}
threads=${2:-2}
sluice=${SLUICE:-$root/build/release/cli/sluice}
model=${MODEL:?MODEL=FILE.gguf is required}
budget=${BUDGET:?BUDGET (a --memory-budget that streams the experts) is required}
n=${N:-48}
prompt=${PROMPT:-"The history of the river begins in the mountains, where the snow melts every spring and"}
read -ra draft_flags <<<"${DRAFT_FLAGS:---lookup}"
read -ra extra_flags <<<"${EXTRA:-}"
routing_flags=()
if [[ -n "${ROUTING:-}" ]]; then routing_flags=(--routing "$ROUTING"); fi
flags_plain=()
flags_prefetch=("${draft_flags[@]}" "${extra_flags[@]}")
flags_noprefetch=("${draft_flags[@]}" "${extra_flags[@]}" --no-draft-prefetch)
variants=(plain prefetch noprefetch)
if [[ -n "${SLUICE_OLD:-}" ]]; then
    flags_old=("${flags_prefetch[@]}")
    variants+=(old)
fi

declare -A tokens ms drafted accepted misses bytes generated mismatches used wasted psteps pms pwait vsteps vms vwait
declare -A pred_n pred pred_actual
for v in "${variants[@]}"; do
    tokens[$v]=0; ms[$v]=0; drafted[$v]=0; accepted[$v]=0; misses[$v]=0; bytes[$v]=0; generated[$v]=0
    mismatches[$v]=0; used[$v]=0; wasted[$v]=0; psteps[$v]=0; pms[$v]=0; pwait[$v]=0; vsteps[$v]=0; vms[$v]=0
    vwait[$v]=0; pred_n[$v]=0; pred[$v]=0; pred_actual[$v]=0
done
ref=""

for ((r = 0; r < rounds; r++)); do
    nv=${#variants[@]}
    order=("${variants[@]:r%nv}" "${variants[@]:0:r%nv}")
    for v in "${order[@]}"; do
        local_flags="flags_$v[@]"
        exe=$sluice
        if [[ $v == old ]]; then exe=$SLUICE_OLD; fi
        out=$("$exe" run -m "$model" -p "$prompt" -n "$n" --temp 0 --ignore-eos --threads "$threads" --json \
            --memory-budget "$budget" --disk-bandwidth 1 --ctx "${CTX:-512}" "${routing_flags[@]}" "${!local_flags}" 2>/dev/null)
        toks=$(jq -c .tokens <<<"$out")
        if [[ $v == plain && -z "$ref" ]]; then ref=$toks; fi
        if [[ -n "$ref" && "$toks" != "$ref" ]]; then mismatches[$v]=$((mismatches[$v] + 1)); fi
        read -r t d dr ac mi by g pu pw < <(jq -r '[(.timings.per_token_ms | length) - 1, .timings.decode_ms,
            (.speculative.drafted_tokens // 0), (.speculative.accepted_tokens // 0), (.experts.misses // 0),
            (.experts.bytes_read // 0), (.tokens | length), (.experts.prefetch_used // 0),
            (.experts.prefetch_wasted // 0)] | @tsv' <<<"$out")
        tokens[$v]=$((tokens[$v] + t)); ms[$v]=$(jq -n "${ms[$v]} + $d")
        drafted[$v]=$((drafted[$v] + dr)); accepted[$v]=$((accepted[$v] + ac))
        misses[$v]=$((misses[$v] + mi)); bytes[$v]=$((bytes[$v] + by)); generated[$v]=$((generated[$v] + g))
        used[$v]=$((used[$v] + pu)); wasted[$v]=$((wasted[$v] + pw))
        read -r ps pm pwt vs vm vwt < <(jq -r '[(.decode_steps.plain_steps // 0), (.decode_steps.plain_ms // 0),
            (.decode_steps.plain_wait_ms // 0), (.speculative.verify_steps // 0), (.speculative.verify_ms // 0),
            (.speculative.verify_wait_ms // 0)] | @tsv' <<<"$out")
        # Verifications whose positions' reads were predicted (the trace's 6th field): predicted and counted reads.
        read -r pn pp pa < <(jq -r '[.decode_steps.trace[] | select(.[0] > 1 and (.[5] // -1) >= 0)] |
            [length, (map(.[5]) | add // 0), (map(.[4]) | add // 0)] | @tsv' <<<"$out")
        pred_n[$v]=$((pred_n[$v] + pn)); pred[$v]=$(jq -n "${pred[$v]} + $pp"); pred_actual[$v]=$((pred_actual[$v] + pa))
        psteps[$v]=$((psteps[$v] + ps)); vsteps[$v]=$((vsteps[$v] + vs))
        pms[$v]=$(jq -n "${pms[$v]} + $pm"); pwait[$v]=$(jq -n "${pwait[$v]} + $pwt")
        vms[$v]=$(jq -n "${vms[$v]} + $vm"); vwait[$v]=$(jq -n "${vwait[$v]} + $vwt")
        echo "round $r $v: $t tokens in $d ms, drafted $dr accepted $ac, $by bytes read" >&2
    done
done

echo "model $(basename "$model"), budget $budget, $rounds rounds x $n tokens, $threads threads," \
    "drafts: ${draft_flags[*]} ${extra_flags[*]}, routing: ${ROUTING:-router}"
printf '%-11s %7s %9s %7s %8s %8s %10s %13s %10s %13s %9s %9s\n' variant tokens tok/s speedup drafted accepted \
    mismatches expert_reads/t MB_read/t MB/accepted pf_used pf_wasted
base=$(jq -n "${tokens[plain]} * 1000 / ${ms[plain]}")
for v in "${variants[@]}"; do
    rate=$(jq -n "${tokens[$v]} * 1000 / ${ms[$v]}")
    per_acc=$([[ ${accepted[$v]} -gt 0 ]] && jq -n "${bytes[$v]} / ${accepted[$v]} / 1e6" || echo 0)
    printf '%-11s %7d %9.2f %6.2fx %8d %8d %10d %13.1f %10.2f %13.2f %9d %9d\n' "$v" "${tokens[$v]}" "$rate" \
        "$(jq -n "$rate / $base")" "${drafted[$v]}" "${accepted[$v]}" "${mismatches[$v]}" \
        "$(jq -n "${misses[$v]} / ${generated[$v]}")" "$(jq -n "${bytes[$v]} / ${generated[$v]} / 1e6")" \
        "$per_acc" "${used[$v]}" "${wasted[$v]}"
done
echo
printf '%-11s %11s %13s %13s %11s %13s %13s %15s %15s %13s\n' variant plain_steps plain_ms/step plain_wait% \
    verify_steps verify_ms/step verify_wait% positions/verify predicted/verify reads/verify
for v in "${variants[@]}"; do
    per() { [[ $2 -gt 0 ]] && jq -n "$1 / $2" || echo 0; }
    pct() { jq -n "if $2 > 0 then 100 * $1 / $2 else 0 end"; }
    printf '%-11s %11d %13.1f %12.1f%% %11d %13.1f %12.1f%% %15.2f %15.1f %13.1f\n' "$v" "${psteps[$v]}" \
        "$(per "${pms[$v]}" "${psteps[$v]}")" "$(pct "${pwait[$v]}" "${pms[$v]}")" "${vsteps[$v]}" \
        "$(per "${vms[$v]}" "${vsteps[$v]}")" "$(pct "${vwait[$v]}" "${vms[$v]}")" \
        "$(per "$((vsteps[$v] + drafted[$v]))" "${vsteps[$v]}")" "$(per "${pred[$v]}" "${pred_n[$v]}")" \
        "$(per "${pred_actual[$v]}" "${pred_n[$v]}")"
done
