#!/usr/bin/env bash
# llama.cpp (mmap, its default load mode, weights not repacked so they stay in the mapping) and Sluice (stream_bench)
# decoding the same GGUF file, each inside a cgroup v1 memory cgroup limited to B GiB (page cache included), same
# threads, alternating llama.cpp / Sluice within each round because this host's speed drifts. Per run: decode
# tokens/s, bytes the process read from disk (read_bytes of /proc/PID/io: page-cache fills, mmap faults and O_DIRECT
# reads alike, read from the wrapper shell once the engine is reaped), peak memory of the cgroup
# (memory.max_usage_in_bytes, page cache included) and how often it hit the limit (memory.failcnt). Each engine runs a short and a long generation
# (SHORT and SHORT + TOKENS tokens) from a cold page cache; bytes read per decode token = the difference of the two
# runs' reads / TOKENS, so loading and the prompt cancel out.
#
# Before measuring, the script checks that the limit is applied: the value reads back, and reading more of the
# model file than the limit inside such a cgroup never charges it past the limit. Every cgroup it creates is
# removed on exit (also on error or Ctrl-C).
#
# Usage: bench/streaming/vs_llamacpp_cgroup.sh MODEL.gguf LLAMA_COMPLETION [budget_gib=4] [threads=2] [tokens=32]
#        [rounds=2]
# LLAMA_COMPLETION: llama.cpp's llama-completion (built CPU only; any build with --no-repack and --load-mode).
# Environment: STREAM_BENCH (default build/release/bench/streaming/stream_bench), SHORT (default 4),
# SLUICE_MARGIN_MIB (default 256: Sluice's --memory-budget is the limit minus this, for its binary, libraries and
# the page cache of its own reads), ROUTING (a recording for Sluice to replay; llama.cpp cannot, so leave it unset
# for a like-for-like run), POLICY (Sluice's replacement policy, default lru). Needs root, the cgroup v1 memory
# hierarchy, jq and python3. (The blkio hierarchy's counters stayed at zero on this VM's virtio disk, so the bytes
# come from the process's own I/O accounting.)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
model=${1:?model}
llama=${2:?llama-completion binary}
budget_gib=${3:-4}
threads=${4:-2}
tokens=${5:-32}
rounds=${6:-2}
short=${SHORT:-4}
long=$((short + tokens))
stream_bench=${STREAM_BENCH:-$root/build/release/bench/streaming/stream_bench}
margin_mib=${SLUICE_MARGIN_MIB:-256}
mem_root=/sys/fs/cgroup/memory

die() { echo "vs_llamacpp_cgroup: $*" >&2; exit 1; }
[[ $(id -u) == 0 ]] || die "needs root (to create cgroups)"
[[ -w $mem_root && -f $mem_root/memory.limit_in_bytes ]] || die "no cgroup v1 memory hierarchy at $mem_root"
[[ -x $llama ]] || die "$llama is not executable"
[[ -x $stream_bench ]] || die "$stream_bench is not built (cmake --build build/release --target stream_bench)"
[[ -r $model ]] || die "cannot read $model"
command -v jq >/dev/null || die "needs jq"
limit=$(python3 -c "print(int(float('$budget_gib') * (1 << 30)))")
sluice_budget=$((limit - margin_mib * 1024 * 1024))
((sluice_budget > 0)) || die "budget ${budget_gib} GiB leaves nothing after the ${margin_mib} MiB margin"

