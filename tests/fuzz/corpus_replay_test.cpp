// Replays the committed fuzz corpus in the normal build: valid_* files parse, every other file fails cleanly.
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

} // namespace
} // namespace sluice::gguf
