// Tiny random-weight models of every architecture for engine tests, written once per test process.
#pragma once

#include "kernels/quant_type.hpp"
#include "runtime/engine/model.hpp"
#include "sluice/session.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace sluice::test {

/// Writes (once per process) a tiny model of `arch` with weights of `type` and returns its path.
/// `mutate` may edit the metadata and tensor list before writing (to make broken files).
std::filesystem::path tiny_model(const std::string& arch, kernels::quant_type type, std::uint64_t seed = 1,
                                 const std::string& variant = "", std::function<void(void*)> mutate = {});

/// Runs `aw` to completion on a fresh io_context and returns its value.
template <class T>
T run_sync(std::function<boost::asio::awaitable<T>()> make) {
    boost::asio::io_context io;
    auto fut = boost::asio::co_spawn(io, make(), boost::asio::use_future);
    io.run();
    return fut.get();
}

/// What one generation gave: its events and their text, its tokens and summary, or the error that ended it.
struct generation_outcome {
    std::vector<std::int32_t> tokens;
    std::vector<token_event> events;
    std::string text;
    generation_summary summary;
    std::string error;
};

/// Runs `req` on `s` to its end on a fresh io_context, pulling every event.
generation_outcome run_generation(session& s, generate_request req);

/// Loads `path` with `n_threads` compute threads and the given batch size.
std::shared_ptr<model> load_model(const std::filesystem::path& path, std::uint32_t n_batch = 64,
                                  std::uint32_t n_ctx = 256, std::size_t n_threads = 2,
                                  kernels::quant_type kv_type = kernels::quant_type::f16);

/// `n` token ids drawn uniformly from [0, n_vocab) by a generator seeded with `seed`.
std::vector<std::int32_t> random_tokens(std::size_t n, std::uint32_t seed, std::int32_t n_vocab = 512);

} // namespace sluice::test
