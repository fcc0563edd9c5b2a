#!/usr/bin/env bash
# One round of the side-by-side: llama.cpp (ggml) and Sluice alternating, each run with other compilers paused
# and started only once no other process (tests, servers) is using more than 20% of a core (waits up to 90 s).
set -u
Q=${QUIET-$(cd "$(dirname "$0")/../.." && pwd)/quiet.sh}  # pauses other compilers while each step runs
G=${GGML_MM_BENCH:-/work/llamacpp-bench/ggml_mm_bench}
S=${KERNELS_BENCH:-$(cd "$(dirname "$0")/../../.." && pwd)/build/release/bench/kernels/kernels_bench}
layout=${1:-repack}
wait_idle() {
    for i in $(seq 1 45); do
        busy=$(top -bn2 -d1 | awk '/^top -/{n++} n==2 && $1 ~ /^[0-9]+$/ && $12 != "cc1plus" && $12 != "top" && $9+0 > 20 {print $12"("$9")"}' | tr '\n' ' ')
        [ -z "$busy" ] && return 0
        sleep 1
    done
    echo "(still busy: $busy)"
}
step() { wait_idle; echo "== $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg): $*"; $Q "$@" 2>&1 | grep -v '^repack:'; }
step $G decode 1 $layout
step $G decode 2 $layout
step $S decode
step $G prefill 1 $layout
step $G prefill 2 $layout
step $S prefill
echo "== $(date -u +%T) end load: $(cat /proc/loadavg)"
