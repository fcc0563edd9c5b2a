#!/usr/bin/env bash
# Builds Sluice and runs every test through ctest (unit, integration, and the fuzz corpus under sanitizers).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --test-dir build/release --output-on-failure -j"$(nproc)"

