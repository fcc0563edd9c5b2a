// Replays the committed fuzz corpus in the normal build: valid_* files parse, every other file fails cleanly; read
// header-only, every prefix of a valid file parses to its tensor table or fails as a cut header.
#include "runtime/gguf/parser.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

namespace sluice::gguf {
namespace {

std::vector<std::byte> slurp(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    const std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::byte> out(chars.size());
    std::transform(chars.begin(), chars.end(), out.begin(), [](char c) { return static_cast<std::byte>(c); });
    return out;
}

TEST(gguf_fuzz_corpus, valid_seeds_parse_and_malformed_files_fail_with_a_message) {
    const auto dir = std::filesystem::path(SLUICE_SOURCE_DIR) / "tests" / "fuzz" / "corpus";
    std::size_t valid = 0;
    std::size_t malformed = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        const std::string name = entry.path().filename().string();
        SCOPED_TRACE(name);
        const auto bytes = slurp(entry.path());
        auto header = parse_header(bytes);
        if (name.starts_with("valid_")) {
            EXPECT_TRUE(header) << header.error().message;
            ++valid;
        } else {
            ASSERT_FALSE(header) << "malformed file parsed";
            EXPECT_FALSE(header.error().message.empty());
            EXPECT_TRUE(header.error().code);
            ++malformed;
        }
    }
    EXPECT_GE(valid, 4U);
    EXPECT_GE(malformed, 40U);
}

TEST(gguf_fuzz_corpus, header_only_every_prefix_of_a_valid_seed_parses_or_is_a_cut_header) {
    const auto dir = std::filesystem::path(SLUICE_SOURCE_DIR) / "tests" / "fuzz" / "corpus";
    std::size_t checked = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        const std::string name = entry.path().filename().string();
        SCOPED_TRACE(name);
        const auto bytes = slurp(entry.path());
        span_source all(bytes);
        auto partial = parse_header(all, header_mode::header_only); // never crashes, whatever the file
        if (!name.starts_with("valid_")) {
            continue;
        }
        const auto whole = parse_header(bytes);
        ASSERT_TRUE(whole && partial);
        for (std::size_t n = 0; n < bytes.size(); ++n) {
            span_source prefix{std::span<const std::byte>(bytes).first(n)};
            const auto h = parse_header(prefix, header_mode::header_only);
            if (h) {
                EXPECT_EQ(h->tensors.size(), whole->tensors.size()) << n;
                EXPECT_EQ(h->data_offset, whole->data_offset) << n;
            } else {
                EXPECT_TRUE(is_cut_header(h.error())) << n << ": " << h.error().message;
            }
        }
        ++checked;
    }
    EXPECT_GE(checked, 4U);
}

} // namespace
} // namespace sluice::gguf
