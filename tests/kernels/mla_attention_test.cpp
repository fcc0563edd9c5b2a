// MLA attention: the plain (prefill) and absorbed (decode) forms against a double-precision reference of the
// decompressed attention, and against each other, for F16 and F32 latent caches at every ISA level.
#include "kernels/cpu/axpy.hpp"
#include "kernels/mla_attention.hpp"
#include "kernels/quant.hpp"
#include "tests/kernels/test_data.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace sluice::kernels {
namespace {

struct mla_case {
    std::size_t n_heads, rank, rope, nope, v;
    std::size_t n_tokens, first_pos;
};

// Random weights, latent cache and queries of one case, with the cache rounded through its type.
struct mla_data {
    mla_shape s;
    std::vector<float> w_kb;    ///< [head][rank][nope] (GGUF attn_k_b: per head, rank rows of nope values)
    std::vector<float> w_vb;    ///< [head][v][rank]    (GGUF attn_v_b: per head, v rows of rank values)
    std::vector<float> cache;   ///< [pos][rank + rope], the values the cache holds (rounded)
    std::vector<std::byte> raw; ///< the cache in its type
    std::vector<float> q_nope;  ///< [tok][head][nope]
    std::vector<float> q_pe;    ///< [tok][head][rope]
};

mla_data make_data(std::mt19937& rng, const mla_case& c, quant_type type) {
    mla_data d;
    auto& s = d.s;
    s.n_tokens = c.n_tokens;
    s.n_heads = c.n_heads;
    s.rank = c.rank;
    s.rope_dim = c.rope;
    s.nope_dim = c.nope;
    s.v_dim = c.v;
    s.first_pos = c.first_pos;
    s.kv_len = c.first_pos + c.n_tokens;
    s.cache_stride = c.rank + c.rope + 3; // padded rows: the stride is honoured
    s.scale = 1.3f / std::sqrt(static_cast<float>(c.nope + c.rope));
    d.w_kb = test::random_floats(rng, c.n_heads * c.rank * c.nope);
    d.w_vb = test::random_floats(rng, c.n_heads * c.v * c.rank);
    for (auto& x : d.w_kb) {
        x *= 0.3f;
    }
    const auto values = test::random_floats(rng, s.kv_len * s.cache_stride);
    const std::size_t elem = type == quant_type::f16 ? 2 : 4;
    d.raw.resize(values.size() * elem);
    quantize_row(type, values.data(), d.raw.data(), values.size());
    d.cache.resize(values.size());
    dequantize_row(type, d.raw.data(), d.cache.data(), values.size());
    d.q_nope = test::random_floats(rng, c.n_tokens * c.n_heads * c.nope);
    d.q_pe = test::random_floats(rng, c.n_tokens * c.n_heads * c.rope);
    return d;
}

// Decompressed attention in double: out [tok][head][v].
std::vector<double> reference(const mla_data& d) {
    const auto& s = d.s;
    std::vector<double> out(s.n_tokens * s.n_heads * s.v_dim, 0.0);
    for (std::size_t t = 0; t < s.n_tokens; ++t) {
        const std::size_t visible = s.first_pos + t + 1;
        for (std::size_t h = 0; h < s.n_heads; ++h) {
            std::vector<double> sc(visible);
            double max = -INFINITY;
            for (std::size_t j = 0; j < visible; ++j) {
                const float* c = d.cache.data() + j * s.cache_stride;
                double dot = 0;
                for (std::size_t i = 0; i < s.nope_dim; ++i) {
                    double k = 0;
                    for (std::size_t r = 0; r < s.rank; ++r) {
                        k += static_cast<double>(d.w_kb[(h * s.rank + r) * s.nope_dim + i]) * c[r];
                    }
                    dot += k * d.q_nope[(t * s.n_heads + h) * s.nope_dim + i];
                }
                for (std::size_t i = 0; i < s.rope_dim; ++i) {
                    dot += static_cast<double>(c[s.rank + i]) * d.q_pe[(t * s.n_heads + h) * s.rope_dim + i];
                }
                sc[j] = dot * s.scale;
                max = std::max(max, sc[j]);
            }
            double sum = 0;
            for (auto& x : sc) {
                x = std::exp(x - max);
                sum += x;
            }
            for (std::size_t j = 0; j < visible; ++j) {
                const float* c = d.cache.data() + j * s.cache_stride;
                for (std::size_t e = 0; e < s.v_dim; ++e) {
                    double v = 0;
                    for (std::size_t r = 0; r < s.rank; ++r) {
                        v += static_cast<double>(d.w_vb[(h * s.v_dim + e) * s.rank + r]) * c[r];
                    }
                    out[(t * s.n_heads + h) * s.v_dim + e] += sc[j] / sum * v;
                }
            }
        }
    }
    return out;
}

// The plain form as a runtime drives it: decompress keys and values per head from the latents, then attend.
std::vector<float> run_plain(const mla_data& d, quant_type type, isa_level isa) {
    const auto& s = d.s;
    std::vector<float> k_nope(s.kv_len * s.n_heads * s.nope_dim), v(s.kv_len * s.n_heads * s.v_dim);
    for (std::size_t j = 0; j < s.kv_len; ++j) {
        const float* c = d.cache.data() + j * s.cache_stride;
        for (std::size_t h = 0; h < s.n_heads; ++h) {
            for (std::size_t i = 0; i < s.nope_dim; ++i) {
                float k = 0;
                for (std::size_t r = 0; r < s.rank; ++r) {
                    k += d.w_kb[(h * s.rank + r) * s.nope_dim + i] * c[r];
                }
                k_nope[(j * s.n_heads + h) * s.nope_dim + i] = k;
            }
            for (std::size_t e = 0; e < s.v_dim; ++e) {
                float x = 0;
                for (std::size_t r = 0; r < s.rank; ++r) {
                    x += d.w_vb[(h * s.v_dim + e) * s.rank + r] * c[r];
                }
                v[(j * s.n_heads + h) * s.v_dim + e] = x;
            }
        }
    }
    const std::size_t qk = s.nope_dim + s.rope_dim;
    std::vector<float> q(s.n_tokens * s.n_heads * qk);
    for (std::size_t th = 0; th < s.n_tokens * s.n_heads; ++th) {
        std::copy_n(d.q_nope.data() + th * s.nope_dim, s.nope_dim, q.data() + th * qk);
        std::copy_n(d.q_pe.data() + th * s.rope_dim, s.rope_dim, q.data() + th * qk + s.nope_dim);
    }
    std::vector<float> out(s.n_tokens * s.n_heads * s.v_dim, -1.0f);
    const std::size_t split = s.n_heads / 2; // two head ranges, as two threads would take them
    mla_attention_plain(s, type, q.data(), k_nope.data(), v.data(), d.raw.data(), out.data(), 0, split, isa);
    mla_attention_plain(s, type, q.data(), k_nope.data(), v.data(), d.raw.data(), out.data(), split, s.n_heads, isa);
    return out;
}

// The absorbed form: W_kb folded into the query, attention over whole cache rows, W_vb applied to the latents.
std::vector<float> run_absorbed(const mla_data& d, quant_type type, isa_level isa) {
    const auto& s = d.s;
    const std::size_t width = s.rank + s.rope_dim;
    std::vector<float> q(s.n_tokens * s.n_heads * width);
    for (std::size_t t = 0; t < s.n_tokens; ++t) {
        for (std::size_t h = 0; h < s.n_heads; ++h) {
            const std::size_t th = t * s.n_heads + h;
            for (std::size_t r = 0; r < s.rank; ++r) {
                float a = 0;
                for (std::size_t i = 0; i < s.nope_dim; ++i) {
                    a += d.w_kb[(h * s.rank + r) * s.nope_dim + i] * d.q_nope[th * s.nope_dim + i];
                }
                q[th * width + r] = a;
            }
            std::copy_n(d.q_pe.data() + th * s.rope_dim, s.rope_dim, q.data() + th * width + s.rank);
        }
    }
    std::vector<float> latent(s.n_tokens * s.n_heads * s.rank, -1.0f);
    const std::size_t split = s.n_heads / 2;
    mla_attention_absorbed(s, type, q.data(), d.raw.data(), latent.data(), 0, split, isa);
    mla_attention_absorbed(s, type, q.data(), d.raw.data(), latent.data(), split, s.n_heads, isa);
    std::vector<float> out(s.n_tokens * s.n_heads * s.v_dim);
    for (std::size_t th = 0; th < s.n_tokens * s.n_heads; ++th) {
        const std::size_t h = th % s.n_heads;
        for (std::size_t e = 0; e < s.v_dim; ++e) {
            float x = 0;
            for (std::size_t r = 0; r < s.rank; ++r) {
                x += d.w_vb[(h * s.v_dim + e) * s.rank + r] * latent[th * s.rank + r];
            }
            out[th * s.v_dim + e] = x;
        }
    }
    return out;
}

double max_abs(const std::vector<double>& v) {
    double m = 0;
    for (double x : v) {
        m = std::max(m, std::fabs(x));
    }
    return m;
}

TEST(mla_attention, plain_and_absorbed_forms_match_reference_and_each_other) {
    std::mt19937 rng(31);
    // The fixture's shape (rank 16, rope 8, nope 16, v 12), DeepSeek-V3's per-head proportions scaled down, and an
    // odd one; decode (1 token after a cache) and causal prefill (several tokens, with and without a prefix).
    const mla_case cases[] = {
        {4, 16, 8, 16, 12, 1, 8}, {4, 16, 8, 16, 12, 5, 0}, {6, 64, 16, 32, 32, 7, 9}, {3, 20, 6, 10, 14, 3, 2}};
    for (const auto type : {quant_type::f16, quant_type::f32}) {
        for (const auto isa : supported_isas()) {
            for (const auto& c : cases) {
                const auto d = make_data(rng, c, type);
                const auto ref = reference(d);
                const auto plain = run_plain(d, type, isa);
                const auto absorbed = run_absorbed(d, type, isa);
                const double tol = 2e-5 * (1 + max_abs(ref)) * std::sqrt(static_cast<double>(c.rank));
                for (std::size_t i = 0; i < ref.size(); ++i) {
                    ASSERT_NEAR(plain[i], ref[i], tol) << "plain, isa " << static_cast<int>(isa) << " i " << i;
                    ASSERT_NEAR(absorbed[i], ref[i], tol) << "absorbed, isa " << static_cast<int>(isa) << " i " << i;
                    ASSERT_NEAR(absorbed[i], plain[i], tol) << "forms disagree, i " << i;
                }
            }
        }
    }
}

TEST(mla_attention, absorbed_rows_are_shared_by_all_heads) {
    // Two heads with the same query get the same latent output: the cache row is one key for every head (MQA).
    std::mt19937 rng(32);
    mla_shape s;
    s.n_heads = 2;
    s.rank = 8;
    s.rope_dim = 4;
    s.kv_len = 6;
    s.first_pos = 5;
    s.cache_stride = 12;
    s.scale = 0.5f;
    const auto cache = test::random_floats(rng, s.kv_len * s.cache_stride);
    auto q = test::random_floats(rng, 12);
    const auto head0 = q;
    q.insert(q.end(), head0.begin(), head0.end());
    std::vector<float> out(2 * 8);
    mla_attention_absorbed(s, quant_type::f32, q.data(), cache.data(), out.data(), 0, 2);
    for (std::size_t i = 0; i < 8; ++i) {
        EXPECT_EQ(out[i], out[8 + i]);
    }
}

TEST(mla_attention, axpy_at_every_level_matches_the_scalar_reference) {
    std::mt19937 rng(33);
    for (const auto isa : supported_isas()) {
        for (std::size_t n : {1, 7, 8, 15, 16, 17, 33, 512, 515}) {
            const auto x = test::random_floats(rng, n);
            auto y = test::random_floats(rng, n);
            auto ref = y;
            axpy_kernel(isa)(n, 0.37f, x.data(), y.data());
            axpy_scalar(n, 0.37f, x.data(), ref.data());
            for (std::size_t i = 0; i < n; ++i) {
                ASSERT_NEAR(y[i], ref[i], 1e-6f * (1 + std::fabs(ref[i]))) << isa_name(isa) << " n " << n;
            }
        }
    }
}

TEST(mla_attention, decompression_from_gguf_weight_layouts_matches_the_float_product) {
    // attn_k_b and attn_v_b as GGUF stores them, in F32, F16 and Q8_0 (blocks of 32 along nope_dim and rank).
    std::mt19937 rng(34);
    const mla_case c{3, 64, 8, 32, 32, 4, 5};
    for (const auto wtype : {quant_type::f32, quant_type::f16, quant_type::q8_0}) {
        for (const auto isa : supported_isas()) {
            auto d = make_data(rng, c, quant_type::f16);
            const auto& s = d.s;
            std::vector<std::byte> kb(*row_bytes(wtype, s.nope_dim) * s.rank * s.n_heads);
            std::vector<std::byte> vb(*row_bytes(wtype, s.rank) * s.v_dim * s.n_heads);
            quantize_row(wtype, d.w_kb.data(), kb.data(), d.w_kb.size());
            quantize_row(wtype, d.w_vb.data(), vb.data(), d.w_vb.size());
            dequantize_row(wtype, kb.data(), d.w_kb.data(), d.w_kb.size()); // the values the weights now hold
            dequantize_row(wtype, vb.data(), d.w_vb.data(), d.w_vb.size());
            std::vector<float> k_nope(s.kv_len * s.n_heads * s.nope_dim), v(s.kv_len * s.n_heads * s.v_dim);
            mla_decompress(s, wtype, kb.data(), vb.data(), quant_type::f16, d.raw.data(), s.kv_len, k_nope.data(),
                           v.data(), 0, 2, isa);
            mla_decompress(s, wtype, kb.data(), vb.data(), quant_type::f16, d.raw.data(), s.kv_len, k_nope.data(),
                           v.data(), 2, s.n_heads, isa);
            for (std::size_t j = 0; j < s.kv_len; ++j) {
                const float* lat = d.cache.data() + j * s.cache_stride;
                for (std::size_t h = 0; h < s.n_heads; ++h) {
                    for (std::size_t i = 0; i < s.nope_dim; ++i) {
                        double k = 0;
                        for (std::size_t r = 0; r < s.rank; ++r) {
                            k += static_cast<double>(d.w_kb[(h * s.rank + r) * s.nope_dim + i]) * lat[r];
                        }
                        ASSERT_NEAR(k_nope[(j * s.n_heads + h) * s.nope_dim + i], k, 1e-4 * (1 + std::fabs(k)));
                    }
                    for (std::size_t e = 0; e < s.v_dim; ++e) {
                        double x = 0;
                        for (std::size_t r = 0; r < s.rank; ++r) {
                            x += static_cast<double>(d.w_vb[(h * s.v_dim + e) * s.rank + r]) * lat[r];
                        }
                        ASSERT_NEAR(v[(j * s.n_heads + h) * s.v_dim + e], x, 1e-4 * (1 + std::fabs(x)));
                    }
                }
            }
        }
    }
}

} // namespace
} // namespace sluice::kernels
