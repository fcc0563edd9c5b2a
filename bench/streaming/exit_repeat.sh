#!/usr/bin/env bash
# Repeats a short streaming `sluice run` of the bundled model (the command of issue 22's exit hang) RUNS times in
# each of LOOPS parallel loops at nice 15, and counts the runs that had not exited after 20 s (killed, counted
# as hung). Several loops at once load the machine, which is when the hang showed: before the fix of Nov 25 it
# hung 4 times in 1,680 runs at 8 loops.
# Usage: bench/streaming/exit_repeat.sh [path/to/sluice]     Env: LOOPS (8), RUNS (150)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
sluice=${1:-$root/build/release/cli/sluice}
loops=${LOOPS:-8}
runs=${RUNS:-150}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

one_loop() {
    local hung=0
    for _ in $(seq "$runs"); do
        local rc=0
        timeout -s KILL 20 nice -n 15 "$sluice" run -m "$root/models/sluice-tiny-moe.gguf" --memory-budget 90MB \
            --threads 1 -p 'And it came to pass' -n 16 --temp 0 >/dev/null 2>&1 || rc=$?
        if [[ $rc == 137 ]]; then
            hung=$((hung + 1))
        elif [[ $rc != 0 ]]; then
            echo "exit_repeat: a run failed with status $rc" >&2
        fi
    done
    echo "$hung" >"$out/$1"
}

for l in $(seq "$loops"); do
    one_loop "$l" &
done
wait
total=$(cat "$out"/* | paste -sd+ | bc)
echo "exit_repeat: $((loops * runs)) runs in $loops loops, $total hung"
[[ $total == 0 ]]
