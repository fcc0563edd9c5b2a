#!/usr/bin/env bash
# Runs the README's command-line examples as pasted: every ```sh block after an `<!-- example: cli` marker,
# one command at a time from the repository root. Only two things are substituted: build/release/cli/sluice by
# the executable under test, and /tmp/ by a scratch folder. A command that exits non-zero fails the test
# with its output.
# Usage: tests/cli/readme_cli_examples.sh SLUICE_EXE [README.md]
set -euo pipefail
exe=$(realpath "$1")
cd "$(dirname "$0")/../.."
readme=${2:-README.md}
scratch=$(mktemp -d /tmp/sluice-readme-cli.XXXXXX)
trap 'rm -rf "$scratch"' EXIT

# The commands of the marked blocks, continuation lines joined, one per line.
commands=$(awk '
    /<!-- example: cli/ { armed = 1; next }
    armed && /^```sh/ { inside = 1; armed = 0; next }
    inside && /^```/ { inside = 0; next }
    inside {
        if (sub(/\\$/, "")) { pending = pending $0; next }
        print pending $0; pending = ""
    }' "$readme")
[[ -n $commands ]] || { echo "no example: cli blocks in $readme" >&2; exit 1; }

count=0
while IFS= read -r line; do
    [[ -z ${line// /} ]] && continue
    cmd=${line//build\/release\/cli\/sluice/$exe}
    cmd=${cmd//\/tmp\//$scratch\/}
    count=$((count + 1))
    echo "== $line"
    if ! timeout 600 bash -c "$cmd" </dev/null >"$scratch/out.txt" 2>&1; then
        echo "FAILED: $line" >&2
        cat "$scratch/out.txt" >&2
        exit 1
    fi
    tail -n 3 "$scratch/out.txt"
done <<<"$commands"
echo "$count README command lines ran"
