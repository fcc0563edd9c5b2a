#!/bin/sh
# Sluice's tiny MoE model from nothing, in one command: corpus, tokenizer, training, evaluation, installation
# into the repository and conversion to the shipped Q8_0 GGUF. Deterministic given the seed.
#
#   tools/train/train.sh [STAGE]     STAGE: all (default), corpus, train, install
#
# corpus:  needs Debian's bible-kjv package (`apt-get install -y bible-kjv`); writes build/train/corpus.
# train:   needs one CUDA GPU with PyTorch, transformers and tokenizers (about 14 minutes on an H200, 10 of them
#          training the model while its draft trains beside it); runs gpu_stage.sh, which writes
#          build/train/run (checkpoint, metrics.json, reference logits) and build/train/draft.
# install: copies the run into models/ and tests/fixtures/ and converts models/sluice-tiny-moe.gguf and
#          models/sluice-tiny-draft.gguf (Q8_0) with the sluice executable ($SLUICE, default
#          build/release/cli/sluice).
# The stages can run on different machines: carry build/train/corpus to the GPU and build/train/run back.
set -eu
cd "$(dirname "$0")/../.."
stage="${1:-all}"
seed="${SEED:-1}"
corpus=build/train/corpus
run=build/train/run
draft=build/train/draft
sluice="${SLUICE:-build/release/cli/sluice}"

if [ "$stage" = all ] || [ "$stage" = corpus ]; then
    command -v bible >/dev/null || { echo "train.sh: install Debian's bible-kjv package first" >&2; exit 1; }
    python3 tools/train/corpus.py --out "$corpus" --seed "$seed"
fi
if [ "$stage" = all ] || [ "$stage" = train ]; then
    [ "$seed" = 1 ] || { echo "train.sh: gpu_stage.sh trains seed 1 only" >&2; exit 1; }
    rm -rf "$run" "$draft" build/train/data build/train/tok
    KJV="$corpus/kjv.txt" sh tools/train/gpu_stage.sh build/train 4000 4000
    [ -f "$run/metrics.json" ] && [ -f "$draft/agreement.json" ] || { echo "train.sh: training failed" >&2; exit 1; }
fi
if [ "$stage" = all ] || [ "$stage" = install ]; then
    python3 tools/train/install.py --run "$run" --corpus "$corpus" --draft "$draft"
    "$sluice" convert models/sluice-tiny-moe -o models/sluice-tiny-moe.gguf --type q8_0 --name sluice-tiny-moe
    "$sluice" convert "$draft/hf" -o models/sluice-tiny-draft.gguf --type q8_0 --name sluice-tiny-draft
fi
