#!/usr/bin/env bash
# Builds Sluice and runs its main job. For now: write a small MoE-shaped GGUF file and inspect it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh >/dev/null
build/release/examples/write_gguf build/release/demo.gguf
exec build/release/cli/sluice inspect build/release/demo.gguf "$@"
