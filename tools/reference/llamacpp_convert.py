#!/usr/bin/env python3
"""Run llama.cpp's convert_hf_to_gguf.py on a reference checkpoint, so tests can load the file llama.cpp writes.

llama.cpp names a byte-level BPE tokenizer's pre-tokenizer by hashing how it encodes a fixed text and refuses
hashes it does not list; the reference fixtures share a small tokenizer of their own, so this wrapper tells the
converter which name to write (the one the real model family uses) instead of hashing. Nothing else changes.

Usage: llamacpp_convert.py LLAMA_CPP_DIR CHECKPOINT OUT.gguf OUTTYPE [--pre NAME]
LLAMA_CPP_DIR holds convert_hf_to_gguf.py, conversion/ and gguf-py/ of a llama.cpp checkout; CHECKPOINT needs
tokenizer.json and tokenizer_config.json beside config.json.
"""

import argparse
import sys
from pathlib import Path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("llama_cpp", type=Path)
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("outtype", choices=["f32", "f16", "bf16", "q8_0"])
    parser.add_argument("--pre", default="gpt-4o", help="tokenizer.ggml.pre to write (default: gpt-4o, gpt-oss's)")
    args = parser.parse_args()
    sys.path.insert(0, str(args.llama_cpp))
    sys.path.insert(1, str(args.llama_cpp / "gguf-py"))
    import conversion.base  # noqa: E402  (llama.cpp's package, found through sys.path)

    conversion.base.TextModel.get_vocab_base_pre = lambda self, tokenizer: args.pre
    import convert_hf_to_gguf  # noqa: E402

    sys.argv = ["convert_hf_to_gguf.py", str(args.checkpoint), "--outfile", str(args.out), "--outtype", args.outtype]
    convert_hf_to_gguf.main()


if __name__ == "__main__":
    main()
