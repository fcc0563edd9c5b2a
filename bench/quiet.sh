#!/usr/bin/env bash
# Runs "$@" with every other compiler process (cc1plus) paused, and resumes them afterwards: benchmark hygiene
# on a small machine shared with builds. Usage: bench/quiet.sh COMMAND [ARGS...]
( while true; do pkill -STOP cc1plus 2>/dev/null; sleep 0.5; done ) &
pauser=$!
"$@"
rc=$?
kill "$pauser"
pkill -CONT cc1plus 2>/dev/null
sleep 0.2
pkill -CONT cc1plus 2>/dev/null
exit "$rc"
