// Grammar benchmark: what constrained sampling adds to each generated token over the Qwen3 vocabulary (151,669
// tokens, logits rows of 151,936), replaying documents token by token as a generation would: the mask for the
// current state (token_filter::allowed), the masked copy of a logits row the session samples from, and the
// matcher's advance over the chosen token. Each replay starts a fresh filter, as each request does, so every
// transition and mask is computed cold once per generation.
// Usage: grammar_bench [REPEATS] [TOKENIZER_JSON]  (default: 5, the npm-cached Qwen3 tokenizer.json); with
// GRAMMAR_BENCH_SLOWEST=1 in the environment it also prints the five slowest tokens of each document.
#include "bench/bench_main.hpp"
#include "runtime/grammar/json_schema.hpp"
#include "runtime/grammar/token_mask.hpp"
#include "runtime/tokenizer/loaders.hpp"
#include "runtime/tokenizer/tokenizer.hpp"

#include <boost/json/parse.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

namespace {

namespace g = sluice::grammar;
using clock_type = std::chrono::steady_clock;

constexpr std::size_t n_logits = 151936; // Qwen3-30B-A3B's logits row

double ms_since(clock_type::time_point t0) {
    return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

struct workload {
    const char* name;
    std::string grammar; // GBNF
    std::string document;
};

std::vector<workload> workloads() {
    const auto schema = boost::json::parse(R"({"type":"object","properties":{
        "name":{"type":"string"},"age":{"type":"integer"},"email":{"type":"string"},
        "address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"},
            "zip":{"type":"string","maxLength":10}},"required":["street","city"]},
        "tags":{"type":"array","items":{"type":"string"}},"score":{"type":"number"},
        "status":{"enum":["active","inactive","banned"]},"verified":{"type":"boolean"}},
        "required":["name","age","address","tags","status"],"additionalProperties":false})");
    const std::string person =
        R"({"name": "Margaret Hamilton", "age": 88, "email": "margaret.hamilton@example.org", "address": {"street": )"
        R"("1 Memorial Drive", "city": "Cambridge, Massachusetts", "zip": "02142"}, "tags": ["software engineering", )"
        R"("Apollo guidance computer", "error detection and recovery", "priority scheduling"], "score": 97.25, )"
        R"("status": "active", "verified": true})";
    const std::string prose =
        R"({"title": "On the Origin of Species", "summary": "Darwin argues that populations evolve over the course )"
        R"(of generations through a process of natural selection, presenting a body of evidence that the diversity )"
        R"(of life arose by common descent through a branching pattern of evolution. He included evidence that he )"
        R"(had collected on the Beagle expedition in the 1830s and his later findings from research, correspondence )"
        R"(and experimentation.", "year": 1859, "chapters": [{"n": 1, "title": "Variation under Domestication"}, )"
        R"({"n": 2, "title": "Variation under Nature"}, {"n": 3, "title": "Struggle for Existence"}]})";
    return {{"json_schema (person record)", *g::json_schema_to_gbnf(schema), person},
            {"json_object (prose and nesting)", g::json_object_gbnf(), prose}};
}

struct replay_stats {
    std::vector<double> per_token_ms; // mask + masked copy + advance, per token
    double mask_ms = 0, copy_ms = 0, accept_ms = 0;
    std::size_t cold_masks = 0;
};

replay_stats replay(const workload& w, const std::shared_ptr<const g::grammar>& grammar,
                    const std::shared_ptr<const g::token_trie>& trie, const std::vector<std::int32_t>& tokens,
                    const std::vector<float>& logits) {
    replay_stats s;
    g::token_filter filter(grammar, trie);
    std::vector<float> masked(logits.size());
    const void* last_mask = nullptr;
    for (const auto t : tokens) {
        const auto t0 = clock_type::now();
        const auto& mask = filter.allowed();
        const auto t1 = clock_type::now();
        mask.apply(logits, masked);
        const auto t2 = clock_type::now();
        if (!mask.allows(t) || !filter.accept(t)) {
            std::fprintf(stderr, "grammar_bench: %s: the document leaves the grammar at token %d\n", w.name, t);
            std::exit(1);
        }
        const auto t3 = clock_type::now();
        s.mask_ms += std::chrono::duration<double, std::milli>(t1 - t0).count();
        s.copy_ms += std::chrono::duration<double, std::milli>(t2 - t1).count();
        s.accept_ms += std::chrono::duration<double, std::milli>(t3 - t2).count();
        s.per_token_ms.push_back(std::chrono::duration<double, std::milli>(t3 - t0).count());
        s.cold_masks += &mask != last_mask ? 1 : 0;
        last_mask = &mask;
    }
    volatile float sink = masked[0];
    (void)sink;
    return s;
}

} // namespace

