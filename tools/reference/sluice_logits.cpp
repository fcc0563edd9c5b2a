// Writes Sluice's logits for token sequences as raw float32 ([sequence][position][n_vocab], the fixtures'
// logits.bin layout), each sequence evaluated in one batch in a fresh session with the settings of
// tests/fidelity/fidelity_test.cpp (batch 64, context 256, 2 threads, F16 KV cache, or F32 with --kv-f32), so
// tools/reference/llamacpp_agreement.sh can compare Sluice's misses with llama.cpp's position by position.
// Not part of Sluice's build; the script compiles it against build/ci's libraries.
//
// Usage: sluice_logits MODEL.gguf SEQUENCES.txt OUT.bin [--kv-f32]
//   SEQUENCES.txt: one sequence per line, token ids separated by spaces.
#include "runtime/engine/session.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

namespace {

template <class T, class F>
T run_sync(F make) {
    boost::asio::io_context io;
    auto fut = boost::asio::co_spawn(io, make(), boost::asio::use_future);
    io.run();
    return fut.get();
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: %s MODEL SEQUENCES OUT [--kv-f32]\n", argv[0]);
        return 2;
    }
    sluice::model_options opts;
    opts.n_batch = 64;
    opts.n_ctx = 256;
    opts.n_threads = 2;
    opts.kv_type = argc > 4 && !std::strcmp(argv[4], "--kv-f32") ? sluice::kv_cache_type::f32
                                                                 : sluice::kv_cache_type::f16;
    auto m =
        run_sync<sluice::result<std::shared_ptr<sluice::model>>>([&] { return sluice::model::load(argv[1], opts); });
    if (!m) {
        std::fprintf(stderr, "%s\n", m.error().message.c_str());
        return 1;
    }
    std::ifstream in(argv[2]);
    std::ofstream out(argv[3], std::ios::binary);
    for (std::string line; std::getline(in, line);) {
        std::istringstream ids(line);
        const std::vector<std::int32_t> seq{std::istream_iterator<std::int32_t>(ids), {}};
        if (seq.empty()) {
            continue;
        }
        sluice::session s(*m);
        std::vector<float> logits;
        auto r = run_sync<sluice::result<void>>([&] { return s.evaluate(seq, logits); });
        if (!r) {
            std::fprintf(stderr, "%s\n", r.error().message.c_str());
            return 1;
        }
        out.write(reinterpret_cast<const char*>(logits.data()), std::streamsize(logits.size() * sizeof(float)));
    }
    return 0;
}