# One memory cgroup per run, so its counters start at zero; all of them removed on exit.
created=()
tmp=$(mktemp -d /tmp/vs_llamacpp_cgroup.XXXXXX)
cleanup() {
    for g in "${created[@]}"; do
        if [[ -d $mem_root/$g ]]; then
            # Any process still inside is one this script started; move it out before removing the group.
            while read -r pid; do echo "$pid" >"$mem_root/cgroup.procs" 2>/dev/null || true; done <"$mem_root/$g/cgroup.procs"
            rmdir "$mem_root/$g" 2>/dev/null || echo "vs_llamacpp_cgroup: could not remove $mem_root/$g" >&2
        fi
    done
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

seq_no=0
make_cgroup() { # a new group limited to $limit, its name in $cg
    cg="sluice-vs-llama-$$-$((seq_no++))"
    mkdir "$mem_root/$cg"
    created+=("$cg")
    echo "$limit" >"$mem_root/$cg/memory.limit_in_bytes"
    local applied
    applied=$(cat "$mem_root/$cg/memory.limit_in_bytes")
    # The kernel rounds the limit down to whole pages.
    ((applied <= limit && applied > limit - 65536)) || die "memory.limit_in_bytes reads back $applied, not $limit"
}

# Runs "$@" inside group $1 with stdout, stderr and the bytes it read from disk in files $2.out, $2.err, $2.io;
# returns its status. The wrapper shell joins the group, runs the command as its child and, once it is reaped (its
# I/O counts then add to the shell's), writes its own read_bytes.
run_in() {
    local group=$1 out=$2
    shift 2
    sh -c 'echo $$ > "$1/cgroup.procs" || exit 125; io=$2; shift 2; "$@"; rc=$?
           awk "/^read_bytes:/ { print \$2 }" /proc/$$/io > "$io"; exit $rc' sh \
        "$mem_root/$group" "$out.io" "$@" >"$out.out" 2>"$out.err" </dev/null
}

read_bytes() { cat "$1.io" 2>/dev/null || echo 0; }
peak() { cat "$mem_root/$1/memory.max_usage_in_bytes"; }
failcnt() { cat "$mem_root/$1/memory.failcnt"; }
drop_cache() { # the model file's clean pages leave the page cache: every run starts cold
    python3 -c "import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)" \
        "$(readlink -f "$model")"
}

# 1. The limit is applied: read limit + 512 MiB of the model through the page cache inside a group.
make_cgroup
drop_cache
run_in "$cg" "$tmp/check" dd if="$model" of=/dev/null bs=1M count=$((limit / 1048576 + 512)) ||
    die "the limit check's dd failed: $(cat "$tmp/check.err")"
check_peak=$(peak "$cg")
check_read=$(read_bytes "$tmp/check")
((check_peak <= limit)) || die "limit not applied: a group limited to $limit bytes peaked at $check_peak"
((check_read > limit)) || die "the limit check read only $check_read bytes (is the model smaller than the limit?)"
echo "limit check: read $((check_read >> 20)) MiB of the model inside a ${budget_gib} GiB group, peak" \
    "$((check_peak >> 20)) MiB <= limit $((limit >> 20)) MiB, failcnt $(failcnt "$cg")"

# 2. The runs. Each prints: engine round n tok/s read_bytes peak_bytes failcnt status.
results=()
run_engine() { # engine round n
    local engine=$1 round=$2 n=$3 out status tps
    make_cgroup
    out=$tmp/$engine.$round.$n
    drop_cache
    status=0
    if [[ $engine == llama.cpp ]]; then
        run_in "$cg" "$out" "$llama" -m "$model" --no-repack --load-mode mmap -t "$threads" -c 512 -no-cnv \
            -p "Hello" -n "$n" --ignore-eos --temp 1 -s 1 || status=$?
        # "common_perf_print:        eval time =  2717.48 ms /  8 runs" (not the prompt eval line)
        tps=$(sed -nE 's/.*: +eval time = +([0-9.]+) ms \/ +([0-9]+) runs.*/\2 \1/p' "$out.err" |
            awk '{ if ($2 > 0) printf "%.3f", $1 * 1000 / $2; else print 0 }')
    else
        run_in "$cg" "$out" "$stream_bench" "$model" "$sluice_budget" $((n - 1)) 1 "$threads" 1 "${POLICY:-lru}" \
            ${ROUTING:+--routing "$ROUTING"} || status=$?
        tps=$(jq -r '.decode_tokens_per_s' "$out.out" 2>/dev/null || echo 0)
    fi
    [[ -n $tps ]] || tps=0
    local line="$engine $round $n $tps $(read_bytes "$out") $(peak "$cg") $(failcnt "$cg") $status"
    echo "$line"
    results+=("$line")
    if ((status != 0)); then
        echo "  ($engine exited with status $status; last lines of its stderr:)" >&2
        tail -n 3 "$out.err" >&2
    fi
    rm -f "$out.out" "$out.err" "$out.io"
}

echo "model $model, limit ${budget_gib} GiB ($limit bytes), Sluice --memory-budget $sluice_budget, threads $threads," \
    "$short and $long generated tokens, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "engine round tokens decode_tok_per_s read_bytes peak_bytes failcnt status"
for round in $(seq 1 "$rounds"); do
    for n in "$short" "$long"; do
        run_engine llama.cpp "$round" "$n"
        run_engine sluice "$round" "$n"
    done
done

# 3. Per round and engine: decode tokens/s of the long run, bytes read per decode token from the difference.
echo
echo "summary (per round; bytes/token = (read at $long tokens - read at $short tokens) / $tokens):"
printf '%s\n' "${results[@]}" | awk -v short="$short" -v long="$long" -v tokens="$tokens" '
    { key = $1 " " $2; if ($3 == short) rs[key] = $5; else { rl[key] = $5; tps[key] = $4; pk[key] = $6; st[key] = $8 } }
    END {
        for (key in rl) {
            split(key, k, " ")
            printf "round %s %-9s: %7.3f tok/s  %8.1f MB read/token  peak %7.1f MiB  status %s", k[2], k[1],
                tps[key], (rl[key] - rs[key]) / tokens / 1e6, pk[key] / 1048576, st[key]
            if (k[1] == "sluice" && tps["llama.cpp " k[2]] > 0)
                printf "  (%.2fx llama.cpp tok/s)", tps[key] / tps["llama.cpp " k[2]]
            printf "\n"
        }
    }' | sort
