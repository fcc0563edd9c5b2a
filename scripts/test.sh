#!/usr/bin/env bash
# Builds Sluice and runs every test: the unit and integration tests, then the fuzz corpus under sanitizers.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --test-dir build/release --output-on-failure -j"$(nproc)"

# Fuzz corpus: replay every committed GGUF input through the clang libFuzzer build under ASan and UBSan.
echo "replaying the GGUF fuzz corpus under sanitizers"
tests/fuzz/replay.sh
