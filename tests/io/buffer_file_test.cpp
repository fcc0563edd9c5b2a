// Tests of io::dma_buffer and io::file.
#include "io/dma_buffer.hpp"
#include "io/file.hpp"
#include "io/huge_pages.hpp"
#include "test_files.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <fcntl.h>
#include <filesystem>
#include <unistd.h>

namespace sluice::io {
namespace {

TEST(dma_buffer, size_is_rounded_up_and_address_aligned) {
    dma_buffer b(5000);
    EXPECT_EQ(b.size(), 8192u);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % dma_buffer::alignment, 0u);
    EXPECT_EQ(b.span().size(), 8192u);
    EXPECT_TRUE(dma_buffer().empty());
    EXPECT_EQ(dma_buffer(0).data(), nullptr);
}

TEST(dma_buffer, move_transfers_ownership) {
    dma_buffer a(4096);
    std::byte* p = a.data();
    dma_buffer b(std::move(a));
    EXPECT_EQ(b.data(), p);
    EXPECT_TRUE(a.empty()); // NOLINT(bugprone-use-after-move): moved-from state is specified
    dma_buffer c(1);
    c = std::move(b);
    EXPECT_EQ(c.data(), p);
    EXPECT_EQ(c.size(), 4096u);
}

TEST(huge_page_bytes, counts_only_whole_huge_pages_inside_the_buffer) {
    // A buffer smaller than a huge page can hold none; an advised, populated 8 MiB one holds whole 2 MiB pages
    // only, never more than its size (the kernel may give none when memory is fragmented or THP is off).
    dma_buffer small(64 * 1024);
    small.populate();
    EXPECT_EQ(huge_page_bytes(small.data(), small.size()), 0u);
    dma_buffer big(std::size_t{8} << 20);
    big.advise_huge_pages();
    big.populate();
    const std::size_t huge = huge_page_bytes(big.data(), big.size());
    EXPECT_LE(huge, big.size());
    EXPECT_EQ(huge % (std::size_t{2} << 20), 0u);
    EXPECT_EQ(huge_page_bytes(nullptr, 0), 0u);
}

TEST(file, open_reports_path_size_and_direct_mode) {
    const auto path = test::data_dir() / "file_open.bin";
    test::write_random_file(path, 10000, 1);
    auto f = file::open(path.string());
    ASSERT_TRUE(f) << f.error().message;
    EXPECT_EQ(f->size(), 10000u);
    EXPECT_EQ(f->path(), path.string());
    EXPECT_GE(f->fd(), 0);
    EXPECT_TRUE(f->direct()) << "the build tree is expected to be on a filesystem with O_DIRECT";
    file moved = std::move(*f);
    EXPECT_EQ(f->fd(), -1);
    EXPECT_GE(moved.fd(), 0);
}

TEST(file, missing_file_error_names_the_path) {
    auto f = file::open("/nonexistent/sluice/weights.gguf");
    ASSERT_FALSE(f);
    EXPECT_NE(f.error().message.find("/nonexistent/sluice/weights.gguf"), std::string::npos) << f.error().message;
    EXPECT_EQ(f.error().code, std::errc::no_such_file_or_directory);
}

TEST(file, directory_is_refused) {
    auto f = file::open(test::data_dir().string());
    ASSERT_FALSE(f);
    EXPECT_NE(f.error().message.find("not a regular file"), std::string::npos) << f.error().message;
}

TEST(file, direct_flag_matches_what_the_filesystem_accepts) {
    const std::filesystem::path shm = "/dev/shm";
    if (!std::filesystem::is_directory(shm)) {
        GTEST_SKIP() << "no /dev/shm";
    }
    const auto path = shm / "sluice_io_test_tmpfs.bin";
    test::write_random_file(path, 4096, 2);
    // tmpfs refused O_DIRECT before Linux 6.6 and accepts it since; either way open must succeed and say which.
    const int probe = ::open(path.c_str(), O_RDONLY | O_DIRECT);
    const bool accepts_direct = probe >= 0;
    if (probe >= 0) {
        ::close(probe);
    }
    auto f = file::open(path.string());
    ASSERT_TRUE(f) << f.error().message;
    EXPECT_EQ(f->direct(), accepts_direct);
    std::filesystem::remove(path);
}

} // namespace
} // namespace sluice::io
