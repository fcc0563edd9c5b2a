// The gated delta rule: dispatch by ISA, and the scalar references written as the definitions read (the recurrent
// form step by step as Hugging Face's torch_recurrent_gated_delta_rule orders it; the chunked form as its
// torch_chunk_gated_delta_rule does, with forward substitution for the unit lower-triangular solves).
#include "kernels/delta_net.hpp"

#include "kernels/cpu/delta_net_kernels.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <vector>

namespace sluice::kernels {

namespace {

void check_shape(const delta_net_shape& s, std::size_t head_end) {
    assert(s.n_k_heads > 0 && s.n_heads % s.n_k_heads == 0 && head_end <= s.n_heads);
    assert(s.dk > 0 && s.dv > 0);
    (void)s;
    (void)head_end;
}

/// Pointers to one token's vectors of one value head.
struct head_rows {
    const float* q;
    const float* k;
    const float* v;
    float g;
    float beta;
    float* out;
};

head_rows rows_of(const delta_net_shape& s, const float* q, const float* k, const float* v, const float* g,
                  const float* beta, float* out, std::size_t t, std::size_t h) {
    const std::size_t kh = delta_key_head(s, h);
    return {q + t * s.q_stride + kh * s.dk, k + t * s.k_stride + kh * s.dk, v + t * s.v_stride + h * s.dv,
            g[t * s.gate_stride + h],       beta[t * s.gate_stride + h],    out + t * s.out_stride + h * s.dv};
}

} // namespace

namespace scalar {

void delta_net_recurrent(const delta_net_shape& s, const float* q, const float* k, const float* v, const float* g,
                         const float* beta, float* state, float* out, std::size_t head_begin, std::size_t head_end) {
    std::vector<float> kv(s.dv);
    for (std::size_t h = head_begin; h < head_end; ++h) {
        float* st = state + h * s.dk * s.dv;
        for (std::size_t t = 0; t < s.n_tokens; ++t) {
            const head_rows r = rows_of(s, q, k, v, g, beta, out, t, h);
            // Decay, read the value the state predicts for k, write the correction.
            const float decay = std::exp(r.g);
            for (std::size_t i = 0; i < s.dk * s.dv; ++i) {
                st[i] *= decay;
            }
            std::fill(kv.begin(), kv.end(), 0.0f);
            for (std::size_t i = 0; i < s.dk; ++i) {
                for (std::size_t j = 0; j < s.dv; ++j) {
                    kv[j] += st[i * s.dv + j] * r.k[i];
                }
            }
            for (std::size_t i = 0; i < s.dk; ++i) {
                for (std::size_t j = 0; j < s.dv; ++j) {
                    st[i * s.dv + j] += r.k[i] * (r.beta * (r.v[j] - kv[j]));
                }
            }
            // Read the state with the query.
            for (std::size_t j = 0; j < s.dv; ++j) {
                float o = 0.0f;
                for (std::size_t i = 0; i < s.dk; ++i) {
                    o += st[i * s.dv + j] * (r.q[i] * s.q_scale);
                }
                r.out[j] = o;
            }
        }
    }
}

namespace {

/// Solves (I + L) X = B in place for X (n x w rows), L strictly lower triangular n x n (row-major, ld n).
void unit_lower_solve(const std::vector<float>& l, std::size_t n, float* x, std::size_t w) {
    for (std::size_t t = 0; t < n; ++t) {
        for (std::size_t s = 0; s < t; ++s) {
            const float a = l[t * n + s];
            for (std::size_t j = 0; j < w; ++j) {
                x[t * w + j] -= a * x[s * w + j];
            }
        }
    }
}

/// One chunk of `n` tokens starting at token t0 for head h.
void chunk_reference(const delta_net_shape& s, const float* q, const float* k, const float* v, const float* g,
                     const float* beta, float* st, float* out, std::size_t h, std::size_t t0, std::size_t n) {
    const std::size_t dk = s.dk, dv = s.dv;
    std::vector<head_rows> r;
    std::vector<float> cum(n);
    float acc = 0.0f;
    for (std::size_t t = 0; t < n; ++t) {
        r.push_back(rows_of(s, q, k, v, g, beta, out, t0 + t, h));
        acc += r[t].g;
        cum[t] = acc; // log of the decay from the chunk's start through token t
    }
    const auto dot = [](const float* a, const float* b, std::size_t len) {
        float d = 0.0f;
        for (std::size_t i = 0; i < len; ++i) {
            d += a[i] * b[i];
        }
        return d;
    };
    // The unit lower-triangular system: beta_t (k_t . k_s) exp(cum_t - cum_s) for s < t.
    std::vector<float> l(n * n, 0.0f);
    for (std::size_t t = 0; t < n; ++t) {
        for (std::size_t u = 0; u < t; ++u) {
            l[t * n + u] = r[t].beta * dot(r[t].k, r[u].k, dk) * std::exp(cum[t] - cum[u]);
        }
    }
    // New values U (from beta v) and cumulatively decayed keys W (from beta exp(cum) k).
    std::vector<float> u(n * dv), w(n * dk);
    for (std::size_t t = 0; t < n; ++t) {
        for (std::size_t j = 0; j < dv; ++j) {
            u[t * dv + j] = r[t].beta * r[t].v[j];
        }
        for (std::size_t i = 0; i < dk; ++i) {
            w[t * dk + i] = r[t].beta * std::exp(cum[t]) * r[t].k[i];
        }
    }
    unit_lower_solve(l, n, u.data(), dv);
    unit_lower_solve(l, n, w.data(), dk);
    // Corrections against the state at the chunk's start, then the outputs.
    std::vector<float> vn(n * dv);
    for (std::size_t t = 0; t < n; ++t) {
        for (std::size_t j = 0; j < dv; ++j) {
            float ws = 0.0f;
            for (std::size_t i = 0; i < dk; ++i) {
                ws += w[t * dk + i] * st[i * dv + j];
            }
            vn[t * dv + j] = u[t * dv + j] - ws;
        }
    }
    for (std::size_t t = 0; t < n; ++t) {
        for (std::size_t j = 0; j < dv; ++j) {
            float o = 0.0f;
            for (std::size_t i = 0; i < dk; ++i) {
                o += r[t].q[i] * s.q_scale * std::exp(cum[t]) * st[i * dv + j];
            }
            for (std::size_t u2 = 0; u2 <= t; ++u2) {
                o += s.q_scale * dot(r[t].q, r[u2].k, dk) * std::exp(cum[t] - cum[u2]) * vn[u2 * dv + j];
            }
            r[t].out[j] = o;
        }
    }
    // The state at the chunk's end.
    const float last = cum[n - 1];
    for (std::size_t i = 0; i < dk; ++i) {
        for (std::size_t j = 0; j < dv; ++j) {
            float x = st[i * dv + j] * std::exp(last);
            for (std::size_t t = 0; t < n; ++t) {
                x += r[t].k[i] * std::exp(last - cum[t]) * vn[t * dv + j];
            }
            st[i * dv + j] = x;
        }
    }
}

} // namespace

void delta_net_chunked(const delta_net_shape& s, const float* q, const float* k, const float* v, const float* g,
                       const float* beta, float* state, float* out, std::size_t head_begin, std::size_t head_end,
                       std::size_t chunk) {
    for (std::size_t h = head_begin; h < head_end; ++h) {
        for (std::size_t t0 = 0; t0 < s.n_tokens; t0 += chunk) {
            chunk_reference(s, q, k, v, g, beta, state + h * s.dk * s.dv, out, h, t0, std::min(chunk, s.n_tokens - t0));
        }
    }
}

} // namespace scalar

void delta_net_recurrent(const delta_net_shape& s, const float* q, const float* k, const float* v, const float* g,
                         const float* beta, float* state, float* out, std::size_t head_begin, std::size_t head_end,
                         isa_level isa) {
    check_shape(s, head_end);
    switch (std::min(isa, detect_isa())) {
    case isa_level::avx512:
        return avx512::delta_net_recurrent(s, q, k, v, g, beta, state, out, head_begin, head_end);
    case isa_level::avx2:
        return avx2::delta_net_recurrent(s, q, k, v, g, beta, state, out, head_begin, head_end);
    case isa_level::scalar:
        break;
    }
    scalar::delta_net_recurrent(s, q, k, v, g, beta, state, out, head_begin, head_end);
}

void delta_net_chunked(const delta_net_shape& s, const float* q, const float* k, const float* v, const float* g,
                       const float* beta, float* state, float* out, std::size_t head_begin, std::size_t head_end,
                       std::size_t chunk, isa_level isa) {
    check_shape(s, head_end);
    assert(chunk >= 1);
    switch (std::min(isa, detect_isa())) {
    case isa_level::avx512:
        return avx512::delta_net_chunked(s, q, k, v, g, beta, state, out, head_begin, head_end, chunk);
    case isa_level::avx2:
        return avx2::delta_net_chunked(s, q, k, v, g, beta, state, out, head_begin, head_end, chunk);
    case isa_level::scalar:
        break;
    }
    scalar::delta_net_chunked(s, q, k, v, g, beta, state, out, head_begin, head_end, chunk);
}

} // namespace sluice::kernels
