#!/usr/bin/env bash
# Installs missing packages, then configures and builds the Release tree in build/release.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
if [[ ! -f build/release/build.ninja ]]; then
    cmake --preset release >/dev/null
fi
cmake --build build/release -- -j"$(nproc)"
