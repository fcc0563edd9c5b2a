# Sourced by the server benchmarks (load.sh, soak.sh): start_server SLUICE [serve flags...] starts
# `sluice serve --port 0` with its log in a temporary file, waits until the model is loaded, and sets
# `pid`, `port` and `log` (the exit trap kills the server and removes the log). The caller stops it with SIGTERM.
start_server() {
    local sluice=$1
    shift
    log=$(mktemp)
    "$sluice" serve --port 0 "$@" 2>"$log" &
    pid=$!
    trap 'kill "$pid" 2>/dev/null || true; rm -f "$log"' EXIT
    for _ in $(seq 600); do
        grep -q ' loaded in ' "$log" && break
        kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; exit 1; }
        sleep 0.1
    done
    port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$log" | head -1)
}
