// Reader failures on both backends: end of file, truncation, injected errors, short reads, delays,
// cancellation, and backend selection.
#include "io/dma_buffer.hpp"
#include "io/read_error.hpp"
#include "io/testing/faulty_reader.hpp"
#include "reader_fixture.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <unistd.h>

namespace sluice::io::test {
namespace {

namespace asio = boost::asio;
using io::testing::faulty_reader;

std::unique_ptr<faulty_reader> wrap(std::unique_ptr<reader>& r) {
    return std::make_unique<faulty_reader>(std::move(r));
}

TEST_P(reader_test, read_past_end_of_file_names_path_and_offset) {
    dma_buffer buf(8192);
    const std::uint64_t offset = file_size - 100;
    auto r = run_to_end(ctx_, reader_->read_at(file_, offset, buf.span()));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, read_errc::unexpected_eof);
    EXPECT_EQ(r.error().message,
              path_ + ": unexpected end of file at offset " + std::to_string(offset) + " (wanted 8192 bytes)");
    auto beyond = run_to_end(ctx_, reader_->read_at(file_, file_size + 4096, buf.span()));
    ASSERT_FALSE(beyond);
    EXPECT_EQ(beyond.error().code, read_errc::unexpected_eof);
    EXPECT_EQ(reader_->counters().failures, 2u);
}

TEST_P(reader_test, batch_reports_each_request_on_its_own) {
    dma_buffer a(4096), b(4096), c(4096);
    const read_request requests[] = {
        {&file_, 0, a.span()}, {&file_, file_size + 8192, b.span()}, {&file_, 4096, c.span()}};
    auto results = run_to_end(ctx_, reader_->read_batch(requests));
    ASSERT_EQ(results.size(), 3u);
    EXPECT_TRUE(results[0]);
    ASSERT_FALSE(results[1]);
    EXPECT_NE(results[1].error().message.find(path_), std::string::npos);
    EXPECT_TRUE(results[2]);
    EXPECT_TRUE(matches(4096, c.span()));
}

TEST_P(reader_test, file_truncated_after_open_gives_a_clear_error) {
    const auto path = (data_dir() / ("truncated_" + param_name({GetParam(), 0}) + ".bin")).string();
    write_random_file(path, 1 << 20, 5);
    auto f = file::open(path, mode());
    ASSERT_TRUE(f) << f.error().message;
    ASSERT_EQ(::truncate(path.c_str(), 10000), 0);
    dma_buffer buf(65536);
    auto r = run_to_end(ctx_, reader_->read_at(*f, 0, buf.span()));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, path + ": unexpected end of file at offset 0 (wanted 65536 bytes)");
}

TEST_P(reader_test, injected_eio_names_path_and_offset) {
    auto faulty = wrap(reader_);
    faulty->fail_nth_read(2, EIO);
    dma_buffer buf(4096);
    std::vector<result<void>> results;
    run_to_end(ctx_, [&]() -> asio::awaitable<bool> {
        for (std::uint64_t offset : {0u, 8192u, 16384u}) {
            results.push_back(co_await faulty->read_at(file_, offset, buf.span()));
        }
        co_return true;
    }());
    ASSERT_EQ(results.size(), 3u);
    EXPECT_TRUE(results[0]);
    ASSERT_FALSE(results[1]);
    EXPECT_EQ(results[1].error().code, std::errc::io_error);
    EXPECT_NE(results[1].error().message.find(path_ + ": read of 4096 bytes at offset 8192 failed"), std::string::npos)
        << results[1].error().message;
    EXPECT_TRUE(results[2]);
    EXPECT_EQ(faulty->counters().failures, 1u);
    EXPECT_EQ(faulty->backend_name(), "faulty(" + std::string(faulty->inner().backend_name()) + ")");
}

TEST_P(reader_test, injected_range_fails_only_overlapping_requests) {
    auto faulty = wrap(reader_);
    faulty->fail_range(1 << 20, (1 << 20) + 1, ENODATA);
    dma_buffer a(65536), b(65536), c(65536);
    const read_request requests[] = {
        {&file_, 0, a.span()}, {&file_, (1 << 20) - 4096, b.span()}, {&file_, 2 << 20, c.span()}};
    auto results = run_to_end(ctx_, faulty->read_batch(requests));
    EXPECT_TRUE(results[0]);
    ASSERT_FALSE(results[1]);
    EXPECT_EQ(results[1].error().code, std::errc::no_message_available);
    EXPECT_TRUE(results[2]);
}

