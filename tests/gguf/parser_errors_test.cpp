// Malformed headers: each one is rejected with an error naming the field that is wrong.
#include "runtime/gguf/parser.hpp"
#include "tests/gguf/test_util.hpp"

#include <gtest/gtest.h>

namespace sluice::gguf {
namespace {

using testing::byte_builder;

std::string parse_error(const byte_builder& b) {
    auto r = parse_header(b.bytes());
    return r ? std::string("(parsed)") : r.error().message;
}

/// A header with one kv (general.architecture) and one f32 tensor of `n` values at `offset`.
byte_builder one_tensor(std::uint64_t n, std::uint64_t offset, std::uint32_t type = 0, std::uint32_t n_dims = 1) {
    byte_builder b;
    b.preamble(3, 1, 1).str("general.architecture").u32(8).str("x");
    b.str("blk.3.ffn_up_exps").u32(n_dims);
    for (std::uint32_t d = 0; d < n_dims; ++d) {
        b.u64(n);
    }
    b.u32(type).u64(offset);
    return b;
}

TEST(gguf_parser, valid_minimal_file_parses) {
    auto b = one_tensor(8, 0);
    b.zeros(32 - b.size() % 32 + 32);
    auto h = parse_header(b.bytes());
    ASSERT_TRUE(h) << h.error().message;
    EXPECT_EQ(h->tensors.size(), 1U);
    EXPECT_EQ(h->tensors[0].offset, h->data_offset);
    EXPECT_EQ(h->data_offset % 32, 0U);
}

TEST(gguf_parser, version_1_and_bad_magic_are_rejected_clearly) {
    byte_builder v1;
    v1.preamble(1, 0, 0);
    EXPECT_EQ(parse_error(v1), "GGUF version 1 is not supported (versions 2 and 3 are)");
    byte_builder magic;
    magic.raw("GGML").u32(3).u64(0).u64(0);
    EXPECT_EQ(parse_error(magic), "not a GGUF file (bad magic)");
    byte_builder v2;
    v2.preamble(2, 0, 0);
    EXPECT_EQ(parse_error(v2), "(parsed)");
}

TEST(gguf_parser, truncation_reports_offset) {
    byte_builder b;
    b.u32(0x46554747).u32(3).u32(0);
    EXPECT_EQ(parse_error(b), "unexpected end of file at offset 8 (need 8 bytes, 4 left)");
}

TEST(gguf_parser, huge_counts_and_lengths_are_rejected_before_allocating) {
    byte_builder kv_count;
    kv_count.preamble(3, 0, 1ULL << 60);
    EXPECT_EQ(parse_error(kv_count), "metadata count 1152921504606846976 exceeds remaining bytes");
    byte_builder arr;
    arr.preamble(3, 0, 1).str("tokenizer.ggml.tokens").u32(9).u32(8).u64(1000000000000000000ULL);
    EXPECT_EQ(parse_error(arr).rfind("metadata key tokenizer.ggml.tokens: array count 1000000000000000000 exceeds "
                                     "remaining bytes",
                                     0),
              0U);
    byte_builder str;
    str.preamble(3, 0, 1).str("k").u32(8).u64(~0ULL);
    EXPECT_EQ(parse_error(str), "metadata key k: string length 18446744073709551615 exceeds remaining bytes (0 left)");
    byte_builder elem;
    elem.preamble(3, 0, 1).str("k").u32(9).u32(8).u64(2).str("ok").u64(1000);
    EXPECT_EQ(parse_error(elem), "metadata key k: element 1: string length 1000 exceeds remaining bytes (0 left)");
}

TEST(gguf_parser, keys_must_be_utf8_unique_and_typed) {
    byte_builder bad_utf8;
    bad_utf8.preamble(3, 0, 1).str("a\xFF").u32(0).u8(1);
    EXPECT_EQ(parse_error(bad_utf8), "metadata entry #0: key is not valid UTF-8");
    byte_builder dup;
    dup.preamble(3, 0, 2).str("k").u32(0).u8(1).str("k").u32(0).u8(2);
    EXPECT_EQ(parse_error(dup), "metadata key k: duplicate key");
    byte_builder type;
    type.preamble(3, 0, 1).str("k").u32(13).u8(0);
    EXPECT_EQ(parse_error(type), "metadata key k: unknown value type 13");
    byte_builder deep;
    deep.preamble(3, 0, 1).str("k").u32(9);
    for (int i = 0; i < 40; ++i) {
        deep.u32(9).u64(1);
    }
    deep.u32(0).u64(0);
    EXPECT_EQ(parse_error(deep).find("arrays nested deeper than 16") != std::string::npos, true);
}

TEST(gguf_parser, alignment_must_be_a_power_of_two) {
    byte_builder b;
    b.preamble(3, 0, 1).str("general.alignment").u32(4).u32(48);
    EXPECT_EQ(parse_error(b), "metadata key general.alignment: 48 is not a non-zero power of two");
    byte_builder zero;
    zero.preamble(3, 0, 1).str("general.alignment").u32(4).u32(0);
    EXPECT_EQ(parse_error(zero), "metadata key general.alignment: 0 is not a non-zero power of two");
}

TEST(gguf_parser, tensor_shapes_types_and_offsets_are_checked) {
    EXPECT_EQ(parse_error(one_tensor(8, 0, 0, 5)), "tensor blk.3.ffn_up_exps: n_dims 5 exceeds 4");
    EXPECT_EQ(parse_error(one_tensor(0, 0)), "tensor blk.3.ffn_up_exps: dimension 0 is 0 (must be in 1..2^63-1)");
    EXPECT_EQ(parse_error(one_tensor(1ULL << 32, 0, 0, 2)),
              "tensor blk.3.ffn_up_exps: element count of shape [4294967296, 4294967296] overflows");
    EXPECT_EQ(parse_error(one_tensor(8, 0, 77)),
              "unsupported type 77 (not a GGUF type id) in tensor blk.3.ffn_up_exps");
    EXPECT_EQ(parse_error(one_tensor(8, 0, 31)),
              "unsupported type 31 (q4_0_4_4, removed from GGUF by llama.cpp: convert the model again) in tensor "
              "blk.3.ffn_up_exps");
    EXPECT_EQ(parse_error(one_tensor(100, 0, 12)),
              "tensor blk.3.ffn_up_exps: row of 100 values is not a multiple of the q4_K block size 256");
    EXPECT_EQ(parse_error(one_tensor(8, 16)),
              "tensor blk.3.ffn_up_exps: offset 16 is not a multiple of the alignment 32");
    auto past = one_tensor(8, 64);
    past.zeros(32 - past.size() % 32 + 32);
    const std::uint64_t size = past.size();
    EXPECT_EQ(parse_error(past), "tensor blk.3.ffn_up_exps: data extends past end of file (offset " +
                                     std::to_string(size - 32 + 64) + " + 32 bytes > file size " +
                                     std::to_string(size) + ")");
}

TEST(gguf_parser, overlapping_and_duplicate_tensors_are_rejected) {
    byte_builder c;
    c.preamble(3, 2, 0).str("a").u32(1).u64(16).u32(0).u64(0).str("b").u32(1).u64(8).u32(0).u64(32);
    // a is 16 f32 = 64 bytes at 0, b starts at 32: overlap.
    c.zeros(32 - c.size() % 32 + 128);
    EXPECT_EQ(parse_error(c).rfind("tensors a and b overlap", 0), 0U);
    byte_builder dup;
    dup.preamble(3, 2, 0).str("a").u32(1).u64(8).u32(0).u64(0).str("a").u32(1).u64(8).u32(0).u64(32);
    dup.zeros(32 - dup.size() % 32 + 64);
    EXPECT_EQ(parse_error(dup), "duplicate tensor name a");
}

TEST(gguf_parser, utf8_validation_follows_the_standard) {
    EXPECT_TRUE(is_valid_utf8("plain ascii"));
    EXPECT_TRUE(is_valid_utf8("\xE2\x82\xAC \xF0\x9F\x98\x80"));
    EXPECT_FALSE(is_valid_utf8("\xC0\xAF"));         // overlong '/'
    EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));     // surrogate
    EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80")); // above U+10FFFF
    EXPECT_FALSE(is_valid_utf8("\xE2\x82"));         // truncated
}

} // namespace
} // namespace sluice::gguf
