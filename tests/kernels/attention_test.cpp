// GQA attention over an F16 or F32 cache against a double-precision reference: decode and causal prefill, sliding
// windows over a ring of cache rows, attention sinks.
#include "kernels/attention.hpp"
#include "kernels/cpu/fp16.hpp"
#include "tests/kernels/test_data.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace sluice::kernels {
namespace {

std::vector<double> reference(const attention_shape& s, const std::vector<float>& q,
                              const std::vector<std::uint16_t>& k, const std::vector<std::uint16_t>& v) {
    std::vector<double> out(s.n_tokens * s.q_token_stride, 0.0);
    const std::size_t group = s.n_heads / s.n_kv_heads;
    for (std::size_t t = 0; t < s.n_tokens; ++t) {
        for (std::size_t h = 0; h < s.n_heads; ++h) {
            const std::size_t visible = s.first_pos + t + 1;
            const std::size_t off = (h / group) * s.kv_head_stride;
            std::vector<double> sc(visible);
            double max = -INFINITY, sum = 0;
            for (std::size_t j = 0; j < visible; ++j) {
                double d = 0;
                for (std::size_t i = 0; i < s.head_dim; ++i) {
                    d += static_cast<double>(q[t * s.q_token_stride + h * s.head_dim + i]) *
                         fp16_to_f32(k[j * s.kv_token_stride + off + i]);
                }
                sc[j] = d * s.scale;
                max = std::max(max, sc[j]);
            }
            for (auto& x : sc) {
                x = std::exp(x - max);
                sum += x;
            }
            for (std::size_t j = 0; j < visible; ++j) {
                for (std::size_t i = 0; i < s.head_dim; ++i) {
                    out[t * s.q_token_stride + h * s.head_dim + i] +=
                        sc[j] / sum * fp16_to_f32(v[j * s.kv_token_stride + off + i]);
                }
            }
        }
    }
    return out;
}

TEST(attention, gqa_decode_and_causal_prefill_match_double_reference) {
    std::mt19937 rng(30);
    for (isa_level isa : supported_isas()) {
        for (auto [n_tokens, first_pos] : {std::pair<std::size_t, std::size_t>{1, 0}, {1, 40}, {9, 0}, {5, 23}}) {
            attention_shape s;
            s.n_tokens = n_tokens;
            s.n_heads = 8;
            s.n_kv_heads = 2;
            s.head_dim = 64;
            s.first_pos = first_pos;
            s.kv_len = first_pos + n_tokens;
            s.q_token_stride = s.n_heads * s.head_dim;
            s.kv_token_stride = s.n_kv_heads * s.head_dim;
            s.kv_head_stride = s.head_dim;
            s.scale = 1.0f / 8.0f;
            const auto q = test::random_floats(rng, n_tokens * s.q_token_stride);
            std::vector<std::uint16_t> k(s.kv_len * s.kv_token_stride), v(k.size());
            const auto kf = test::random_floats(rng, k.size());
            const auto vf = test::random_floats(rng, v.size());
            for (std::size_t i = 0; i < k.size(); ++i) {
                k[i] = f32_to_fp16(kf[i]);
                v[i] = f32_to_fp16(vf[i]);
            }
            std::vector<float> out(q.size());
            attention_f16(s, q.data(), k.data(), v.data(), out.data(), 0, s.n_heads, isa);
            const auto ref = reference(s, q, k, v);
            for (std::size_t i = 0; i < out.size(); ++i) {
                ASSERT_NEAR(out[i], ref[i], 1e-4) << isa_name(isa) << " tokens " << n_tokens << " i " << i;
            }
        }
    }
}

/// Per-position keys and values in float (rounded through F16 when the cache is F16), and the reference
/// attention over them with the window and sinks of `s`, computed in double.
struct positions {
    std::vector<float> k, v; ///< [position][kv_token_stride]
};

positions random_positions(std::mt19937& rng, const attention_shape& s, quant_type type) {
    positions p{test::random_floats(rng, s.kv_len * s.kv_token_stride),
                test::random_floats(rng, s.kv_len * s.kv_token_stride)};
    if (type == quant_type::f16) {
        for (auto* x : {&p.k, &p.v}) {
            for (auto& f : *x) {
                f = fp16_to_f32(f32_to_fp16(f));
            }
        }
    }
    return p;
}

std::vector<double> windowed_reference(const attention_shape& s, const std::vector<float>& q, const positions& p) {
    std::vector<double> out(s.n_tokens * s.q_token_stride, 0.0);
    const std::size_t group = s.n_heads / s.n_kv_heads;
    for (std::size_t t = 0; t < s.n_tokens; ++t) {
        const std::size_t pos = s.first_pos + t;
        const std::size_t lo = s.window != 0 && pos + 1 > s.window ? pos + 1 - s.window : 0;
        for (std::size_t h = 0; h < s.n_heads; ++h) {
            const std::size_t off = (h / group) * s.kv_head_stride;
            std::vector<double> e;
            double denom = s.sinks != nullptr ? std::exp(double(s.sinks[h])) : 0.0;
            for (std::size_t j = lo; j <= pos; ++j) {
                double d = 0;
                for (std::size_t i = 0; i < s.head_dim; ++i) {
                    d += double(q[t * s.q_token_stride + h * s.head_dim + i]) * p.k[j * s.kv_token_stride + off + i];
                }
                e.push_back(std::exp(d * s.scale));
                denom += e.back();
            }
            for (std::size_t j = lo; j <= pos; ++j) {
                for (std::size_t i = 0; i < s.head_dim; ++i) {
                    out[t * s.q_token_stride + h * s.head_dim + i] +=
                        e[j - lo] / denom * p.v[j * s.kv_token_stride + off + i];
                }
            }
        }
    }
    return out;
}

/// The cache as a layer holds it: every position written in order to its row (j, or j % kv_rows for a ring),
/// so a ring keeps only the last kv_rows positions.
std::vector<std::uint8_t> cache_of(const attention_shape& s, quant_type type, const std::vector<float>& values) {
    const std::size_t rows = s.kv_rows == 0 ? s.kv_len : s.kv_rows;
    const std::size_t elem = type == quant_type::f16 ? 2 : 4;
    std::vector<std::uint8_t> cache(rows * s.kv_token_stride * elem, 0xff); // NaN-filled: unwritten rows show
    for (std::size_t j = 0; j < s.kv_len; ++j) {
        const std::size_t row = s.kv_rows == 0 ? j : j % s.kv_rows;
        for (std::size_t i = 0; i < s.kv_token_stride; ++i) {
            const float x = values[j * s.kv_token_stride + i];
            auto* dst = cache.data() + (row * s.kv_token_stride + i) * elem;
            if (type == quant_type::f16) {
                const std::uint16_t h = f32_to_fp16(x);
                std::memcpy(dst, &h, 2);
            } else {
                std::memcpy(dst, &x, 4);
            }
        }
    }
    return cache;
}

struct window_case {
    std::size_t n_tokens, first_pos, window, kv_rows;
    bool sinks;
};

TEST(attention, sliding_window_over_a_ring_and_sinks_match_double_reference) {
    std::mt19937 rng(31);
    const window_case cases[] = {
        {1, 0, 0, 0, true},     // decode, first token, sink only beside one key
        {1, 40, 0, 0, true},    // decode with sinks over a full cache
        {9, 0, 0, 0, true},     // prefill with sinks
        {1, 3, 12, 12, false},  // decode inside the first window, ring not yet wrapped
        {1, 50, 12, 12, true},  // decode far past the window: the ring wrapped several times
        {7, 30, 12, 18, true},  // prefill past the window: ring of window + n_tokens - 1
        {7, 30, 12, 25, false}, // a larger ring than needed
        {20, 0, 5, 0, true},    // window over a plain (non-ring) cache
        {6, 9, 5, 10, true},    // batch straddling the window edge
    };
    float sinks[8];
    for (isa_level isa : supported_isas()) {
        for (quant_type type : {quant_type::f16, quant_type::f32}) {
            for (const auto& c : cases) {
                attention_shape s;
                s.n_tokens = c.n_tokens;
                s.n_heads = 8;
                s.n_kv_heads = 2;
                s.head_dim = 64;
                s.first_pos = c.first_pos;
                s.kv_len = c.first_pos + c.n_tokens;
                s.q_token_stride = s.n_heads * s.head_dim;
                s.kv_token_stride = s.n_kv_heads * s.head_dim;
                s.kv_head_stride = s.head_dim;
                s.scale = 1.0f / 8.0f;
                s.window = c.window;
                s.kv_rows = c.kv_rows;
                for (std::size_t h = 0; h < 8; ++h) {
                    sinks[h] = std::uniform_real_distribution<float>(-3.0f, 3.0f)(rng);
                }
                s.sinks = c.sinks ? sinks : nullptr;
                const auto q = test::random_floats(rng, s.n_tokens * s.q_token_stride);
                const auto p = random_positions(rng, s, type);
                const auto k = cache_of(s, type, p.k);
                const auto v = cache_of(s, type, p.v);
                std::vector<float> out(q.size());
                // Two head ranges, as two threads would split them.
                attention(s, type, q.data(), k.data(), v.data(), out.data(), 0, 3, isa);
                attention(s, type, q.data(), k.data(), v.data(), out.data(), 3, s.n_heads, isa);
                const auto ref = windowed_reference(s, q, p);
                for (std::size_t i = 0; i < out.size(); ++i) {
                    ASSERT_NEAR(out[i], ref[i], 1e-4)
                        << isa_name(isa) << " " << traits_of(type).name << " tokens " << c.n_tokens << " at "
                        << c.first_pos << " window " << c.window << " rows " << c.kv_rows << " i " << i;
                }
            }
        }
    }
}

TEST(attention, a_large_sink_draws_weight_away_from_every_value) {
    attention_shape s;
    s.n_heads = s.n_kv_heads = 1;
    s.head_dim = s.q_token_stride = s.kv_token_stride = 4;
    s.kv_len = 1;
    const float q[4] = {1, 0, 0, 0}, k[4] = {1, 0, 0, 0}, v[4] = {2, 2, 2, 2};
    const float sink = std::log(3.0f); // exp(sink) = 3 beside exp(score) = e^1: weight e / (e + 3)
    s.sinks = &sink;
    float out[4];
    attention(s, quant_type::f32, q, k, v, out, 0, 1);
    const double w = std::exp(1.0) / (std::exp(1.0) + 3.0);
    for (float x : out) {
        EXPECT_NEAR(x, 2.0 * w, 1e-6);
    }
}

} // namespace
} // namespace sluice::kernels
