#!/usr/bin/env bash
# Builds Sluice and runs its main job: generate text with a model. Without arguments it writes a tiny
# random-weight qwen3moe model (once) and streams a generation from it; with arguments they are passed to
# `sluice run` (e.g. scripts/run.sh -m MODEL.gguf -p "Hello" -n 64).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh >/dev/null
sluice=build/release/cli/sluice
if [[ $# -gt 0 ]]; then
    exec "$sluice" run "$@"
fi
model=build/release/demo-qwen3moe.gguf
if [[ ! -f "$model" ]]; then
    "$sluice" mkmodel -o "$model" --preset tiny-qwen3moe --type q8_0 --seed 1 -q
fi
# Random weights: the text is gibberish, but every step (tokenizer, chat template, forward, sampler) is real.
exec "$sluice" run -m "$model" -p "Tell me about rivers." --chat -n 32 --seed 7
