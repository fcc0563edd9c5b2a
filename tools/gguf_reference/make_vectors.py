#!/usr/bin/env python3
"""Writes dequantisation reference vectors made with llama.cpp's gguf-py into tests/kernels/fixtures/gguf_reference/.

Each file `<type>.bin` holds blocks of one GGUF weight type and the float32 values gguf-py's `quants.dequantize`
gives for them. The blocks are random payloads with ordinary scales, then edge cases: NaN, +-Inf, +-0, subnormal
and largest f16 scales (E8M0 0, 1, 254, 255 for MXFP4), every payload byte 0x00 or 0xff (the smallest and largest
grid indices, signs and scales), and blocks of fully random bytes. tests/kernels/gguf_reference_test.cpp checks
Sluice's dequantisation against them bit for bit at every ISA level.

File layout, little-endian: "SLQR", u32 type id, u32 block count, u32 block bytes, u32 values per block, the
blocks, then the values as float32.

Usage (a Python with numpy; gguf-py extracted from a llama.cpp snapshot into .cache, never committed):
    git -C LLAMA_CPP_GIT archive HEAD gguf-py/gguf | tar -x -C .cache/gguf-py --strip-components=1
    python3 tools/gguf_reference/make_vectors.py .cache/gguf-py tests/kernels/fixtures/gguf_reference
"""
import os
import struct
import sys

import numpy as np

sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else ".cache/gguf-py")
from gguf import quants  # noqa: E402
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType as T  # noqa: E402

# Byte offsets of the f16 scale fields of one block ("iq1_m" and "e8m0" mark the two special layouts).
SCALES = {
    T.F16: [], T.BF16: [],
    T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2], T.Q8_0: [0],
    T.Q2_K: [80, 82], T.Q3_K: [108], T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208],
    T.IQ2_XXS: [0], T.IQ2_XS: [0], T.IQ2_S: [0], T.IQ3_XXS: [0], T.IQ3_S: [0], T.IQ1_S: [0], T.IQ1_M: "iq1_m",
    T.IQ4_NL: [0], T.IQ4_XS: [0], T.MXFP4: "e8m0", T.TQ1_0: [52], T.TQ2_0: [64],
}
SPECIAL_F16 = [0x7E00, 0x7C00, 0xFC00, 0x0000, 0x8000, 0x0001, 0x7BFF]
SPECIAL_E8M0 = [0, 1, 2, 254, 255]
RANDOM_BLOCKS = 8
FLOAT_VALUES = 256  # values per file for the float types (one "block" each)


def set_scale(block, qtype, h=None, e=None):
    layout = SCALES[qtype]
    if layout == "e8m0":
        block[0] = e
    elif layout == "iq1_m":
        words = block[48:56].view(np.uint16)
        for i in range(4):
            words[i] = (int(words[i]) & 0x0FFF) | (((h >> (4 * i)) & 0xF) << 12)
    else:
        for off in layout:
            block[off:off + 2] = np.frombuffer(struct.pack("<H", h), dtype=np.uint8)


def ordinary_scale(rng):
    return int(np.float16(rng.uniform(0.001, 0.1)).view(np.uint16))


def make_blocks(qtype, rng):
    _, size = GGML_QUANT_SIZES[qtype]
    if qtype in (T.F16, T.BF16):
        raw = rng.integers(0, 256, (FLOAT_VALUES, size), dtype=np.uint8)
        raw[:8] = np.frombuffer(struct.pack("<8H", 0x7E00, 0x7C00, 0xFC00, 0, 0x8000, 1, 0x7BFF, 0xFFFF),
                                dtype=np.uint8).reshape(8, 2)
        return raw
    blocks = []
    for _ in range(RANDOM_BLOCKS):
        b = rng.integers(0, 256, size, dtype=np.uint8)
        set_scale(b, qtype, h=ordinary_scale(rng), e=int(rng.integers(116, 125)))
        blocks.append(b)
    specials = SPECIAL_E8M0 if SCALES[qtype] == "e8m0" else SPECIAL_F16
    for s in specials:
        b = rng.integers(0, 256, size, dtype=np.uint8)
        set_scale(b, qtype, h=s, e=s)
        blocks.append(b)
    for fill in (0x00, 0xFF):
        b = np.full(size, fill, dtype=np.uint8)
        set_scale(b, qtype, h=ordinary_scale(rng), e=120)
        blocks.append(b)
    for _ in range(3):
        blocks.append(rng.integers(0, 256, size, dtype=np.uint8))
    return np.stack(blocks)


def main():
    out_dir = sys.argv[2] if len(sys.argv) > 2 else "tests/kernels/fixtures/gguf_reference"
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.default_rng(20261124)
    for qtype in SCALES:
        elems, size = GGML_QUANT_SIZES[qtype]
        blocks = make_blocks(qtype, rng)
        with np.errstate(all="ignore"):
            values = quants.dequantize(blocks.reshape(-1), qtype).astype(np.float32).reshape(-1)
        assert values.size == blocks.shape[0] * elems
        with open(os.path.join(out_dir, qtype.name.lower() + ".bin"), "wb") as f:
            f.write(b"SLQR" + struct.pack("<4I", int(qtype), blocks.shape[0], size, elems))
            f.write(blocks.tobytes())
            f.write(values.astype("<f4").tobytes())


if __name__ == "__main__":
    main()
