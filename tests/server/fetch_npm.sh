#!/bin/sh
# Fetches the npm packages (no runtime dependencies) the server tests drive the server with: the official
# `openai` and `@anthropic-ai/sdk` clients and the `ws` WebSocket client, into a git-ignored cache folder.
# Idempotent and quiet when cached.
# Usage: fetch_npm.sh [CACHE_DIR]
set -eu
cache="${1:-$(dirname "$0")/../../.cache/npm}"

# fetch NAME VERSION: unpacks NAME@VERSION into $cache/NAME-VERSION unless its index.js is there.
fetch() {
    dir="$cache/$1-$2"
    [ -f "$dir/index.js" ] && return 0
    mkdir -p "$cache"
    tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
    (cd "$tmp" && npm pack --silent "$1@$2" >/dev/null 2>npm.log) || {
        cat "$tmp/npm.log" >&2
        rm -rf "$tmp"
        echo "fetch_npm.sh: npm pack $1@$2 failed" >&2
        exit 1
    }
    rm -rf "$dir"
    mkdir -p "$dir"
    tar xzf "$tmp"/*.tgz -C "$dir" --strip-components=1
    rm -rf "$tmp"
    [ -f "$dir/index.js" ] || { echo "fetch_npm.sh: $1 has no index.js" >&2; exit 1; }
}

fetch openai 6.30.1
fetch ws 8.18.3
fetch @anthropic-ai/sdk 0.94.0
