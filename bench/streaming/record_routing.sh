#!/usr/bin/env bash
# Records a model's own routing (for a random-weight file: random-weight routing) over several prompts, one
# `sluice run --record-routing` each (greedy, end-of-generation ignored), and joins them into one recording whose
# records are grouped by prompt, as bench/streaming/batch_union.sh expects (its streams start at evenly spaced
# records). The prompts are bench/server/batch.mjs's eight.
#
# Usage: bench/streaming/record_routing.sh MODEL.gguf OUT.routing [serve-style flags, e.g. --memory-budget 4GiB]
# Env: TOKENS (tokens generated per prompt, 48), THREADS (2), SLUICE (build/release/cli/sluice).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
model=${1:?model}
out=${2:?output recording}
shift 2
sluice=${SLUICE:-$root/build/release/cli/sluice}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prompts=('The history of the' 'In the beginning' 'A short story about' 'The quick brown fox' 'Once upon a time'
         'The river flows' 'Numbers and letters' 'Under the old bridge')
for i in "${!prompts[@]}"; do
    "$sluice" run -m "$model" -p "${prompts[$i]}" -n "${TOKENS:-48}" --temp 0 --ignore-eos --threads "${THREADS:-2}" \
        --record-routing "$tmp/$i.routing" "$@" >/dev/null 2>"$tmp/$i.log" || { cat "$tmp/$i.log" >&2; exit 1; }
done
# Join: the first file's header (its token count rewritten), then every file's records in prompt order
# (docs/ROUTING.md: header_bytes at offset 12, the token count a u64 at offset 32).
python3 - "$out" "$tmp"/{0..7}.routing <<'PY'
import struct, sys
out, parts = sys.argv[1], sys.argv[2:]
header, records, tokens = None, [], 0
for p in parts:
    b = open(p, 'rb').read()
    header_bytes = struct.unpack_from('<I', b, 12)[0]
    if header is None:
        header = bytearray(b[:header_bytes])
    records.append(b[header_bytes:])
    tokens += struct.unpack_from('<Q', b, 32)[0]
struct.pack_into('<Q', header, 32, tokens)
open(out, 'wb').write(bytes(header) + b''.join(records))
print(f'{out}: {tokens} tokens from {len(parts)} prompts', file=sys.stderr)
PY
