#!/usr/bin/env bash
# Trains the three routing donors at once on one GPU and records their routing (see README.md beside this file).
#
#   run_all.sh DIR OUT STEPS TIME_BUDGET_S [BATCH]
#
# DIR holds corpus.jsonl.xz (gather_corpus.py), tokenizer.json.xz (Qwen3's, xz-compressed) and these scripts;
# OUT receives <family>.routing.xz, <family>.log and prepare.log. Needs python3 with torch, numpy and tokenizers
# (transformers optional: it supplies each family's router_aux_loss_coef).
set -euo pipefail
dir=$1 out=$2 steps=$3 budget=$4 batch=${5:-16}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PYTHONUNBUFFERED=1 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True

xz -dc "$dir/tokenizer.json.xz" >"$work/tokenizer.json"
python3 "$dir/prepare.py" "$dir/corpus.jsonl.xz" "$work/tokenizer.json" "$work/data.pt" 2>&1 | tee "$out/prepare.log"

pids=()
for family in qwen3-30b-a3b qwen3.5-35b-a3b gpt-oss-120b; do
    python3 "$dir/donor.py" --family "$family" --data "$work/data.pt" --out "$work" --steps "$steps" \
        --time-budget "$budget" --batch "$batch" >"$work/$family.stdout" 2>&1 &
    pids+=($!)
done
status=0
for pid in "${pids[@]}"; do
    wait "$pid" || status=1
done
for family in qwen3-30b-a3b qwen3.5-35b-a3b gpt-oss-120b; do
    cat "$work/$family.stdout" >>"$out/$family.log"
    if [[ -f "$work/$family.routing" ]]; then
        xz -9 -T4 -c "$work/$family.routing" >"$out/$family.routing.xz"
    fi
done
ls -l "$out"
exit $status
