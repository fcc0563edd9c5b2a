#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) into build/fuzz-sanitized and replays their committed
# corpora; any crash, sanitizer report, leak or timeout exits non-zero.
# Usage: tests/fuzz/replay.sh                       replay every target's corpus
#        tests/fuzz/replay.sh TARGET [libFuzzer args] build TARGET and run it on its corpus (bench/fuzz/run.sh
#                                                   fuzzes this way: -max_total_time=3600 ...)
#        tests/fuzz/replay.sh --build TARGET        only build; prints the binary's path
# Targets: gguf jinja openai_request tokenizer websocket_message grammar (tests/fuzz/targets.txt lists their sources).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=build/fuzz-sanitized
mkdir -p "$out"
cxx=$(command -v clang++-14 || command -v clang++)

# Sources of TARGET (one line of targets.txt: "name: files...").
sources_of() {
    local line
    line=$(grep -E "^$1:" tests/fuzz/targets.txt) || { echo "unknown fuzz target '$1'" >&2; exit 2; }
    echo "${line#*:}"
}

corpus_of() {
    if [[ $1 == gguf ]]; then echo tests/fuzz/corpus; else echo "tests/fuzz/corpus_$1"; fi
}

build() {
    local target=$1 binary=$out/$1_fuzzer
    local -a sources objects
    read -r -a sources <<<"$(sources_of "$target")"
    local launcher=()
    command -v ccache >/dev/null && launcher=(ccache)
    # One object per source (through ccache when present), so a change recompiles only what it touches.
    # -gline-tables-only keeps reports readable at a fraction of -g's build time and memory.
    for src in "${sources[@]}"; do
        local obj=$out/obj/${src%.cpp}.o
        mkdir -p "$(dirname "$obj")"
        # Per-ISA kernel sources take the instruction-set flags kernels/CMakeLists.txt gives them.
        local isa=()
        case $src in
        *_avx2.cpp) isa=(-mavx2 -mfma -mf16c) ;;
        *_avx512.cpp) isa=(-mavx2 -mfma -mf16c -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni) ;;
        esac
        "${launcher[@]}" "$cxx" -std=c++20 -O1 -gline-tables-only -I. -Iinclude "${isa[@]}" \
            -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
            -c "$src" -o "$obj"
        objects+=("$obj")
    done
    "$cxx" -fsanitize=fuzzer,address,undefined "${objects[@]}" -o "$binary"
    echo "$binary"
}

if [[ ${1:-} == --build ]]; then
    build "$2"
    exit 0
fi

if [[ $# -eq 0 ]]; then
    status=0
    for target in $(cut -d: -f1 tests/fuzz/targets.txt | grep -v '^#'); do
        binary=$(build "$target")
        # -runs=0: execute every corpus file once, then stop.
        echo "== $target: $(find "$(corpus_of "$target")" -type f | wc -l) inputs"
        "$binary" -runs=0 -rss_limit_mb=2048 -timeout=30 "$(corpus_of "$target")" || status=1
    done
    exit $status
fi

target=$1
shift
binary=$(build "$target")
mkdir -p "$out/corpus_$target"
dict=tests/fuzz/$target.dict
extra=()
[[ -f $dict ]] && extra+=("-dict=$dict")
seeds=("$(corpus_of "$target")")
# The real chat templates seed the Jinja target.
shared=${SLUICE_SHARED_DIR:-../shared}
[[ $target == jinja && -d $shared/fixtures/chat-templates ]] && seeds+=("$shared/fixtures/chat-templates")
"$binary" "${extra[@]}" "$@" "$out/corpus_$target" "${seeds[@]}"
