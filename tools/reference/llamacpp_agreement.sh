#!/usr/bin/env bash
# llama.cpp's top-1 agreement and cosine with the transformers reference logits of every fixture in
# tests/fixtures/reference, on the very GGUF files `sluice convert` writes (Q8_0, and F32 as a sanity check),
# next to Sluice's own numbers on the same files and positions, and whether the two miss the same positions.
#
# Usage (repository root; needs build/ci built, python3 for reading reference.json, g++):
#     tools/reference/llamacpp_agreement.sh [FIXTURE...]        # default: all eight
# Environment: LLAMACPP (default /work/llamacpp, built in build/), WORK (scratch folder, default
# /tmp/llamacpp_agreement). Prints the per-position misses, then the table. F32 runs use an F32 KV cache on both
# sides; Q8_0 runs use each runtime's default F16 KV cache, as tests/fidelity does. llama.cpp runs twice per file:
# flash attention "auto" (its default, on for the CPU; it computes attention in F16, ~5e-4 of max|logit| even
# on F32 files) and off (exact F32 attention).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LLAMACPP=${LLAMACPP:-/work/llamacpp}
WORK=${WORK:-/tmp/llamacpp_agreement}
B=$ROOT/build/ci
REF=$ROOT/tests/fixtures/reference
mkdir -p "$WORK"

# 1. The two programs: llama.cpp's side against its shared libraries, Sluice's against build/ci's archives
#    (with the flags tests/fidelity is compiled with).
g++ -O2 -std=c++17 -I"$LLAMACPP/include" -I"$LLAMACPP/ggml/include" "$ROOT/tools/reference/llamacpp_logits.cpp" \
    -L"$LLAMACPP/build/bin" -lllama -lggml -lggml-base -Wl,-rpath,"$LLAMACPP/build/bin" -o "$WORK/llamacpp_logits"
c++ -DBOOST_SYSTEM_DYN_LINK -DBOOST_SYSTEM_NO_LIB -DFMT_SHARED -DSPDLOG_COMPILED_LIB -DSPDLOG_FMT_EXTERNAL \
    -DSPDLOG_SHARED_LIB -I"$ROOT" -O3 -DNDEBUG -std=c++20 "$ROOT/tools/reference/sluice_logits.cpp" \
    "$B/runtime/libsluice_runtime.a" "$B/io/libsluice_io.a" "$B/kernels/libsluice_kernels.a" \
    -lboost_system -lspdlog -lfmt -luring -o "$WORK/sluice_logits"

fixtures=("$@")
[ ${#fixtures[@]} -gt 0 ] || fixtures=(llama mixtral qwen2 qwen3 qwen2moe qwen3moe olmoe trained_moe)
table="fixture type llama.cpp_flash_attn positions llama.cpp_top1 llama.cpp_cos_mean llama.cpp_max_rel_diff"
table+=" sluice_top1 sluice_cos_mean llama.cpp_misses sluice_misses shared same_positions"
for name in "${fixtures[@]}"; do
    # 2. The checkpoint folder as tests/fidelity assembles it: the fixture's weights with the shared tokenizer,
    #    or the checkpoint reference.json names (the trained model); its sequences one per line.
    dir=$WORK/$name
    mkdir -p "$dir"
    checkpoint=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("checkpoint", ""))' \
        "$REF/$name/reference.json")
    if [ -n "$checkpoint" ]; then
        hf=$ROOT/$checkpoint
    else
        hf=$dir/hf
        mkdir -p "$hf"
        ln -sf "$REF/$name/config.json" "$REF/$name/model.safetensors" "$hf/"
        ln -sf "$REF/tokenizer/tokenizer.json" "$REF/tokenizer/tokenizer_config.json" "$hf/"
    fi
    python3 -c 'import json,sys; [print(*s) for s in json.load(open(sys.argv[1]))["sequences"]]' \
        "$REF/$name/reference.json" >"$dir/sequences.txt"
    for type in q8_0 f32; do
        # 3. Convert, run both runtimes on the same file, compare with logits.bin.
        kv=()
        [ "$type" = f32 ] && kv=(--kv-f32)
        "$B/cli/sluice" convert "$hf" -o "$dir/$type.gguf" --type "$type" >"$dir/$type.convert.log" 2>&1 ||
            { cat "$dir/$type.convert.log"; exit 1; }
        "$WORK/sluice_logits" "$dir/$type.gguf" "$dir/sequences.txt" "$dir/$type.sluice.bin" "${kv[@]}"
        for fa in auto off; do
            out=$dir/$type.fa-$fa
            args=("$dir/$type.gguf" "$dir/sequences.txt" "$REF/$name/logits.bin" --threads 2 "${kv[@]}")
            [ $fa = off ] && args+=(--no-flash-attn)
            refused=
            if ! "$WORK/llamacpp_logits" "${args[@]}" --other "$dir/$type.sluice.bin" >"$out.txt" 2>"$out.log"; then
                # llama.cpp refuses the file: say why, and still give Sluice's numbers (its logits in llama.cpp's
                # place).
                refused=$(grep -m1 "error" "$out.log" || tail -1 "$out.log")
                [ $fa = off ] || echo "$name $type: llama.cpp refused: $refused"
                "$WORK/llamacpp_logits" "${args[@]}" --instead "$dir/$type.sluice.bin" |
                    sed 's/ top1=/ other_top1=/; s/ cosine_mean=/ other_cosine_mean=/; s/ misses=/ other_misses=/;
                         s/llamacpp_/sluice_/g' >"$out.txt"
            fi
            sed -n "s/^miss /$name $type fa=$fa: /p" "$out.txt" | sed 's/other_/sluice_/g'
            s=$(grep '^summary' "$out.txt")
            v() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$s"; }
            row="$name $type $fa $(v positions)"
            if [ -n "$refused" ]; then
                row+=" refused - - $(v other_top1) $(v other_cosine_mean) - $(v other_misses) - -"
            else
                row+=" $(v top1) $(v cosine_mean) $(v max_rel_diff) $(v other_top1) $(v other_cosine_mean) $(v misses)"
                m=$(v misses) o=$(v other_misses) n=$(v shared)
                if [ "$m" = "$n" ] && [ "$o" = "$n" ]; then same=yes
                elif [ "$m" = "$n" ]; then same=llama.cpp_subset
                elif [ "$o" = "$n" ]; then same=sluice_subset
                else same=no; fi
                row+=" $o $n $same"
            fi
            table+=$'\n'"$row"
        done
    done
done
echo
column -t <<<"$table"
