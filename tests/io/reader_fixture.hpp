// The io reader test fixture: one random file (unaligned size) and a reader of the backend under test.
#pragma once

#include "io/file.hpp"
#include "io/reader.hpp"
#include "test_files.hpp"

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <vector>

namespace sluice::io::test {

/// Runs each test once per backend and per open mode (O_DIRECT, buffered); skips io_uring where the kernel
/// refuses it.
class reader_test : public ::testing::TestWithParam<std::tuple<backend, open_mode>> {
protected:
    static constexpr std::size_t file_size = 8 * 1024 * 1024 + 1234;

    static void SetUpTestSuite() {
        path_ = (data_dir() / "reader_test.bin").string();
        contents_ = write_random_file(path_, file_size, 42);
    }

    void SetUp() override {
        ::unsetenv("SLUICE_IO_BACKEND");
        auto f = file::open(path_, mode());
        ASSERT_TRUE(f) << f.error().message;
        file_ = std::move(*f);
        auto r = make(64);
        if (!r) {
            GTEST_SKIP() << "backend unavailable: " << r.error().message;
        }
        reader_ = std::move(*r);
    }

    static backend kind() { return std::get<0>(GetParam()); }
    static open_mode mode() { return std::get<1>(GetParam()); }

    result<std::unique_ptr<reader>> make(unsigned queue_depth) {
        reader_options options;
        options.queue_depth = queue_depth;
        options.pread_threads = 4;
        options.force = kind();
        return make_reader(ctx_.get_executor(), options);
    }

    /// True when `got` equals the file's bytes at `offset`.
    static bool matches(std::uint64_t offset, std::span<const std::byte> got) {
        return offset + got.size() <= contents_.size() &&
               std::memcmp(contents_.data() + offset, got.data(), got.size()) == 0;
    }

    static inline std::string path_;
    static inline std::vector<std::byte> contents_;
    boost::asio::io_context ctx_;
    file file_;
    std::unique_ptr<reader> reader_;
};

inline std::string param_name(const ::testing::TestParamInfo<std::tuple<backend, open_mode>>& info) {
    const std::string b = std::get<0>(info.param) == backend::io_uring ? "io_uring" : "pread";
    return b + (std::get<1>(info.param) == open_mode::buffered ? "_buffered" : "_direct");
}

} // namespace sluice::io::test
