#!/usr/bin/env python3
"""Writes the GGUF fuzz corpus: small malformed files (each must be rejected cleanly) and valid_* seeds.

Run from anywhere: tests/fuzz/make_corpus.py. Encodes GGUF independently of the C++ writer. Inputs found by
fuzzing (valid_fuzz_*, fuzz_*) are committed next to these and are left alone.
"""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
MAGIC = b"GGUF"
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)


def s(text):
    raw = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(raw)) + raw


def kv(key, vtype, payload):
    return s(key) + struct.pack("<I", vtype) + payload


def arr(elem, items_payload, count):
    return struct.pack("<IQ", elem, count) + items_payload


def tinfo(name, dims, ggml_type, offset):
    return s(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims) + \
        struct.pack("<IQ", ggml_type, offset)


def header(kvs, tensors, version=3, n_kv=None, n_tensors=None):
    n_kv = len(kvs) if n_kv is None else n_kv
    n_tensors = len(tensors) if n_tensors is None else n_tensors
    return MAGIC + struct.pack("<IQQ", version, n_tensors, n_kv) + b"".join(kvs) + b"".join(tensors)


def pad(data, alignment=32, extra=0):
    return data + b"\0" * ((-len(data)) % alignment + extra)


ARCH = kv("general.architecture", STR, s("qwen3moe"))
TOKENS = kv("tokenizer.ggml.tokens", ARR, arr(STR, s("a") + s("b") + s("\xc3\xa9"), 3))


def valid_files():
    f32_8 = tinfo("blk.0.attn_norm.weight", [8], 0, 0)
    q8 = tinfo("blk.0.ffn_up_exps.weight", [32, 2, 2], 8, 32)
    yield "valid_minimal", header([], [])
    yield "valid_v2_vocab", header([ARCH, TOKENS], [], version=2)
    yield "valid_two_tensors", pad(header([ARCH, kv("qwen3moe.block_count", U32, struct.pack("<I", 1))],
                                          [f32_8, q8]), extra=32 + 4 * 34 + 28)
    nested = arr(ARR, arr(I32, struct.pack("<ii", 1, -2), 2) + arr(STR, s("x"), 1), 2)
    every = [kv("t.u8", U8, b"\x01"), kv("t.i8", I8, b"\xff"), kv("t.u16", U16, b"\x01\x02"),
             kv("t.i16", I16, b"\x01\x80"), kv("t.i32", I32, b"\xff\xff\xff\xff"), kv("t.f32", F32, b"\0\0\x80\x3f"),
             kv("t.bool", BOOL, b"\x01"), kv("t.u64", U64, b"\xff" * 8), kv("t.i64", I64, b"\x80" * 8),
             kv("t.f64", F64, b"\0" * 8), kv("t.nested", ARR, nested)]
    yield "valid_every_type", header(every, [])
    yield "valid_alignment_64", pad(header([kv("general.alignment", U32, struct.pack("<I", 64))],
                                           [tinfo("w", [16], 1, 0)]), 64, 64)


