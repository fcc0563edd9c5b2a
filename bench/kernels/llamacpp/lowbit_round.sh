#!/usr/bin/env bash
# One round of the low-bit side-by-side (issue 17): llama.cpp's ggml_mul_mat and Sluice's kernels on the
# Qwen3-30B-A3B expert shape for Q2_K, Q3_K, the IQ1/IQ2/IQ3 formats and MXFP4, alternating, each run started
# once the machine is idle (as round.sh). Usage: bench/kernels/llamacpp/lowbit_round.sh [plain|repack] [FORMATS]
# FORMATS: comma-separated GGUF type names (q2_K,q3_K,mxfp4) to run only those rows on both sides.
set -u
here=$(cd "$(dirname "$0")" && pwd)
G=${GGML_MM_BENCH:-/work/llamacpp-bench/ggml_mm_bench}
S=${KERNELS_BENCH:-$(cd "$here/../../.." && pwd)/build/release/bench/kernels/kernels_bench}
layout=${1:-repack}
only=${2:-}
for step in "$G lowbit 1 $layout $only" "$G lowbit 2 $layout $only" "$S lowbit $only"; do
    echo "== $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg): $step"
    $step 2>&1 | grep -v '^repack:'
done
echo "== $(date -u +%T) end load: $(cat /proc/loadavg)"
