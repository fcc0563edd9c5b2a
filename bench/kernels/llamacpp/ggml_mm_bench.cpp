// Times ggml_mul_mat (llama.cpp's CPU backend) on the shapes of Sluice's bench/kernels/kernels_bench, same method:
//  decode : one activation row against as many distinct weight matrices as fit in 768 MiB (at least two),
//           all in one graph (one mul_mat node per matrix, as in a forward pass), GB/s of weight bytes,
//           activation quantization inside the timing (ggml quantizes src1 inside each mul_mat); best of 3
//           samples of >= 0.25 s.
//  prefill: 64 / 512 activation rows against one 4096 x 4096 matrix, GFLOP/s = 2*rows*cols*tokens/t, best of 2
//           after a warm-up, repeated 3 times (best).
// Usage: ggml_mm_bench decode|prefill|lowbit <threads> <plain|repack> [FORMATS]
//  lowbit : decode on the 2048 x 768 expert shape and 64-token prefill on it for the 2- and 3-bit formats and
//           MXFP4, as kernels_bench lowbit; FORMATS (comma-separated ggml names, e.g. q2_K,q3_K,mxfp4) keeps
//           only those rows.
// "repack" puts the weights in the CPU_REPACK buffer (what llama-cli / llama-bench use by default; on x86
// it repacks Q4_K and Q2_K to 8x8 interleaved rows, MXFP4 too; Q6_K, Q8_0, F16 and the IQ2/IQ3/IQ1 formats are
// not repacked on x86 and stay plain).
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

static double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static ggml_backend_buffer_type_t repack_buft() {
    ggml_backend_dev_t dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    auto reg = ggml_backend_dev_backend_reg(dev);
    auto fn = (ggml_backend_dev_get_extra_bufts_t)ggml_backend_reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts");
    for (auto* p = fn(dev); p && *p; ++p) {
        if (std::string(ggml_backend_buft_name(*p)) == "CPU_REPACK") return *p;
    }
    return nullptr;
}

struct setup {
    ggml_context* wctx = nullptr;
    ggml_context* gctx = nullptr;
    ggml_backend_buffer_t wbuf = nullptr, gbuf = nullptr;
    ggml_cgraph* graph = nullptr;
    size_t mat_bytes = 0, n_mats = 0;
    bool repacked = false;
};

// Plausible weight bytes (0x20..0x3b, as Sluice's bench): f16 fields are small normals, q8 values in range.
static void fill(std::vector<uint8_t>& v) {
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (auto& b : v) {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        b = (uint8_t)(0x20 + (s >> 32) % 28);
    }
}

static setup make(ggml_type type, int64_t cols, int64_t rows, int64_t tokens, size_t n_mats, bool repack) {
    setup st;
    st.mat_bytes = ggml_row_size(type, cols) * rows;
    st.n_mats = n_mats;
    ggml_init_params wp{ggml_tensor_overhead() * (n_mats + 4), nullptr, true};
    st.wctx = ggml_init(wp);
    std::vector<ggml_tensor*> ws;
    for (size_t i = 0; i < n_mats; ++i) ws.push_back(ggml_new_tensor_2d(st.wctx, type, cols, rows));
    ggml_backend_buffer_type_t buft = ggml_backend_cpu_buffer_type();
    // The types with an x86 repacked layout in build d32676d (ggml-cpu/repack.cpp): Q4_K (AVX2), Q2_K (AVX-512),
    // MXFP4, IQ4_NL and Q4_0; llama.cpp's loader places other types in the plain buffer, and so does this bench.
    // Whether a tensor was repacked is read back from the buffer (st.repacked) and printed.
    const bool has_repack = type == GGML_TYPE_Q4_K || type == GGML_TYPE_Q2_K || type == GGML_TYPE_MXFP4 ||
                            type == GGML_TYPE_IQ4_NL || type == GGML_TYPE_Q4_0;
    if (repack && has_repack && rows % 8 == 0) {
        if (auto rb = repack_buft()) buft = rb;
    }
    st.wbuf = ggml_backend_alloc_ctx_tensors_from_buft(st.wctx, buft);
    if (!st.wbuf) { std::fprintf(stderr, "alloc failed\n"); std::exit(1); }
    std::vector<uint8_t> bytes(st.mat_bytes);
    fill(bytes);
    for (auto* w : ws) ggml_backend_tensor_set(w, bytes.data(), 0, st.mat_bytes);
    st.repacked = ws[0]->extra != nullptr;

    ggml_init_params gp{ggml_tensor_overhead() * (2 * n_mats + 8) + ggml_graph_overhead_custom(n_mats + 8, false),
                        nullptr, true};
    st.gctx = ggml_init(gp);
    ggml_tensor* x = ggml_new_tensor_2d(st.gctx, GGML_TYPE_F32, cols, tokens);
    st.graph = ggml_new_graph_custom(st.gctx, n_mats + 8, false);
    for (auto* w : ws) ggml_build_forward_expand(st.graph, ggml_mul_mat(st.gctx, w, x));
    st.gbuf = ggml_backend_alloc_ctx_tensors_from_buft(st.gctx, ggml_backend_cpu_buffer_type());
    std::vector<float> xv(cols * tokens, 0.5f);
    ggml_backend_tensor_set(x, xv.data(), 0, xv.size() * sizeof(float));
    return st;
}

