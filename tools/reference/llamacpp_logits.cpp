// Runs a GGUF model through llama.cpp (libllama, CPU) on the token sequences of a reference fixture and compares
// its logits with the fixture's transformers logits (logits.bin): top-1 agreement, cosine, max |diff|, and the
// positions where the top-1 token differs, with the reference's top-1 minus top-2 gap there. Given a second
// logits file of the same layout (another runtime's, e.g. Sluice's), it also lists that one's misses and how
// many positions the two share. Not part of Sluice's build; tools/reference/llamacpp_agreement.sh compiles and runs it:
//
//     g++ -O2 -std=c++17 -I/work/llamacpp/include -I/work/llamacpp/ggml/include tools/reference/llamacpp_logits.cpp
//         -L/work/llamacpp/build/bin -lllama -lggml -lggml-base -Wl,-rpath,/work/llamacpp/build/bin -o llamacpp_logits
//
// Usage: llamacpp_logits MODEL.gguf SEQUENCES.txt REFERENCE_LOGITS.bin [--kv-f32] [--threads N] [--other FILE.bin]
//                        [--no-flash-attn] [--instead FILE.bin]
//   SEQUENCES.txt: one sequence per line, token ids separated by spaces (reference.json's "sequences").
//   Logits files: float32, sequences in order, each [length][n_vocab] (the fixtures' logits.bin layout).
//   --kv-f32: F32 KV cache (default F16, llama.cpp's default; the F32 sanity check wants F32).
//   --no-flash-attn: llama.cpp's default is "auto", which on the CPU turns flash attention on.
//   --instead: compare FILE.bin's logits instead of running llama.cpp (for a model llama.cpp refuses).
// Prints one "miss" line per position where a top-1 differs from the reference's (the reference's top-1 minus
// top-2 gap there, and by how much each runtime prefers its own pick to the reference's), then "summary positions=..
// top1=.. cosine_mean=.. cosine_min=.. max_rel_diff=.. misses=.." (with --other: "other_top1=.. other_cosine_mean=..
// other_misses=.. shared=..", shared being positions that both miss).
#include "llama.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <vector>

static std::vector<float> read_floats(const char* path) {
    std::ifstream in(path, std::ios::binary);
    const std::string raw(std::istreambuf_iterator<char>(in), {});
    std::vector<float> v(raw.size() / sizeof(float));
    std::memcpy(v.data(), raw.data(), v.size() * sizeof(float));
    return v;
}

static std::vector<std::vector<llama_token>> read_sequences(const char* path) {
    std::vector<std::vector<llama_token>> out;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
        std::istringstream ids(line);
        std::vector<llama_token> seq{std::istream_iterator<llama_token>(ids), {}};
        if (!seq.empty()) {
            out.push_back(std::move(seq));
        }
    }
    return out;
}

// Argmax and the gap between the largest and second largest of n values.
static size_t top1(const float* v, size_t n, double* gap = nullptr) {
    size_t best = 0;
    double a = -INFINITY, b = -INFINITY;
    for (size_t i = 0; i < n; ++i) {
        if (v[i] > a) {
            b = a;
            a = v[i];
            best = i;
        } else if (v[i] > b) {
            b = v[i];
        }
    }
    if (gap) {
        *gap = a - b;
    }
    return best;
}

static double cosine(const float* a, const float* b, size_t n) {
    double dot = 0, na = 0, nb = 0;
    for (size_t i = 0; i < n; ++i) {
        dot += double(a[i]) * b[i];
        na += double(a[i]) * a[i];
        nb += double(b[i]) * b[i];
    }
    return dot / std::sqrt(na * nb);
}

struct options {
    bool kv_f32 = false, flash_attn = true;
    int threads = 2;
    const char* other = nullptr;   // a second runtime's logits to compare position by position
    const char* instead = nullptr; // logits to compare in place of llama.cpp's
};

// Logits of every sequence, each decoded as one batch in cleared memory, concatenated.
static std::vector<float> llama_logits(const char* model_path, const std::vector<std::vector<llama_token>>& seqs,
                                       const options& opt, size_t& n_vocab) {
    llama_backend_init();
    auto mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    mp.progress_callback = [](float, void*) { return true; }; // no progress dots
    llama_model* model = llama_model_load_from_file(model_path, mp);
    if (!model) {
        std::fprintf(stderr, "llama.cpp could not load %s (its log above says why)\n", model_path);
        std::exit(1);
    }
    n_vocab = size_t(llama_vocab_n_tokens(llama_model_get_vocab(model)));
    size_t longest = 0;
    for (const auto& s : seqs) {
        longest = std::max(longest, s.size());
    }
    auto cp = llama_context_default_params();
    cp.n_ctx = cp.n_batch = cp.n_ubatch = uint32_t(std::max<size_t>(longest, 64));
    cp.n_threads = cp.n_threads_batch = opt.threads;
    if (opt.kv_f32) {
        cp.type_k = cp.type_v = GGML_TYPE_F32;
    }
    if (!opt.flash_attn) {
        cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    }
    llama_context* ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        std::fprintf(stderr, "llama_init_from_model failed\n");
        std::exit(1);
    }
    std::vector<float> all;
    for (const auto& s : seqs) {
        llama_memory_clear(llama_get_memory(ctx), true);
        llama_batch batch = llama_batch_init(int32_t(s.size()), 0, 1);
        for (size_t i = 0; i < s.size(); ++i) {
            batch.token[i] = s[i];
            batch.pos[i] = llama_pos(i);
            batch.n_seq_id[i] = 1;
            batch.seq_id[i][0] = 0;
            batch.logits[i] = 1; // logits at every position
        }
        batch.n_tokens = int32_t(s.size());
        if (int rc = llama_decode(ctx, batch); rc != 0) {
            std::fprintf(stderr, "llama_decode: %d\n", rc);
            std::exit(1);
        }
        for (size_t i = 0; i < s.size(); ++i) {
            const float* row = llama_get_logits_ith(ctx, int32_t(i));
            all.insert(all.end(), row, row + n_vocab);
        }
        llama_batch_free(batch);
    }
    llama_free(ctx);
    llama_model_free(model);
    return all;
}

