#!/usr/bin/env bash
# Random-read throughput of io::reader (bench_reader) against fio on the same file, block sizes and depths.
#
# Usage: bench/io/reader_vs_fio.sh [path/to/bench_reader]
# Env: BENCH_FILE (default .cache/bench/reader_4g.bin), BENCH_SIZE_GIB (4), BENCH_SECONDS (1 per run),
#      BENCH_SIZES ("256K 1M 4M"), BENCH_DEPTHS ("1 4 16 32 64"), BENCH_REPEAT (5).
# Each cell runs fio and bench_reader alternately BENCH_REPEAT times and reports each tool's median run: the
# shared virtual disk drifts a lot from second to second, and alternating exposes both tools to the same drift. Prints a Markdown table: size, depth, fio GB/s, sluice GB/s, ratio
# (sluice / fio). Needs fio and jq.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-$root/build/release/bench/io/bench_reader}
file=${BENCH_FILE:-$root/.cache/bench/reader_4g.bin}
size_gib=${BENCH_SIZE_GIB:-4}
seconds=${BENCH_SECONDS:-1}
sizes=${BENCH_SIZES:-"256K 1M 4M"}
depths=${BENCH_DEPTHS:-"1 4 16 32 64"}
repeat=${BENCH_REPEAT:-5}

for tool in fio jq "$bin"; do
    command -v "$tool" >/dev/null || { echo "missing: $tool" >&2; exit 1; }
done

# The test file: random data, written once and reused (the folder is git-ignored).
want_bytes=$((size_gib * 1024 * 1024 * 1024))
if [[ ! -f $file || $(stat -c %s "$file") -ne $want_bytes ]]; then
    mkdir -p "$(dirname "$file")"
    echo "creating $file ($size_gib GiB of random data)" >&2
    dd if=/dev/urandom of="$file" bs=16M count=$((size_gib * 64)) iflag=fullblock oflag=direct status=none
fi

fio_gbps() { # bs depth
    fio --name=randread --filename="$file" --ioengine=io_uring --direct=1 --rw=randread --bs="$1" \
        --iodepth="$2" --runtime="$seconds" --time_based --norandommap --randrepeat=0 --numjobs=1 \
        --output-format=json | jq '.jobs[0].read.bw_bytes / 1e9'
}

sluice_gbps() { # bs depth
    "$bin" --file "$file" --bs "$1" --depth "$2" --seconds "$seconds" | jq '.gbps'
}

median() { # values...
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}

echo "| size | depth | fio GB/s | sluice GB/s | ratio |"
echo "|---:|---:|---:|---:|---:|"
for bs in $sizes; do
    for depth in $depths; do
        fio_runs=()
        sluice_runs=()
        for ((i = 0; i < repeat; i++)); do
            fio_runs+=("$(fio_gbps "$bs" "$depth")")
            sluice_runs+=("$(sluice_gbps "$bs" "$depth")")
        done
        f=$(median "${fio_runs[@]}")
        s=$(median "${sluice_runs[@]}")
        awk -v bs="$bs" -v d="$depth" -v f="$f" -v s="$s" \
            'BEGIN { printf "| %s | %d | %.3f | %.3f | %.2f |\n", bs, d, f, s, (f > 0 ? s / f : 0) }'
    done
done
