#!/usr/bin/env bash
# Builds Sluice and runs its main job: serving a model over the OpenAI-compatible API. Without arguments it
# serves the bundled model (models/sluice-tiny-moe.gguf) on http://127.0.0.1:8080; arguments are passed to
# `sluice serve` (e.g. scripts/run.sh -m MODEL.gguf --memory-budget 8GiB --port 9000). Ctrl-C stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh >/dev/null
if [[ $# -eq 0 ]]; then
    set -- --port 8080
fi
exec build/release/cli/sluice serve "$@"
