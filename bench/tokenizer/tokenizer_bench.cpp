// Tokenizer benchmark: single-core encode throughput on English text (10 MB), the time to encode a
// 100k-token prompt, and decode throughput, next to a bound measured in the same run: one pass that only
// decodes UTF-8 and looks up character classes (the least work any pre-tokenizer must do).
// Usage: tokenizer_bench [MODEL...]  (default: the gpt-2 fixture GGUF and the npm-cached tokenizer.json files)
#include "runtime/tokenizer/loaders.hpp"
#include "runtime/tokenizer/unicode.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace tk = sluice::tokenizer;
namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

/// English text: the license texts Debian ships, repeated up to `bytes`.
std::string english_text(std::size_t bytes) {
    std::string corpus;
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator("/usr/share/common-licenses")) {
        if (e.is_regular_file())
            files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& p : files) {
        std::ifstream in(p, std::ios::binary);
        std::ostringstream ss;
        ss << in.rdbuf();
        corpus += ss.str();
    }
    if (corpus.empty())
        corpus = "The quick brown fox jumps over the lazy dog. ";
    std::string out;
    while (out.size() < bytes)
        out += corpus;
    out.resize(bytes);
    return out;
}

/// Best wall time of `reps` runs of `f`, in seconds.
template <class F>
double best_of(int reps, F&& f) {
    double best = 1e30;
    for (int i = 0; i < reps; ++i) {
        const auto t0 = clock_type::now();
        f();
        best = std::min(best, std::chrono::duration<double>(clock_type::now() - t0).count());
    }
    return best;
}

double classify_pass_seconds(const std::string& text) {
    volatile unsigned sink = 0;
    return best_of(3, [&] {
        unsigned acc = 0;
        for (std::size_t pos = 0; pos < text.size();) {
            std::size_t len = 1;
            acc += tk::flags_of(tk::decode_utf8(text, pos, len));
            pos += len;
        }
        sink = sink + acc;
    });
}

void bench_model(const fs::path& path, const std::string& text) {
    const auto t0 = clock_type::now();
    auto tok = tk::load_tokenizer(path);
    const double load_s = std::chrono::duration<double>(clock_type::now() - t0).count();
    if (!tok) {
        std::printf("%s: %s\n", path.string().c_str(), tok.error().message.c_str());
        return;
    }
    std::vector<tk::token_id> ids;
    const double enc_s = best_of(3, [&] {
        ids.clear();
        tok->encode(text, {.parse_special = false}, ids);
    });
    const double mb = static_cast<double>(text.size()) / 1e6;
    // A prompt of about 100k tokens: the prefix of the text holding that many.
    const std::size_t prompt_bytes =
        static_cast<std::size_t>(static_cast<double>(text.size()) * 100000.0 / static_cast<double>(ids.size()));
    const std::string prompt = text.substr(0, std::min(prompt_bytes, text.size()));
    std::size_t prompt_tokens = 0;
    const double prompt_s = best_of(5, [&] { prompt_tokens = tok->encode(prompt, {.parse_special = true}).size(); });
    std::string back;
    const double dec_s = best_of(3, [&] { back = tok->decode(ids); });
    std::printf("%s\n  load %.2f s, %zu tokens\n", path.string().c_str(), load_s, tok->size());
    std::printf("  encode English: %.1f MB/s (%.2f M tokens/s, %.2f bytes/token)\n", mb / enc_s,
                static_cast<double>(ids.size()) / enc_s / 1e6, static_cast<double>(text.size()) / ids.size());
    std::printf("  encode %zu-token prompt: %.1f ms\n", prompt_tokens, prompt_s * 1e3);
    std::printf("  decode: %.1f MB/s%s\n", mb / dec_s, back == text ? "" : " (ROUND TRIP MISMATCH)");
}

} // namespace

int main(int argc, char** argv) {
    std::vector<fs::path> models;
    for (int i = 1; i < argc; ++i)
        models.emplace_back(argv[i]);
    if (models.empty()) {
        models.push_back(fs::path(SLUICE_SHARED_DIR) / "fixtures/vocab/ggml-vocab-gpt-2.gguf");
        for (const char* name : {"llama3", "qwen3", "deepseek_v3", "gptoss"}) {
            const fs::path p = fs::path(SLUICE_NPM_CACHE) / name / "models/tokenizer.json";
            if (fs::exists(p))
                models.push_back(p);
        }
    }
    const std::string text = english_text(10 * 1000 * 1000);
    const double bound_s = classify_pass_seconds(text);
    std::printf("text: %.1f MB of English (Debian license texts, repeated), one thread\n", text.size() / 1e6);
    std::printf("bound: UTF-8 decode + class lookup alone: %.1f MB/s\n", text.size() / 1e6 / bound_s);
    for (const auto& m : models)
        bench_model(m, text);
    return 0;
}
