#!/usr/bin/env bash
# Builds the GGUF libFuzzer target with clang (ASan + UBSan) into build/fuzz and replays the committed corpus.
# Usage: tests/fuzz/replay.sh [extra libFuzzer args]   (e.g. -max_total_time=180 to fuzz instead of replaying)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=build/fuzz
mkdir -p "$out"
cxx=$(command -v clang++-14 || command -v clang++)
sources=(tests/fuzz/gguf_fuzzer.cpp runtime/gguf/byte_source.cpp runtime/gguf/encode.cpp runtime/gguf/metadata.cpp
         runtime/gguf/parser.cpp runtime/gguf/tensor_info.cpp runtime/gguf/value.cpp kernels/quant_type.cpp
         base/error.cpp)
binary=$out/gguf_fuzzer
if [[ ! -x $binary ]] || [[ -n $(find "${sources[@]}" runtime/gguf/*.hpp -newer "$binary" 2>/dev/null) ]]; then
    "$cxx" -std=c++20 -O1 -g -I. -Iinclude -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
        -fno-omit-frame-pointer "${sources[@]}" -o "$binary"
fi
if [[ $# -eq 0 ]]; then
    # -runs=0: execute every corpus file once, then stop; any crash or sanitizer report exits non-zero.
    "$binary" -runs=0 tests/fuzz/corpus
else
    mkdir -p "$out/corpus"
    "$binary" "$@" "$out/corpus" tests/fuzz/corpus
fi
