// GQA attention over an F16 cache against a double-precision reference, decode and causal prefill.
#include "kernels/attention.hpp"
#include "kernels/cpu/fp16.hpp"
#include "tests/kernels/test_data.hpp"

#include <gtest/gtest.h>

#include <cmath>

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

} // namespace
} // namespace sluice::kernels
