// The header-only parse on every prefix of a small GGUF file, as a partial download leaves it: a prefix that
// holds the whole header parses to the whole file's tensor table, a shorter one fails as a cut header naming the
// section it ends in, and the whole-file parse still refuses any prefix that lacks tensor data.
#include "runtime/gguf/parser.hpp"
#include "tests/gguf/test_util.hpp"

#include <gtest/gtest.h>

#include <string>

namespace sluice::gguf {
namespace {

using testing::byte_builder;

/// Three key-values (one a string array, like a vocabulary) and two f32 tensors of 8 values, with their data.
byte_builder small_model(std::size_t& table_end) {
    byte_builder b;
    b.preamble(3, 2, 3).str("general.architecture").u32(8).str("x");
    b.str("tokenizer.ggml.tokens").u32(9).u32(8).u64(3).str("alpha").str("beta").str("gamma");
    b.str("general.alignment").u32(4).u32(32);
    b.str("blk.0.a").u32(1).u64(8).u32(0).u64(0);
    b.str("blk.0.b").u32(1).u64(8).u32(0).u64(32);
    table_end = b.size();
    b.zeros(32 - b.size() % 32 + 64); // padding to the data section, then both tensors' 32 bytes
    return b;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(gguf_header_only, every_prefix_either_parses_to_the_whole_table_or_names_the_cut) {
    std::size_t table_end = 0;
    const auto b = small_model(table_end);
    const auto whole = parse_header(b.bytes());
    ASSERT_TRUE(whole) << whole.error().message;
    for (std::size_t n = 0; n < b.size(); ++n) {
        SCOPED_TRACE(n);
        span_source src(b.bytes().first(n));
        const auto h = parse_header(src, header_mode::header_only);
        if (n >= table_end) {
            ASSERT_TRUE(h) << h.error().message;
            ASSERT_EQ(h->tensors.size(), whole->tensors.size());
            for (std::size_t i = 0; i < h->tensors.size(); ++i) {
                EXPECT_EQ(h->tensors[i].name, whole->tensors[i].name);
                EXPECT_EQ(h->tensors[i].offset, whole->tensors[i].offset);
                EXPECT_EQ(h->tensors[i].bytes, whole->tensors[i].bytes);
            }
            EXPECT_EQ(h->data_offset, whole->data_offset);
            EXPECT_EQ(h->file_size, n); // the bytes present
            continue;
        }
        ASSERT_FALSE(h);
        EXPECT_TRUE(is_cut_header(h.error())) << h.error().message;
        const auto& m = h.error().message;
        EXPECT_TRUE(contains(m, "the file ends inside its GGUF header (" + std::to_string(n) + " bytes): cut in "))
            << m;
        EXPECT_TRUE(contains(m, "the preamble") || contains(m, "the key-values at entry #") ||
                    contains(m, "the tensor table at tensor #"))
            << m;
        EXPECT_TRUE(contains(m, "missing: ")) << m;
    }
}

TEST(gguf_header_only, the_cut_names_the_key_or_the_tensor_it_ends_in) {
    std::size_t table_end = 0;
    const auto b = small_model(table_end);
    span_source in_vocab(b.bytes().first(120)); // inside tokenizer.ggml.tokens' strings (they span 102..148)
    const auto kv = parse_header(in_vocab, header_mode::header_only);
    ASSERT_FALSE(kv);
    EXPECT_TRUE(contains(kv.error().message, "cut in the key-values at entry #1 of 3 (tokenizer.ggml.tokens); "
                                             "missing: the rest of the key-values and the tensor table of 2 tensors"))
        << kv.error().message;
    span_source in_table(b.bytes().first(table_end - 4)); // inside the second tensor's offset
    const auto table = parse_header(in_table, header_mode::header_only);
    ASSERT_FALSE(table);
    EXPECT_TRUE(contains(table.error().message,
                         "cut in the tensor table at tensor #1 of 2; missing: the rest of the tensor table (1 of 2 "
                         "tensors)"))
        << table.error().message;
}

TEST(gguf_header_only, the_whole_file_parse_still_refuses_a_prefix_without_the_data) {
    std::size_t table_end = 0;
    const auto b = small_model(table_end);
    const auto h = parse_header(b.bytes().first(b.size() - 1));
    ASSERT_FALSE(h);
    EXPECT_FALSE(is_cut_header(h.error()));
    EXPECT_TRUE(contains(h.error().message, "data extends past end of file")) << h.error().message;
}

} // namespace
} // namespace sluice::gguf
