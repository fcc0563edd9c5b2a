// Split models: the writer's NAME-0000N-of-0000M.gguf parts open from any part and are cross-checked.
#include "runtime/gguf/encode.hpp"
#include "runtime/gguf/model_files.hpp"
#include "runtime/gguf/writer.hpp"
#include "tests/gguf/test_util.hpp"

#include <gtest/gtest.h>

namespace sluice::gguf {
namespace {

using kernels::quant_type;
using testing::random_bytes;
using testing::read_file;
using testing::scratch_dir;

/// Writes 7 f16 tensors of 64x(i+1) values with `opts`; returns their data.
std::vector<std::vector<std::byte>> write_seven(const std::filesystem::path& path, const writer_options& opts) {
    writer w(path, opts);
    w.kv().set_string("general.architecture", "splitarch");
    w.kv().set_u32("splitarch.block_count", 7);
    for (std::uint64_t i = 0; i < 7; ++i) {
        EXPECT_TRUE(w.add_tensor("blk." + std::to_string(i) + ".w", quant_type::f16, {64, i + 1}));
    }
    std::vector<std::vector<std::byte>> data;
    for (std::uint32_t i = 0; i < 7; ++i) {
        data.push_back(random_bytes(w.next_tensor()->bytes, i));
        EXPECT_TRUE(w.write_tensor(data.back()));
    }
    EXPECT_TRUE(w.finish());
    return data;
}

void expect_model_matches(const model_files& m, const std::vector<std::vector<std::byte>>& data) {
    ASSERT_EQ(m.tensors().size(), data.size());
    EXPECT_EQ(*m.kv().get_u32("splitarch.block_count"), 7U);
    for (std::size_t i = 0; i < data.size(); ++i) {
        const auto& t = m.tensors()[i];
        const auto file = read_file(m.parts()[t.split].path);
        ASSERT_LE(t.offset + t.bytes, file.size());
        EXPECT_TRUE(std::equal(data[i].begin(), data[i].end(), file.begin() + static_cast<std::ptrdiff_t>(t.offset)))
            << t.name;
    }
}

TEST(gguf_split, parts_by_tensor_count_open_from_any_part) {
    scratch_dir dir;
    const auto data = write_seven(dir / "model.gguf", {.max_part_tensors = 3});
    for (int n = 1; n <= 3; ++n) {
        const auto path = split_path((dir / "model").string(), static_cast<std::uint32_t>(n), 3);
        ASSERT_TRUE(std::filesystem::exists(path)) << path;
        auto m = model_files::open(path);
        ASSERT_TRUE(m) << m.error().message;
        ASSERT_EQ(m->parts().size(), 3U);
        EXPECT_EQ(m->find_tensor("blk.6.w")->split, 2U);
        EXPECT_EQ(m->find_tensor("blk.3.w")->split, 1U);
        EXPECT_EQ(m->find_tensor("blk.2.w")->split, 0U);
        EXPECT_EQ(*m->parts()[1].header.kv.get_u32("split.no"), 1U);
        EXPECT_FALSE(m->parts()[1].header.kv.contains("splitarch.block_count"));
        expect_model_matches(*m, data);
    }
}

TEST(gguf_split, parts_by_bytes_stay_under_the_limit) {
    scratch_dir dir;
    const auto data = write_seven(dir / "model.gguf", {.alignment = 64, .max_part_bytes = 512});
    auto m = model_files::open(dir / "model-00001-of-00006.gguf");
    ASSERT_TRUE(m) << m.error().message;
    EXPECT_EQ(m->parts().size(), 6U); // 128 + 256 | 384 | 512 | 640 | 768 | 896
    expect_model_matches(*m, data);
}

TEST(gguf_split, missing_part_is_reported_with_its_path) {
    scratch_dir dir;
    write_seven(dir / "model.gguf", {.max_part_tensors = 3});
    std::filesystem::remove(dir / "model-00002-of-00003.gguf");
    auto m = model_files::open(dir / "model-00001-of-00003.gguf");
    ASSERT_FALSE(m);
    EXPECT_NE(m.error().message.find("model-00002-of-00003.gguf"), std::string::npos) << m.error().message;
}

/// Writes a header-only part with the given split keys and tensor names (f32 [8] each, data zeroed).
void write_part(const std::filesystem::path& path, int no, int count, std::vector<std::string> names) {
    metadata kv;
    kv.set_u16("split.no", static_cast<std::uint16_t>(no));
    kv.set_u16("split.count", static_cast<std::uint16_t>(count));
    std::vector<tensor_info> tensors;
    for (std::size_t i = 0; i < names.size(); ++i) {
        tensor_info t;
        t.name = names[i];
        t.n_dims = 1;
        t.ne[0] = 8;
        t.offset = 32 * i;
        tensors.push_back(t);
    }
    auto bytes = encode_header(kv, tensors, 32);
    bytes.resize(bytes.size() + 32 * names.size());
    testing::write_file(path, bytes);
}

TEST(gguf_split, duplicate_tensor_across_parts_and_wrong_split_no_are_rejected) {
    scratch_dir dir;
    write_part(dir / "m-00001-of-00002.gguf", 0, 2, {"a", "b"});
    write_part(dir / "m-00002-of-00002.gguf", 1, 2, {"c", "a"});
    auto dup = model_files::open(dir / "m-00002-of-00002.gguf");
    ASSERT_FALSE(dup);
    EXPECT_NE(dup.error().message.find("tensor a also appears in"), std::string::npos) << dup.error().message;

    write_part(dir / "m-00002-of-00002.gguf", 0, 2, {"c"});
    auto wrong_no = model_files::open(dir / "m-00001-of-00002.gguf");
    ASSERT_FALSE(wrong_no);
    EXPECT_NE(wrong_no.error().message.find("split.no is 0, expected 1"), std::string::npos);

    write_part(dir / "single.gguf", 0, 2, {"c"});
    auto unnamed = model_files::open(dir / "single.gguf");
    ASSERT_FALSE(unnamed);
    EXPECT_NE(unnamed.error().message.find("does not follow NAME-0000N-of-0000M.gguf"), std::string::npos);
}

TEST(gguf_split, split_names_parse_strictly) {
    auto n = parse_split_name("/x/Qwen3-30B-A3B-00002-of-00004.gguf");
    ASSERT_TRUE(n);
    EXPECT_EQ(n->prefix, "/x/Qwen3-30B-A3B");
    EXPECT_EQ(n->number, 2U);
    EXPECT_EQ(n->count, 4U);
    EXPECT_FALSE(parse_split_name("model.gguf"));
    EXPECT_FALSE(parse_split_name("m-00005-of-00004.gguf"));
    EXPECT_FALSE(parse_split_name("m-0001-of-00004.gguf"));
    EXPECT_FALSE(parse_split_name("m-00000-of-00004.gguf"));
    EXPECT_EQ(split_path("/x/m", 3, 12).string(), "/x/m-00003-of-00012.gguf");
}

} // namespace
} // namespace sluice::gguf