// Prints the "miss" lines and the summary (see the top of the file); `other` may be empty.
static void compare(const std::vector<float>& ours, const std::vector<float>& ref, const std::vector<float>& other,
                    size_t n_pos, size_t n_vocab) {
    double max_abs = 0, max_diff = 0, cos_sum = 0, cos_min = 1, other_cos_sum = 0;
    std::set<size_t> misses, other_misses;
    for (size_t p = 0; p < n_pos; ++p) {
        const float* a = &ours[p * n_vocab];
        const float* b = &ref[p * n_vocab];
        const float* o = other.empty() ? b : &other[p * n_vocab];
        for (size_t i = 0; i < n_vocab; ++i) {
            max_abs = std::max(max_abs, std::fabs(double(b[i])));
            max_diff = std::max(max_diff, std::fabs(double(a[i]) - b[i]));
        }
        cos_sum += cosine(a, b, n_vocab);
        cos_min = std::min(cos_min, cosine(a, b, n_vocab));
        other_cos_sum += cosine(o, b, n_vocab);
        double ref_gap = 0;
        const size_t tb = top1(b, n_vocab, &ref_gap), ta = top1(a, n_vocab), to = top1(o, n_vocab);
        if (ta != tb) {
            misses.insert(p);
        }
        if (to != tb) {
            other_misses.insert(p);
        }
        if (ta != tb || to != tb) {
            std::printf("miss position=%zu reference_top1=%zu reference_top1_minus_top2=%.5f llamacpp_top1=%zu "
                        "llamacpp_prefers_by=%.5f",
                        p, tb, ref_gap, ta, double(a[ta]) - a[tb]);
            if (!other.empty()) {
                std::printf(" other_top1=%zu other_prefers_by=%.5f", to, double(o[to]) - o[tb]);
            }
            std::printf("\n");
        }
    }
    size_t shared = 0;
    for (size_t p : misses) {
        shared += other_misses.count(p);
    }
    std::printf("summary positions=%zu top1=%.4f cosine_mean=%.6f cosine_min=%.6f max_rel_diff=%.2e misses=%zu", n_pos,
                1.0 - double(misses.size()) / double(n_pos), cos_sum / double(n_pos), cos_min, max_diff / max_abs,
                misses.size());
    if (!other.empty()) {
        std::printf(" other_top1=%.4f other_cosine_mean=%.6f other_misses=%zu shared=%zu",
                    1.0 - double(other_misses.size()) / double(n_pos), other_cos_sum / double(n_pos),
                    other_misses.size(), shared);
    }
    std::printf("\n");
}

int main(int argc, char** argv) {
    options opt;
    for (int i = 4; i < argc; ++i) {
        const bool has_value = i + 1 < argc;
        if (!std::strcmp(argv[i], "--kv-f32")) {
            opt.kv_f32 = true;
        } else if (!std::strcmp(argv[i], "--no-flash-attn")) {
            opt.flash_attn = false;
        } else if (!std::strcmp(argv[i], "--threads") && has_value) {
            opt.threads = std::atoi(argv[++i]);
        } else if (!std::strcmp(argv[i], "--other") && has_value) {
            opt.other = argv[++i];
        } else if (!std::strcmp(argv[i], "--instead") && has_value) {
            opt.instead = argv[++i];
        } else {
            argc = 0;
        }
    }
    if (argc < 4) {
        std::fprintf(stderr, "usage: llamacpp_logits MODEL SEQUENCES REFERENCE [--kv-f32] [--no-flash-attn] "
                             "[--threads N] [--other FILE] [--instead FILE]\n");
        return 2;
    }
    // llama.cpp's warnings and errors only (its info log is long).
    llama_log_set(
        [](ggml_log_level level, const char* text, void*) {
            if (level == GGML_LOG_LEVEL_WARN || level == GGML_LOG_LEVEL_ERROR) {
                std::fputs(text, stderr);
            }
        },
        nullptr);
    const auto seqs = read_sequences(argv[2]);
    const auto ref = read_floats(argv[3]);
    size_t n_pos = 0, n_vocab = 0;
    for (const auto& s : seqs) {
        n_pos += s.size();
    }
    const auto ours = opt.instead ? read_floats(opt.instead) : llama_logits(argv[1], seqs, opt, n_vocab);
    if (opt.instead) {
        n_vocab = ref.size() / n_pos;
    }
    const auto other = opt.other ? read_floats(opt.other) : std::vector<float>{};
    if (ref.size() != n_pos * n_vocab || ours.size() != ref.size() || (opt.other && other.size() != ref.size())) {
        std::fprintf(stderr, "size mismatch: llama.cpp %zu floats (n_vocab %zu), reference %zu, other %zu\n",
                     ours.size(), n_vocab, ref.size(), other.size());
        return 1;
    }
    compare(ours, ref, other, n_pos, n_vocab);
    return 0;
}