static void release(setup& st) {
    ggml_backend_buffer_free(st.gbuf);
    ggml_backend_buffer_free(st.wbuf);
    ggml_free(st.gctx);
    ggml_free(st.wctx);
}

int main(int argc, char** argv) {
    if (argc < 4) { std::fprintf(stderr, "usage: %s decode|prefill threads plain|repack\n", argv[0]); return 1; }
    const std::string mode = argv[1];
    const int threads = std::atoi(argv[2]);
    const bool repack = std::string(argv[3]) == "repack";
    ggml_backend_t be = ggml_backend_cpu_init();
    ggml_backend_cpu_set_n_threads(be, threads);
    const size_t target = 768ull << 20;
    const ggml_type types[] = {GGML_TYPE_Q4_K, GGML_TYPE_Q6_K, GGML_TYPE_Q8_0, GGML_TYPE_F16};
    if (mode == "lowbit") {
        const ggml_type low[] = {GGML_TYPE_Q4_K,   GGML_TYPE_Q2_K,    GGML_TYPE_Q3_K,  GGML_TYPE_IQ2_XXS,
                                 GGML_TYPE_IQ2_XS, GGML_TYPE_IQ2_S,   GGML_TYPE_IQ3_XXS, GGML_TYPE_IQ3_S,
                                 GGML_TYPE_IQ1_S,  GGML_TYPE_IQ1_M,   GGML_TYPE_MXFP4};
        std::printf("| format | matrix | ggml %d thread(s) decode GB/s | prefill 64 GFLOP/s | layout |\n"
                    "|---|---|---:|---:|---|\n", threads);
        const std::string only = argc > 4 ? "," + std::string(argv[4]) + "," : "";
        for (ggml_type t : low) {
            if (!only.empty() && only.find("," + std::string(ggml_type_name(t)) + ",") == std::string::npos) {
                continue;
            }
            const size_t mb = ggml_row_size(t, 2048) * 768;
            setup st = make(t, 2048, 768, 1, std::max<size_t>(2, target / mb), repack);
            ggml_backend_graph_compute(be, st.graph);
            double best = 0;
            for (int rep = 0; rep < 3; ++rep) {
                size_t passes = 0;
                const double t0 = now();
                double dt = 0;
                while (dt < 0.25) {
                    ggml_backend_graph_compute(be, st.graph);
                    ++passes;
                    dt = now() - t0;
                }
                best = std::max(best, (double)(passes * st.n_mats * mb) / dt / 1e9);
            }
            const bool repacked = st.repacked;
            release(st);
            setup pf = make(t, 2048, 768, 64, 1, repack);
            ggml_backend_graph_compute(be, pf.graph);
            double fastest = 1e30;
            for (int rep = 0; rep < 6; ++rep) {
                const double t0 = now();
                ggml_backend_graph_compute(be, pf.graph);
                fastest = std::min(fastest, now() - t0);
            }
            release(pf);
            std::printf("| %s | 2048 x 768 | %.1f | %.1f | %s |\n", ggml_type_name(t), best,
                        2.0 * 2048 * 768 * 64 / fastest / 1e9, repacked ? "repacked" : "plain");
            std::fflush(stdout);
        }
    } else if (mode == "decode") {
        struct { int64_t cols, rows; } shapes[] = {{2048, 768}, {768, 2048}, {2048, 151936}, {4096, 4096}};
        std::printf("| format | matrix (cols x rows) | MiB/matrix | ggml %d thread(s) GB/s | layout |\n", threads);
        std::printf("|---|---|---:|---:|---|\n");
        for (ggml_type t : types) {
            for (auto s : shapes) {
                const size_t mb = ggml_row_size(t, s.cols) * s.rows;
                const size_t n = std::max<size_t>(2, target / mb);
                setup st = make(t, s.cols, s.rows, 1, n, repack);
                ggml_backend_graph_compute(be, st.graph); // warm-up
                double best = 0;
                for (int rep = 0; rep < 3; ++rep) {
                    size_t passes = 0;
                    const double t0 = now();
                    double dt = 0;
                    while (dt < 0.25) {
                        ggml_backend_graph_compute(be, st.graph);
                        ++passes;
                        dt = now() - t0;
                    }
                    best = std::max(best, (double)(passes * n * mb) / dt / 1e9);
                }
                std::printf("| %s | %lld x %lld | %.1f | %.1f | %s |\n", ggml_type_name(t), (long long)s.cols,
                            (long long)s.rows, mb / 1048576.0, best, st.repacked ? "repacked" : "plain");
                std::fflush(stdout);
                release(st);
            }
        }
    } else {
        std::printf("| format | matrix | tokens | ggml %d thread(s) GFLOP/s | layout |\n|---|---|---:|---:|---|\n", threads);
        for (ggml_type t : types) {
            for (int64_t tokens : {64, 512}) {
                setup st = make(t, 4096, 4096, tokens, 1, repack);
                ggml_backend_graph_compute(be, st.graph);
                double best = 1e30;
                for (int rep = 0; rep < 6; ++rep) {
                    const double t0 = now();
                    ggml_backend_graph_compute(be, st.graph);
                    best = std::min(best, now() - t0);
                }
                std::printf("| %s | 4096 x 4096 | %lld | %.1f | %s |\n", ggml_type_name(t), (long long)tokens,
                            2.0 * 4096 * 4096 * tokens / best / 1e9, st.repacked ? "repacked" : "plain");
                std::fflush(stdout);
                release(st);
            }
        }
    }
    ggml_backend_free(be);
    return 0;
}
