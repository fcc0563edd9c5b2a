// Helpers for the GGUF tests: a scratch directory, raw little-endian byte building, file reads and writes.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::gguf::testing {

/// A fresh directory under the build tree, removed when the object dies.
class scratch_dir {
public:
    scratch_dir() {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        path_ = std::filesystem::path(SLUICE_BINARY_DIR) / "test_scratch" / "gguf" /
                (std::string(info->test_suite_name()) + "." + info->name());
        std::filesystem::remove_all(path_);
        std::filesystem::create_directories(path_);
    }
    ~scratch_dir() { std::filesystem::remove_all(path_); }
    [[nodiscard]] const std::filesystem::path& path() const { return path_; }
    [[nodiscard]] std::filesystem::path operator/(std::string_view name) const { return path_ / name; }

private:
    std::filesystem::path path_;
};

/// Builds raw GGUF bytes field by field, for malformed inputs the writer refuses to produce.
class byte_builder {
public:
    byte_builder& u8(std::uint8_t v) { return put(v); }
    byte_builder& u32(std::uint32_t v) { return put(v); }
    byte_builder& u64(std::uint64_t v) { return put(v); }
    byte_builder& str(std::string_view s) {
        u64(s.size());
        raw(s);
        return *this;
    }
    byte_builder& raw(std::string_view s) {
        for (char c : s) {
            bytes_.push_back(static_cast<std::byte>(c));
        }
        return *this;
    }
    byte_builder& zeros(std::size_t n) {
        bytes_.resize(bytes_.size() + n);
        return *this;
    }
    /// Magic, version and counts.
    byte_builder& preamble(std::uint32_t version, std::uint64_t n_tensors, std::uint64_t n_kv) {
        return u32(0x46554747).u32(version).u64(n_tensors).u64(n_kv);
    }
    [[nodiscard]] std::span<const std::byte> bytes() const { return bytes_; }
    [[nodiscard]] std::size_t size() const { return bytes_.size(); }

private:
    template <class T>
    byte_builder& put(T v) {
        const auto old = bytes_.size();
        bytes_.resize(old + sizeof(T));
        std::memcpy(bytes_.data() + old, &v, sizeof(T));
        return *this;
    }
    std::vector<std::byte> bytes_;
};

inline std::vector<std::byte> read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::byte> out(data.size());
    std::memcpy(out.data(), data.data(), data.size());
    return out;
}

inline void write_file(const std::filesystem::path& path, std::span<const std::byte> bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

/// Deterministic pseudo-random bytes.
inline std::vector<std::byte> random_bytes(std::size_t n, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<std::byte> out(n);
    for (auto& b : out) {
        b = static_cast<std::byte>(rng() & 0xFF);
    }
    return out;
}

} // namespace sluice::gguf::testing
