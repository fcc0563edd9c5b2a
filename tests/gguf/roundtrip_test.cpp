// Write-then-read tests: every metadata type, nested arrays, many tensor types, several alignments.
#include "runtime/gguf/model_files.hpp"
#include "runtime/gguf/summary.hpp"
#include "runtime/gguf/value_json.hpp"
#include "runtime/gguf/writer.hpp"
#include "tests/gguf/test_util.hpp"

#include <gtest/gtest.h>

#include <limits>

namespace sluice::gguf {
namespace {

using kernels::quant_type;
using testing::random_bytes;
using testing::read_file;
using testing::scratch_dir;

metadata every_type() {
    metadata kv;
    kv.set_string("general.architecture", "testarch");
    kv.set_u8("t.u8", 250);
    kv.set_i8("t.i8", -120);
    kv.set_u16("t.u16", 65000);
    kv.set_i16("t.i16", -32000);
    kv.set_u32("t.u32", 4000000000U);
    kv.set_i32("t.i32", -2000000000);
    kv.set_u64("t.u64", std::numeric_limits<std::uint64_t>::max());
    kv.set_i64("t.i64", std::numeric_limits<std::int64_t>::min());
    kv.set_f32("t.f32", 1.5F);
    kv.set_f64("t.f64", -2.25e300);
    kv.set_bool("t.bool", true);
    kv.set_string("t.string", "h\xC3\xA9llo \xF0\x9F\x98\x80");
    kv.set_string("t.empty_string", "");
    kv.set_array("t.arr_u8", std::vector<std::uint8_t>{0, 1, 255});
    kv.set_array("t.arr_i8", std::vector<std::int8_t>{-1, 2});
    kv.set_array("t.arr_u16", std::vector<std::uint16_t>{1, 65535});
    kv.set_array("t.arr_i16", std::vector<std::int16_t>{-5});
    kv.set_array("t.arr_u32", std::vector<std::uint32_t>{7, 8, 9});
    kv.set_array("t.arr_i32", std::vector<std::int32_t>{-7, 8});
    kv.set_array("t.arr_u64", std::vector<std::uint64_t>{1ULL << 40});
    kv.set_array("t.arr_i64", std::vector<std::int64_t>{-(1LL << 40)});
    kv.set_array("t.arr_f32", std::vector<float>{0.5F, -1.0F});
    kv.set_array("t.arr_f64", std::vector<double>{3.25});
    kv.set_array("t.arr_bool", std::vector<bool>{true, false, true});
    kv.set_array("t.arr_string", std::vector<std::string>{"a", "", "c d"});
    kv.set_array("t.arr_empty", std::vector<std::uint32_t>{});
    // Arrays of arrays, with differing element types and an empty inner array, two levels deep.
    std::vector<metadata_array> inner{metadata_array{std::vector<std::int32_t>{1, 2}},
                                      metadata_array{std::vector<std::string>{"x"}},
                                      metadata_array{std::vector<float>{}}};
    std::vector<metadata_array> outer{metadata_array{inner}, metadata_array{std::vector<metadata_array>{}}};
    kv.set_array("t.nested", inner);
    kv.set_array("t.nested2", outer);
    return kv;
}

TEST(gguf_roundtrip, every_metadata_type_reads_back_equal) {
    scratch_dir dir;
    writer w(dir / "kv.gguf");
    w.kv() = every_type();
    ASSERT_TRUE(w.finish());

    auto m = model_files::open(dir / "kv.gguf");
    ASSERT_TRUE(m) << m.error().message;
    EXPECT_EQ(m->kv(), every_type());
    EXPECT_EQ(m->parts()[0].header.version, 3U);
    EXPECT_EQ(*m->architecture(), "testarch");
    EXPECT_EQ(m->arch_key("block_count"), "testarch.block_count");
    EXPECT_EQ(*m->kv().get_u32("t.u32"), 4000000000U);
    EXPECT_EQ(*m->kv().get_i64("t.i64"), std::numeric_limits<std::int64_t>::min());
    EXPECT_EQ(*m->kv().get_u32("t.u8"), 250U); // integer accessors widen
    EXPECT_DOUBLE_EQ(*m->kv().get_f64("t.f64"), -2.25e300);
    EXPECT_EQ(*m->kv().get_string("t.string"), "h\xC3\xA9llo \xF0\x9F\x98\x80");
    EXPECT_EQ(m->kv().get_array_of_strings("t.arr_string")->size(), 3U);
    EXPECT_EQ(type_name(*m->kv().find("t.nested2")), "array[array[array[i32]]]");
}

TEST(gguf_roundtrip, accessors_name_key_and_types_in_errors) {
    const metadata kv = every_type();
    auto wrong = kv.get_u32("t.string");
    ASSERT_FALSE(wrong);
    EXPECT_EQ(wrong.error().message, "metadata key t.string: expected u32, found string");
    auto range = kv.get_u32("t.i8");
    ASSERT_FALSE(range);
    EXPECT_EQ(range.error().message, "metadata key t.i8: value -120 does not fit in u32");
    auto missing = kv.get_string("no.such.key");
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().message, "metadata key no.such.key: missing");
    auto arr = kv.get_array_of_strings("t.arr_u32");
    ASSERT_FALSE(arr);
    EXPECT_EQ(arr.error().message, "metadata key t.arr_u32: expected array[string], found array[u32]");
    EXPECT_FALSE(*kv.find_u32("absent"));
    EXPECT_EQ(to_display_string(*kv.find("t.arr_string")), "[\"a\", \"\", \"c d\"]");
}

TEST(gguf_roundtrip, metadata_converts_to_json_with_truncated_arrays) {
    const auto json = to_json(every_type(), 2);
    EXPECT_EQ(json.at("t.u64").as_uint64(), std::numeric_limits<std::uint64_t>::max());
    EXPECT_EQ(json.at("t.i8").as_int64(), -120);
    EXPECT_EQ(json.at("t.bool").as_bool(), true);
    EXPECT_EQ(json.at("general.architecture").as_string(), "testarch");
    EXPECT_EQ(json.at("t.arr_i32").as_array().size(), 2U);
    const auto& cut = json.at("t.arr_string").as_object();
    EXPECT_EQ(cut.at("count").as_uint64(), 3U);
    EXPECT_EQ(cut.at("type").as_string(), "array[string]");
    EXPECT_EQ(cut.at("head").as_array().size(), 2U);
    EXPECT_EQ(to_json(every_type()).at("t.nested").as_array()[0].as_array()[1].as_int64(), 2);
}

struct tensor_spec {
    std::string name;
    quant_type type;
    std::vector<std::uint64_t> shape;
};

std::vector<tensor_spec> mixed_tensors() {
    return {
        {"token_embd.weight", quant_type::q8_0, {64, 10}},
        {"blk.0.attn_norm.weight", quant_type::f32, {64}},
        {"blk.0.attn_q.weight", quant_type::f16, {64, 64}},
        {"blk.0.ffn_up_exps.weight", quant_type::q4_k, {256, 3, 4}},
        {"blk.0.ffn_down_exps.weight", quant_type::q6_k, {256, 2, 4}},
        {"blk.0.ffn_gate_exps.weight", quant_type::q2_k, {512, 1, 4}},
        {"blk.0.misc.q4_0", quant_type::q4_0, {32, 3}},
        {"blk.0.misc.q4_1", quant_type::q4_1, {32, 5}},
        {"blk.0.misc.q5_0", quant_type::q5_0, {96}},
        {"blk.0.misc.q5_1", quant_type::q5_1, {32, 1, 1, 2}},
        {"blk.0.misc.q3_k", quant_type::q3_k, {256, 2}},
        {"blk.0.misc.q5_k", quant_type::q5_k, {256}},
        {"blk.0.misc.iq4_xs", quant_type::iq4_xs, {256}},
        {"blk.0.misc.iq4_nl", quant_type::iq4_nl, {32}},
        {"blk.0.misc.bf16", quant_type::bf16, {3, 5}},
        {"blk.0.misc.i32", quant_type::i32, {7}},
        {"blk.0.misc.f64", quant_type::f64, {1}},
        {"blk.0.misc.mxfp4", quant_type::mxfp4, {64, 2}},
        {"output.weight", quant_type::q8_0, {64, 10}},
    };
}

/// Writes `specs` with random data (tensor i seeded with i) and returns the data written.
std::vector<std::vector<std::byte>> write_model(const std::filesystem::path& path, const writer_options& opts,
                                                const std::vector<tensor_spec>& specs) {
    writer w(path, opts);
    w.kv().set_string("general.architecture", "testarch");
    for (const auto& s : specs) {
        EXPECT_TRUE(w.add_tensor(s.name, s.type, s.shape));
    }
    std::vector<std::vector<std::byte>> data;
    for (std::size_t i = 0; i < specs.size(); ++i) {
        data.push_back(random_bytes(w.next_tensor()->bytes, static_cast<std::uint32_t>(i)));
        auto r = w.write_tensor(data.back());
        EXPECT_TRUE(r) << r.error().message;
    }
    auto paths = w.finish();
    EXPECT_TRUE(paths) << paths.error().message;
    return data;
}

class gguf_alignment : public ::testing::TestWithParam<std::uint32_t> {};

TEST_P(gguf_alignment, many_tensor_types_keep_shape_type_offset_and_bytes) {
    scratch_dir dir;
    writer_options opts;
    opts.alignment = GetParam();
    const auto specs = mixed_tensors();
    const auto data = write_model(dir / "m.gguf", opts, specs);

    auto m = model_files::open(dir / "m.gguf");
    ASSERT_TRUE(m) << m.error().message;
    EXPECT_EQ(m->parts()[0].header.alignment, GetParam());
    EXPECT_EQ(m->parts()[0].header.data_offset % GetParam(), 0U);
    ASSERT_EQ(m->tensors().size(), specs.size());
    const auto file = read_file(dir / "m.gguf");
    for (std::size_t i = 0; i < specs.size(); ++i) {
        const auto& t = m->tensors()[i];
        SCOPED_TRACE(t.name);
        EXPECT_EQ(t.name, specs[i].name);
        EXPECT_EQ(t.type, specs[i].type);
        EXPECT_TRUE(std::equal(t.shape().begin(), t.shape().end(), specs[i].shape.begin(), specs[i].shape.end()));
        EXPECT_EQ(t.offset % GetParam(), 0U);
        ASSERT_EQ(t.bytes, data[i].size());
        ASSERT_LE(t.offset + t.bytes, file.size());
        EXPECT_TRUE(std::equal(data[i].begin(), data[i].end(), file.begin() + static_cast<std::ptrdiff_t>(t.offset)));
    }
}

INSTANTIATE_TEST_SUITE_P(alignments, gguf_alignment, ::testing::Values(32U, 64U, 4096U));

TEST(gguf_roundtrip, expert_slabs_are_stride_apart_and_hold_each_experts_bytes) {
    scratch_dir dir;
    const auto data = write_model(dir / "m.gguf", {}, mixed_tensors());
    auto m = model_files::open(dir / "m.gguf");
    ASSERT_TRUE(m) << m.error().message;
    const auto* up = m->find_tensor("blk.0.ffn_up_exps.weight");
    ASSERT_NE(up, nullptr);
    EXPECT_TRUE(up->is_expert());
    EXPECT_EQ(up->expert_count(), 4U);
    EXPECT_EQ(up->expert_stride(), 3U * 144U); // ne1 rows of one q4_K block each
    auto slab = up->expert_slab(2);
    ASSERT_TRUE(slab);
    EXPECT_EQ(slab->offset, up->offset + 2 * up->expert_stride());
    EXPECT_EQ(slab->size, up->expert_stride());
    EXPECT_FALSE(up->expert_slab(4));
    EXPECT_FALSE(m->find_tensor("blk.0.attn_q.weight")->expert_slab(0));

    const auto totals = summarize_tensors(*m);
    EXPECT_EQ(totals.expert_tensors, 3U);
    EXPECT_EQ(totals.dense_tensors, mixed_tensors().size() - 3);
    EXPECT_EQ(totals.max_experts, 4U);
    EXPECT_EQ(totals.bytes_per_expert, 3U * 144 + 2U * 210 + 1U * 2 * 84); // q2_K rows of 512 are 2 blocks
}

TEST(gguf_roundtrip, chunk_filler_and_append_write_the_same_file_as_spans) {
    scratch_dir dir;
    const auto specs = mixed_tensors();
    write_model(dir / "spans.gguf", {}, specs);

    writer w(dir / "chunks.gguf");
    w.kv().set_string("general.architecture", "testarch");
    for (const auto& s : specs) {
        ASSERT_TRUE(w.add_tensor(s.name, s.type, s.shape));
    }
    for (std::size_t i = 0; i < specs.size(); ++i) {
        const auto data = random_bytes(w.next_tensor()->bytes, static_cast<std::uint32_t>(i));
        if (i % 2 == 0) {
            auto r = w.write_tensor(
                [&](std::uint64_t offset, std::span<std::byte> chunk) -> result<void> {
                    std::copy_n(data.begin() + static_cast<std::ptrdiff_t>(offset), chunk.size(), chunk.begin());
                    return {};
                },
                7);
            ASSERT_TRUE(r) << r.error().message;
        } else {
            const std::span<const std::byte> all(data);
            ASSERT_TRUE(w.append(all.first(all.size() / 2)));
            ASSERT_TRUE(w.append(all.subspan(all.size() / 2)));
        }
    }
    ASSERT_TRUE(w.finish());
    EXPECT_EQ(read_file(dir / "spans.gguf"), read_file(dir / "chunks.gguf"));
}

TEST(gguf_writer, misuse_is_reported_not_written) {
    scratch_dir dir;
    writer w(dir / "bad.gguf");
    EXPECT_FALSE(w.add_tensor("", quant_type::f32, {4}));
    EXPECT_FALSE(w.add_tensor("a", quant_type::f32, {}));
    EXPECT_FALSE(w.add_tensor("a", quant_type::f32, {1, 2, 3, 4, 5}));
    EXPECT_FALSE(w.add_tensor("a", quant_type::f32, {4, 0}));
    EXPECT_FALSE(w.add_tensor("a", quant_type::q4_k, {100}));
    EXPECT_FALSE(w.add_tensor("a", quant_type::f64, {1ULL << 40, 1ULL << 30}));
    ASSERT_TRUE(w.add_tensor("a", quant_type::f32, {4}));
    EXPECT_FALSE(w.add_tensor("a", quant_type::f32, {4}));
    ASSERT_TRUE(w.add_tensor("b", quant_type::f32, {4}));
    const std::vector<std::byte> twelve(12);
    auto short_write = w.write_tensor(twelve);
    ASSERT_FALSE(short_write);
    EXPECT_EQ(short_write.error().message, "tensor a: got 12 bytes, expected 16");
    ASSERT_TRUE(w.write_tensor(std::vector<std::byte>(16)));
    EXPECT_FALSE(w.add_tensor("c", quant_type::f32, {4}));
    auto early = w.finish();
    ASSERT_FALSE(early);
    EXPECT_EQ(early.error().message, "tensor b was not written (1 of 2 tensors complete)");
}

TEST(gguf_roundtrip, empty_model_has_header_only) {
    scratch_dir dir;
    writer w(dir / "empty.gguf", {.alignment = 64});
    ASSERT_TRUE(w.finish());
    auto m = model_files::open(dir / "empty.gguf");
    ASSERT_TRUE(m) << m.error().message;
    EXPECT_TRUE(m->tensors().empty());
    EXPECT_EQ(*m->kv().get_u32("general.alignment"), 64U);
}

} // namespace
} // namespace sluice::gguf
