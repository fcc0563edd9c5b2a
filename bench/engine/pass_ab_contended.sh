#!/usr/bin/env bash
# Two builds' pass_bench side by side, alone and beside one busy-loop process (on this 2-vCPU VM, 2 compute
# threads plus the loop oversubscribe the cores, as another tenant or a compiler does): the median time of a
# 1- and a 4-position pass, alternating the builds in each round.
#
# Usage: bench/engine/pass_ab_contended.sh OLD_PASS_BENCH NEW_PASS_BENCH [model=models/sluice-tiny-moe.gguf]
#        [rounds=2] [passes=400]
# Run it through bench/quiet.sh on a shared machine.
set -euo pipefail
old=$1 new=$2
model=${3:-models/sluice-tiny-moe.gguf}
rounds=${4:-2}
passes=${5:-400}
hog=
trap '[[ -n $hog ]] && kill $hog 2>/dev/null' EXIT
for ((r = 1; r <= rounds; r++)); do
    for busy in 0 1; do
        for build in old new; do
            exe=$old
            [[ $build == new ]] && exe=$new
            if [[ $busy == 1 ]]; then
                sh -c 'while :; do :; done' &
                hog=$!
            fi
            times=$("$exe" "$model" 2 "$passes" 1 4 2>&1 | awk '$1 == "1" || $1 == "4" { printf "%s-position %s us  ", $1, $2 }')
            if [[ $busy == 1 ]]; then
                kill "$hog"
                wait "$hog" 2>/dev/null || true
                hog=
            fi
            echo "round $r, busy loop beside: $busy, $build: $times"
        done
    done
done
