#!/bin/sh
# The GPU stage in one go, as it ran for the committed models: the corpus from a saved KJV text, the tokenizer,
# then the MoE model and its dense draft trained side by side on the one GPU, then the draft's agreement with the
# model. Needs corpus.py, train.py and sluice-tiny-moe.jinja beside it, and the KJV text as `bible Gen1:1-Rev22:21`
# prints it: $KJV, default kjv.txt beside it (unpacked from kjv.txt.xz there if need be).
#   sh gpu_stage.sh DIR STEPS DRAFT_STEPS [MAX_SECONDS DRAFT_MAX_SECONDS]
# Writes DIR/corpus, DIR/tok, DIR/run (the model), DIR/draft, and the logs beside them.
set -eu
dir=$1 steps=$2 dsteps=$3 maxs=${4:-0} dmaxs=${5:-0}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"
kjv=${KJV:-$here/kjv.txt}
[ -f "$kjv" ] || python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
    "$here/kjv.txt.xz" "$kjv"
export PYTHONUNBUFFERED=1
python3 "$here/corpus.py" --out "$dir/corpus" --kjv "$kjv"
python3 "$here/train.py" --corpus "$dir/corpus" --out "$dir/tok" --tokenizer-only
# The draft starts once the model's training sequences are in the cache (it trains on the same ones).
python3 "$here/train.py" --corpus "$dir/corpus" --out "$dir/run" --tokenizer "$dir/tok/hf" --data-cache "$dir/data" \
    --steps "$steps" --batch 128 --max-train-seconds "$maxs" > "$dir/run.log" 2>&1 &
big=$!
while [ ! -f "$dir/data/done" ] && kill -0 $big 2>/dev/null; do sleep 2; done
python3 "$here/train.py" --arch draft --corpus "$dir/corpus" --out "$dir/draft" --tokenizer "$dir/tok/hf" \
    --data-cache "$dir/data" --steps "$dsteps" --batch 128 --max-train-seconds "$dmaxs" > "$dir/draft.log" 2>&1 &
draft=$!
wait $big || { echo "gpu_stage.sh: the model failed:"; tail -20 "$dir/run.log"; exit 1; }
wait $draft || { echo "gpu_stage.sh: the draft failed:"; tail -20 "$dir/draft.log"; exit 1; }
grep -v "^step" "$dir/run.log" | tail -12
grep -v "^step" "$dir/draft.log" | tail -8
for try in 1 2; do  # once an import of torch failed here with an MKL load error; a second try ran
    python3 "$here/train.py" --corpus "$dir/corpus" --out "$dir/draft" --agreement "$dir/run/hf" "$dir/draft/hf" \
        > "$dir/agreement.log" 2>&1 && break
done
tail -2 "$dir/agreement.log"
