# Sourced by the streaming bench scripts. fio_gbps FILE BYTES DEPTH SECONDS prints fio's rate in GB/s for random
# O_DIRECT io_uring reads of BYTES at queue depth DEPTH over FILE for SECONDS; FIO_OPTS adds fio options (e.g.
# --fixedbufs=1).
fio_gbps() {
    # shellcheck disable=SC2086 # FIO_OPTS holds several options
    fio --name=randread --filename="$1" --readonly --ioengine=io_uring --direct=1 --rw=randread --bs="$2" \
        --iodepth="$3" --runtime="$4" --time_based --norandommap --randrepeat=0 --numjobs=1 ${FIO_OPTS:-} \
        --output-format=json 2>/dev/null | jq '.jobs[0].read.bw_bytes / 1e9'
}
