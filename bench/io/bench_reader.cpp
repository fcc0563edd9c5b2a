// bench_reader: random reads of one block size at one queue depth through io::reader for a fixed time.
//
// Usage: bench_reader --file PATH --bs 1M --depth 32 [--seconds 3] [--backend io_uring|pread]
// Prints one JSON line: {"bs":...,"depth":...,"backend":"...","bytes":...,"seconds":...,"gbps":...}.
// `depth` coroutines each keep one read in flight (like fio's iodepth), block-aligned offsets, O_DIRECT.
#include "io/dma_buffer.hpp"
#include "io/file.hpp"
#include "io/reader.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <string_view>

namespace {

namespace asio = boost::asio;
using namespace sluice;

struct bench_config {
    std::string path;
    std::size_t block = 1 << 20;
    unsigned depth = 32;
    double seconds = 3.0;
    io::backend force = io::backend::auto_select;
};

/// "256K", "1M", "4M" or plain bytes.
std::size_t parse_size(std::string_view text) {
    std::size_t scale = 1;
    if (!text.empty() && (text.back() == 'K' || text.back() == 'k')) {
        scale = 1024;
    } else if (!text.empty() && (text.back() == 'M' || text.back() == 'm')) {
        scale = 1024 * 1024;
    }
    return std::stoull(std::string(text)) * scale;
}

bool parse_args(int argc, char** argv, bench_config& config) {
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string_view key = argv[i];
        const std::string_view value = argv[i + 1];
        if (key == "--file") {
            config.path = value;
        } else if (key == "--bs") {
            config.block = parse_size(value);
        } else if (key == "--depth") {
            config.depth = static_cast<unsigned>(std::stoul(std::string(value)));
        } else if (key == "--seconds") {
            config.seconds = std::stod(std::string(value));
        } else if (key == "--backend") {
            config.force = value == "pread" ? io::backend::pread : io::backend::io_uring;
        } else {
            return false;
        }
    }
    return !config.path.empty() && config.block % io::dma_buffer::alignment == 0 && config.depth > 0;
}

struct bench_state {
    std::uint64_t bytes = 0;
    bool failed = false;
};

/// One queue slot: reads random blocks back to back until the deadline.
asio::awaitable<void> worker(io::reader& reader, const io::file& f, const bench_config& config, unsigned seed,
                             std::chrono::steady_clock::time_point deadline, bench_state& state) {
    io::dma_buffer buffer(config.block);
    std::mt19937_64 rng(seed);
    const std::uint64_t blocks = f.size() / config.block;
    while (!state.failed && std::chrono::steady_clock::now() < deadline) {
        const std::uint64_t offset = (rng() % blocks) * config.block;
        auto r = co_await reader.read_at(f, offset, buffer.span());
        if (!r) {
            std::fprintf(stderr, "bench_reader: %s\n", r.error().message.c_str());
            state.failed = true;
            co_return;
        }
        state.bytes += config.block;
    }
}

} // namespace

int main(int argc, char** argv) {
    bench_config config;
    if (!parse_args(argc, argv, config)) {
        std::fprintf(stderr, "usage: bench_reader --file PATH --bs 1M --depth 32 [--seconds 3] "
                             "[--backend io_uring|pread]\n");
        return 2;
    }
    auto f = io::file::open(config.path);
    if (!f || f->size() < config.block) {
        std::fprintf(stderr, "bench_reader: %s\n", f ? "file smaller than one block" : f.error().message.c_str());
        return 1;
    }
    asio::io_context ctx(1);
    io::reader_options options;
    options.queue_depth = config.depth;
    options.force = config.force;
    auto reader = io::make_reader(ctx.get_executor(), options);
    if (!reader) {
        std::fprintf(stderr, "bench_reader: %s\n", reader.error().message.c_str());
        return 1;
    }
    bench_state state;
    const auto start = std::chrono::steady_clock::now();
    const auto deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                      std::chrono::duration<double>(config.seconds));
    for (unsigned i = 0; i < config.depth; ++i) {
        asio::co_spawn(ctx, worker(**reader, *f, config, 1000 + i, deadline, state), asio::detached);
    }
    ctx.run();
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("{\"bs\":%zu,\"depth\":%u,\"backend\":\"%s\",\"direct\":%s,\"bytes\":%llu,\"seconds\":%.3f,"
                "\"gbps\":%.4f}\n",
                config.block, config.depth, std::string((*reader)->backend_name()).c_str(),
                f->direct() ? "true" : "false", static_cast<unsigned long long>(state.bytes), elapsed,
                static_cast<double>(state.bytes) / elapsed / 1e9);
    return state.failed ? 1 : 0;
}
