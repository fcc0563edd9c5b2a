#!/bin/sh
# Fetches the official `openai` npm package (no dependencies) the server tests drive the server with, into a
# git-ignored cache folder. Idempotent and quiet when cached. Usage: fetch_npm.sh [CACHE_DIR]
set -eu
cache="${1:-$(dirname "$0")/../../.cache/npm}"
version=6.30.1
dir="$cache/openai-$version"
[ -f "$dir/index.js" ] && exit 0
mkdir -p "$cache"
tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
(cd "$tmp" && npm pack --silent "openai@$version" >/dev/null 2>npm.log) || {
    cat "$tmp/npm.log" >&2
    rm -rf "$tmp"
    echo "fetch_npm.sh: npm pack openai@$version failed" >&2
    exit 1
}
rm -rf "$dir"
mkdir -p "$dir"
tar xzf "$tmp"/*.tgz -C "$dir" --strip-components=1
rm -rf "$tmp"
[ -f "$dir/index.js" ] || { echo "fetch_npm.sh: openai has no index.js" >&2; exit 1; }
