#!/usr/bin/env bash
# Same-run A/B of two builds of Sluice on one model file: engine_bench (resident decode and prefill) and
# stream_bench at each budget, alternating which build goes first in each round, so that the host's drift hits
# both alike. Prints one line per run and, per measure, the median ratio new/old over the rounds.
# Usage: bench/engine/ab_trees.sh OLD_BUILD_DIR NEW_BUILD_DIR MODEL.gguf [rounds=2] [budgets="4GiB 8GiB"]
#   e.g. git worktree add /tmp/oldtree c8308f0 && cmake --preset release -S /tmp/oldtree \
#        && cmake --build /tmp/oldtree/build/release --target engine_bench stream_bench
#        bench/quiet.sh bench/engine/ab_trees.sh /tmp/oldtree/build/release build/release \
#            models/generated/qwen3-30b-a3b-q4_k.gguf
set -euo pipefail
if [[ $# -lt 3 ]]; then
    echo "usage: $0 OLD_BUILD_DIR NEW_BUILD_DIR MODEL.gguf [rounds=2] [budgets=\"4GiB 8GiB\"]" >&2
    exit 2
fi
old=$1 new=$2 model=$3 rounds=${4:-2} budgets=${5-"4GiB 8GiB"} # budgets "": engine_bench only
for dir in "$old" "$new"; do
    for exe in bench/engine/engine_bench bench/streaming/stream_bench; do
        [[ -x $dir/$exe ]] || { echo "$0: $dir/$exe is not built" >&2; exit 2; }
    done
done
[[ -r $model ]] || { echo "$0: cannot read $model" >&2; exit 2; }

model_bytes=$(stat -c %s "$model")
results=$(mktemp)
trap 'rm -f "$results"' EXIT

# One engine_bench run: records decode (median of all repetitions) and the two prefill medians. engine_bench
# keeps the model resident only when its plan fits 80 % of MemAvailable; the line says how much was resident,
# so a run that streamed (another process held memory) is seen and not compared.
engine_run() { # LABEL DIR ROUND
    local out
    out=$("$2/bench/engine/engine_bench" "$model" 2 3)
    local dec p64 p512 res
    res=$(sed -n 's/^weights *\([0-9.]*\) GB resident.*/\1/p' <<<"$out")
    dec=$(sed -n 's/^all .*decode median \([0-9.]*\) tokens.*/\1/p' <<<"$out")
    p64=$(sed -n 's/^prefill 64 *median \([0-9.]*\).*/\1/p' <<<"$out")
    p512=$(sed -n 's/^prefill 512 *median \([0-9.]*\).*/\1/p' <<<"$out")
    printf '%s round %s  resident %s GB  decode %s  prefill-64 %s  prefill-512 %s tokens/s\n' \
        "$1" "$3" "$res" "$dec" "$p64" "$p512"
    local tag=""
    if python3 -c "import sys; sys.exit(0 if float('$res') * 1e9 < 0.9 * $model_bytes else 1)"; then
        tag="-streamed" # not a resident run: summarised apart
    fi
    printf '%s decode%s %s\n%s prefill64%s %s\n%s prefill512%s %s\n' \
        "$1" "$tag" "$dec" "$1" "$tag" "$p64" "$1" "$tag" "$p512" >>"$results"
}

# One stream_bench run at BUDGET: records decode tokens/s and the hit rate.
stream_run() { # LABEL DIR ROUND BUDGET
    local out tps hit
    out=$("$2/bench/streaming/stream_bench" "$model" "$4" 32 8 2)
    tps=$(python3 -c 'import json,sys; print("%.3f" % json.loads(sys.stdin.read())["decode_tokens_per_s"])' <<<"$out")
    hit=$(python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print("%.3f" % d["cache"]["hit_rate"])' \
        <<<"$out")
    printf '%s round %s  stream %s decode %s tokens/s  hit rate %s\n' "$1" "$3" "$4" "$tps" "$hit"
    printf '%s stream-%s %s\n' "$1" "$4" "$tps" >>"$results"
}

for ((r = 1; r <= rounds; ++r)); do
    if ((r % 2)); then order=("old:$old" "new:$new"); else order=("new:$new" "old:$old"); fi
    for entry in "${order[@]}"; do engine_run "${entry%%:*}" "${entry#*:}" "$r"; done
    for budget in $budgets; do
        for entry in "${order[@]}"; do stream_run "${entry%%:*}" "${entry#*:}" "$r" "$budget"; done
    done
done

echo
echo "median over $rounds rounds (tokens/s): measure, old, new, new/old"
python3 - "$results" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    label, measure, value = line.split()
    rows.setdefault(measure, {}).setdefault(label, []).append(float(value))
for measure, by in rows.items():
    if "old" not in by or "new" not in by:
        print(f"{measure:18s} only {', '.join(by)} ran this way")
        continue
    o, n = statistics.median(by["old"]), statistics.median(by["new"])
    print(f"{measure:18s} {o:9.2f} {n:9.2f} {n / o:6.3f}")
EOF