def malformed_files():
    good_t = tinfo("w", [8], 0, 0)
    yield "empty", b""
    yield "bad_magic", b"GGML" + struct.pack("<IQQ", 3, 0, 0)
    yield "version_1", MAGIC + struct.pack("<III", 1, 0, 0)
    yield "version_99", MAGIC + struct.pack("<IQQ", 99, 0, 0)
    yield "big_endian", MAGIC + struct.pack(">IQQ", 3, 0, 0)
    yield "truncated_preamble", MAGIC + struct.pack("<IQ", 3, 0)
    yield "truncated_in_key", header([ARCH], [])[:-5]
    yield "truncated_in_tensor_info", header([], [good_t])[:-3]
    yield "huge_kv_count", header([], [], n_kv=1 << 62)
    yield "huge_tensor_count", header([], [], n_tensors=(1 << 64) - 1)
    yield "huge_string_length", MAGIC + struct.pack("<IQQ", 3, 0, 1) + s("k") + struct.pack("<IQ", STR, 1 << 63)
    yield "huge_key_length", MAGIC + struct.pack("<IQQQ", 3, 0, 1, (1 << 64) - 1)
    yield "huge_array_count", header([kv("tokenizer.ggml.tokens", ARR, arr(STR, b"", 10 ** 18))], [])
    yield "huge_u64_array_count", header([kv("k", ARR, arr(U64, b"", 1 << 61))], [])
    yield "array_elem_string_too_long", header([kv("k", ARR, arr(STR, s("ok") + struct.pack("<Q", 999), 2))], [])
    deep = b"".join(struct.pack("<IQ", ARR, 1) for _ in range(30)) + struct.pack("<IQ", U8, 0)
    yield "nested_arrays_too_deep", header([kv("k", ARR, deep)], [])
    yield "unknown_value_type", header([kv("k", 13, b"\0")], [])
    yield "unknown_array_elem_type", header([kv("k", ARR, arr(200, b"", 0))], [])
    yield "non_utf8_key", header([kv(b"general.\xff\xfe", U8, b"\0")], [])
    yield "overlong_utf8_key", header([kv(b"\xc0\xaf", U8, b"\0")], [])
    yield "empty_key", header([kv("", U8, b"\0")], [])
    yield "duplicate_key", header([ARCH, ARCH], [])
    yield "alignment_zero", header([kv("general.alignment", U32, struct.pack("<I", 0))], [])
    yield "alignment_not_pow2", header([kv("general.alignment", U32, struct.pack("<I", 48))], [])
    yield "alignment_wrong_type", header([kv("general.alignment", STR, s("32"))], [])
    yield "n_dims_5", pad(header([], [tinfo("w", [1, 1, 1, 1, 1], 0, 0)]), extra=32)
    yield "n_dims_huge", pad(header([], [s("w") + struct.pack("<I", 0xFFFFFFFF)]), extra=32)
    yield "zero_dim", pad(header([], [tinfo("w", [8, 0], 0, 0)]), extra=32)
    yield "dim_over_int64", pad(header([], [tinfo("w", [1 << 63], 0, 0)]), extra=32)
    yield "elements_overflow", pad(header([], [tinfo("w", [1 << 32, 1 << 32], 0, 0)]), extra=32)
    yield "bytes_overflow", pad(header([], [tinfo("w", [1 << 61, 2], 0, 0)]), extra=32)
    yield "unknown_tensor_type", pad(header([], [tinfo("w", [8], 77, 0)]), extra=32)
    yield "removed_tensor_type_4", pad(header([], [tinfo("w", [32], 4, 0)]), extra=32)
    yield "row_not_block_multiple", pad(header([], [tinfo("w", [100], 12, 0)]), extra=256)
    yield "misaligned_offset", pad(header([], [tinfo("w", [8], 0, 16)]), extra=64)
    yield "offset_past_end", pad(header([], [tinfo("w", [8], 0, 1 << 40)]), extra=32)
    yield "offset_plus_size_wraps", pad(header([], [tinfo("w", [8], 0, (1 << 64) - 32)]), extra=32)
    yield "data_past_end", pad(header([], [tinfo("w", [64], 0, 0)]), extra=32)
    yield "data_section_missing", header([], [good_t])
    yield "overlapping_tensors", pad(header([], [tinfo("a", [16], 0, 0), tinfo("b", [8], 0, 32)]), extra=128)
    yield "duplicate_tensor_names", pad(header([], [tinfo("a", [8], 0, 0), tinfo("a", [8], 0, 32)]), extra=64)
    yield "empty_tensor_name", pad(header([], [tinfo("", [8], 0, 0)]), extra=32)
    yield "non_utf8_tensor_name", pad(header([], [tinfo(b"w\xff", [8], 0, 0)]), extra=32)


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, data in list(valid_files()) + list(malformed_files()):
        with open(os.path.join(OUT, name + ".gguf"), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