int main(int argc, char** argv) {
    const auto repeats = sluice::bench::count_arg("grammar_bench", argc, argv, 1, 5);
    if (!repeats || *repeats == 0) {
        return 2;
    }
    const std::filesystem::path path =
        argc > 2 ? std::filesystem::path(argv[2])
                 : std::filesystem::path(SLUICE_NPM_CACHE) / "qwen3/models/tokenizer.json";
    auto tok = sluice::tokenizer::load_tokenizer(path);
    if (!tok) {
        std::fprintf(stderr, "grammar_bench: %s\n", tok.error().message.c_str());
        return 1;
    }
    auto t0 = clock_type::now();
    const auto trie = std::make_shared<const g::token_trie>(*tok, n_logits);
    std::printf("vocabulary: %zu tokens, trie of %zu nodes built in %.1f ms (once per model)\n", tok->size(),
                trie->nodes().size(), ms_since(t0));
    std::vector<float> logits(n_logits);
    for (std::size_t i = 0; i < logits.size(); ++i) {
        logits[i] = static_cast<float>((i * 2654435761U) % 1000) / 100.0f;
    }
    for (const auto& w : workloads()) {
        auto grammar = g::parse_gbnf(w.grammar);
        if (!grammar) {
            std::fprintf(stderr, "grammar_bench: %s\n", grammar.error().message.c_str());
            return 1;
        }
        const auto tokens = tok->encode(w.document, {});
        std::vector<double> all;
        replay_stats best;
        double best_total = std::numeric_limits<double>::infinity();
        for (unsigned long r = 0; r < *repeats; ++r) {
            auto s = replay(w, *grammar, trie, tokens, logits);
            double total = 0;
            for (const double v : s.per_token_ms) {
                total += v;
            }
            all.insert(all.end(), s.per_token_ms.begin(), s.per_token_ms.end());
            if (total < best_total) {
                best_total = total;
                best = std::move(s);
            }
        }
        if (std::getenv("GRAMMAR_BENCH_SLOWEST") != nullptr) {
            // The five slowest tokens of the best generation, with the text before them.
            std::vector<std::size_t> order(tokens.size());
            for (std::size_t i = 0; i < order.size(); ++i) {
                order[i] = i;
            }
            std::sort(order.begin(), order.end(),
                      [&](std::size_t a, std::size_t b) { return best.per_token_ms[a] > best.per_token_ms[b]; });
            for (std::size_t k = 0; k < 5 && k < order.size(); ++k) {
                const auto i = order[k];
                const auto before = tok->decode(std::span(tokens.data(), i));
                std::printf("  slow: %.3f ms before token %zu, after ...%s\n", best.per_token_ms[i], i,
                            before.substr(before.size() > 30 ? before.size() - 30 : 0).c_str());
            }
        }
        std::sort(all.begin(), all.end());
        const double n = static_cast<double>(tokens.size());
        std::printf("\n%s: %zu tokens, %zu distinct masks computed per generation\n", w.name, tokens.size(),
                    best.cold_masks);
        std::printf("  per token, best of %lu generations: %.3f ms (mask %.3f, masked logits copy %.3f, advance %.4f)\n",
                    *repeats, best_total / n, best.mask_ms / n, best.copy_ms / n, best.accept_ms / n);
        std::printf("  per token over all generations: median %.3f ms, p90 %.3f ms, max %.3f ms\n",
                    all[all.size() / 2], all[all.size() * 9 / 10], all.back());
        std::printf("  against a 46.6 ms decode step (Qwen3-30B-A3B geometry, 21.44 tokens/s): %.2f %%\n",
                    100.0 * best_total / n / 46.6);
    }
    return 0;
}