TEST_P(reader_test, eintr_and_eagain_are_resubmitted) {
    auto faulty = wrap(reader_);
    dma_buffer buf(65536);
    for (int err : {EINTR, EAGAIN}) {
        faulty->fail_nth_read(1, err);
        auto r = run_to_end(ctx_, faulty->read_at(file_, 65536, buf.span()));
        ASSERT_TRUE(r) << r.error().message;
        EXPECT_TRUE(matches(65536, buf.span()));
    }
    EXPECT_EQ(faulty->attempts(), 4u);
}

TEST_P(reader_test, short_reads_continue_with_the_remainder) {
    auto faulty = wrap(reader_);
    std::vector<std::byte> unaligned(100'000);
    dma_buffer aligned(65536);
    faulty->shorten_nth_read(1, 4096 + 17); // O_DIRECT continuation restarts at an aligned offset
    auto r1 = run_to_end(ctx_, faulty->read_at(file_, 131072, aligned.span()));
    ASSERT_TRUE(r1) << r1.error().message;
    EXPECT_TRUE(matches(131072, aligned.span()));
    faulty->shorten_nth_read(1, 3);
    auto r2 = run_to_end(ctx_, faulty->read_at(file_, 12345, unaligned));
    ASSERT_TRUE(r2) << r2.error().message;
    EXPECT_TRUE(matches(12345, unaligned));
}

TEST_P(reader_test, delayed_reads_still_let_timers_run) {
    auto faulty = wrap(reader_);
    faulty->delay_reads(std::chrono::milliseconds(50));
    dma_buffer buf(4096);
    int ticks = 0;
    auto r = run_to_end(ctx_, [&]() -> asio::awaitable<result<void>> {
        asio::steady_timer timer(ctx_);
        auto read = asio::co_spawn(ctx_, faulty->read_at(file_, 0, buf.span()), asio::use_awaitable);
        for (int i = 0; i < 3; ++i) {
            timer.expires_after(std::chrono::milliseconds(5));
            co_await timer.async_wait(asio::use_awaitable);
            ++ticks;
        }
        co_return co_await std::move(read);
    }());
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(ticks, 3);
}

TEST_P(reader_test, cancelled_read_ends_with_a_cancelled_error) {
    auto faulty = wrap(reader_);
    faulty->delay_reads(std::chrono::seconds(10));
    dma_buffer buf(4096);
    asio::cancellation_signal cancel;
    std::optional<result<void>> outcome;
    faulty->async_read_at(file_, 0, buf.span(),
                          asio::bind_cancellation_slot(cancel.slot(), [&](result<void> r) { outcome = std::move(r); }));
    asio::steady_timer timer(ctx_, std::chrono::milliseconds(5));
    timer.async_wait([&](boost::system::error_code) { cancel.emit(asio::cancellation_type::terminal); });
    const auto started = std::chrono::steady_clock::now();
    ctx_.run();
    ASSERT_TRUE(outcome.has_value());
    ASSERT_FALSE(*outcome);
    EXPECT_EQ(outcome->error().code, std::errc::operation_canceled);
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2));
}

TEST(make_reader, environment_variable_forces_the_backend) {
    asio::io_context ctx;
    ::setenv("SLUICE_IO_BACKEND", "pread", 1);
    auto r = make_reader(ctx.get_executor(), {});
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ((*r)->backend_name(), "pread");
    ::setenv("SLUICE_IO_BACKEND", "floppy", 1);
    auto bad = make_reader(ctx.get_executor(), {});
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find("SLUICE_IO_BACKEND=floppy"), std::string::npos);
    ::unsetenv("SLUICE_IO_BACKEND");
}

TEST(make_reader, zero_queue_depth_is_refused) {
    asio::io_context ctx;
    reader_options options;
    options.queue_depth = 0;
    EXPECT_FALSE(make_reader(ctx.get_executor(), options));
}

} // namespace
} // namespace sluice::io::test
