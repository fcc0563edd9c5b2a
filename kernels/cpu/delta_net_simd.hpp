// The gated delta rule over GCC vector types, included by one source per ISA (delta_net_avx2.cpp,
// delta_net_avx512.cpp) that picks the vector width; each gets its own copy (anonymous namespace), built with its
// own flags. The recurrent step keeps column blocks of S^T k and S^T q in registers while it streams the state once,
// then updates the state in a second pass. The chunked form runs its matrix products through a 4-row register tile.
#pragma once

#include "kernels/cpu/delta_net_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace sluice::kernels {
namespace {

template <class V>
constexpr std::size_t lanes_of = sizeof(V) / sizeof(float);

template <class V>
inline V load(const float* p) {
    V v;
    std::memcpy(&v, p, sizeof(V));
    return v;
}

template <class V>
inline void store(float* p, V v) {
    std::memcpy(p, &v, sizeof(V));
}

template <class V>
inline V splat(float x) {
    return V{} + x;
}

template <class V>
inline float dot(const float* a, const float* b, std::size_t n) {
    constexpr std::size_t L = lanes_of<V>;
    V acc = V{};
    std::size_t i = 0;
    for (; i + L <= n; i += L) {
        acc += load<V>(a + i) * load<V>(b + i);
    }
    float sum = 0.0f;
    for (std::size_t l = 0; l < L; ++l) {
        sum += acc[l];
    }
    for (; i < n; ++i) {
        sum += a[i] * b[i];
    }
    return sum;
}

/// y[0..n) += a * x[0..n)
template <class V>
inline void axpy(float a, const float* x, float* y, std::size_t n) {
    constexpr std::size_t L = lanes_of<V>;
    const V va = splat<V>(a);
    std::size_t i = 0;
    for (; i + L <= n; i += L) {
        store(y + i, load<V>(y + i) + va * load<V>(x + i));
    }
    for (; i < n; ++i) {
        y[i] += a * x[i];
    }
}

/// c (m x n, ldc) += a (m x kk, lda) * b (kk x n, ldb), all row-major: 4 rows x 2 vectors of columns per tile.
template <class V>
void gemm_acc(std::size_t m, std::size_t n, std::size_t kk, const float* a, std::size_t lda, const float* b,
              std::size_t ldb, float* c, std::size_t ldc) {
    constexpr std::size_t L = lanes_of<V>;
    constexpr std::size_t W = 2 * L;
    const std::size_t n_vec = n / W * W;
    std::size_t r = 0;
    for (; r + 4 <= m; r += 4) {
        for (std::size_t j = 0; j < n_vec; j += W) {
            V acc[4][2] = {};
            for (std::size_t p = 0; p < kk; ++p) {
                const V b0 = load<V>(b + p * ldb + j);
                const V b1 = load<V>(b + p * ldb + j + L);
                for (std::size_t x = 0; x < 4; ++x) {
                    const V av = splat<V>(a[(r + x) * lda + p]);
                    acc[x][0] += av * b0;
                    acc[x][1] += av * b1;
                }
            }
            for (std::size_t x = 0; x < 4; ++x) {
                float* cr = c + (r + x) * ldc + j;
                store(cr, load<V>(cr) + acc[x][0]);
                store(cr + L, load<V>(cr + L) + acc[x][1]);
            }
        }
    }
    // Remaining rows, and the columns past the last full tile.
    for (std::size_t x = 0; x < m; ++x) {
        const std::size_t j0 = x < r ? n_vec : 0;
        for (std::size_t p = 0; p < kk; ++p) {
            const float av = a[x * lda + p];
            const float* br = b + p * ldb;
            float* cr = c + x * ldc;
            if (j0 == 0) {
                axpy<V>(av, br, cr, n);
            } else {
                for (std::size_t j = j0; j < n; ++j) {
                    cr[j] += av * br[j];
                }
            }
        }
    }
}

/// One token of one head: out = S'^T (scale q) with S' = exp(g) S + k delta^T, delta = beta (v - exp(g) S^T k).
template <class V>
void recurrent_step(const delta_net_shape& s, const float* q, const float* k, const float* v, float g, float beta,
                    float* st, float* out, float* kv, float* sq) {
    constexpr std::size_t L = lanes_of<V>;
    constexpr std::size_t B = 4 * L; // columns per register block
    const std::size_t dk = s.dk, dv = s.dv;
    const std::size_t dv_vec = dv / B * B;
    // Pass 1: S^T k and S^T q by column blocks, the accumulators in registers.
    for (std::size_t j = 0; j < dv_vec; j += B) {
        V ak[4] = {}, aq[4] = {};
        for (std::size_t i = 0; i < dk; ++i) {
            const float* row = st + i * dv + j;
            const V ki = splat<V>(k[i]);
            const V qi = splat<V>(q[i]);
            for (std::size_t x = 0; x < 4; ++x) {
                const V sv = load<V>(row + x * L);
                ak[x] += sv * ki;
                aq[x] += sv * qi;
            }
        }
        for (std::size_t x = 0; x < 4; ++x) {
            store(kv + j + x * L, ak[x]);
            store(sq + j + x * L, aq[x]);
        }
    }
    for (std::size_t j = dv_vec; j < dv; ++j) {
        float a = 0.0f, b = 0.0f;
        for (std::size_t i = 0; i < dk; ++i) {
            a += st[i * dv + j] * k[i];
            b += st[i * dv + j] * q[i];
        }
        kv[j] = a;
        sq[j] = b;
    }
    // The correction (kept in kv) and the output.
    const float decay = std::exp(g);
    const float kq = dot<V>(k, q, dk) * s.q_scale;
    for (std::size_t j = 0; j < dv; ++j) {
        const float delta = beta * (v[j] - decay * kv[j]);
        kv[j] = delta;
        out[j] = decay * sq[j] * s.q_scale + delta * kq;
    }
    // Pass 2: S = decay S + k delta^T.
    const V vd = splat<V>(decay);
    const std::size_t dv_l = dv / L * L;
    for (std::size_t i = 0; i < dk; ++i) {
        float* row = st + i * dv;
        const V ki = splat<V>(k[i]);
        std::size_t j = 0;
        for (; j < dv_l; j += L) {
            store(row + j, load<V>(row + j) * vd + ki * load<V>(kv + j));
        }
        for (; j < dv; ++j) {
            row[j] = row[j] * decay + k[i] * kv[j];
        }
    }
}

template <class V>
void recurrent(const delta_net_shape& s, const float* q, const float* k, const float* v, const float* g,
               const float* beta, float* state, float* out, std::size_t head_begin, std::size_t head_end) {
    thread_local std::vector<float> scratch;
    scratch.resize(std::max(scratch.size(), 2 * s.dv));
    for (std::size_t h = head_begin; h < head_end; ++h) {
        const std::size_t kh = delta_key_head(s, h);
        for (std::size_t t = 0; t < s.n_tokens; ++t) {
            recurrent_step<V>(s, q + t * s.q_stride + kh * s.dk, k + t * s.k_stride + kh * s.dk,
                              v + t * s.v_stride + h * s.dv, g[t * s.gate_stride + h], beta[t * s.gate_stride + h],
                              state + h * s.dk * s.dv, out + t * s.out_stride + h * s.dv, scratch.data(),
                              scratch.data() + s.dv);
        }
    }
}

/// Per-thread buffers of the chunked form, grown once.
struct chunk_scratch {
    std::vector<float> cum, l, u, mw, r, kt;

    void reserve(std::size_t n, std::size_t dk, std::size_t dv) {
        const auto grow = [](std::vector<float>& b, std::size_t size) { b.resize(std::max(b.size(), size)); };
        grow(cum, n);
        grow(l, n * n);
        grow(u, n * dv);
        grow(mw, 2 * n * dk);
        grow(r, 2 * n * dv);
        grow(kt, dk * n);
    }
};

/// One chunk of n tokens from t0 for head h (see scalar::chunk_reference for the plain statement).
template <class V>
void chunk(const delta_net_shape& s, const float* q, const float* k, const float* v, const float* g, const float* beta,
           float* st, float* out, std::size_t h, std::size_t t0, std::size_t n, chunk_scratch& b) {
    const std::size_t dk = s.dk, dv = s.dv, kh = delta_key_head(s, h);
    const auto qr = [&](std::size_t t) { return q + (t0 + t) * s.q_stride + kh * dk; };
    const auto kr = [&](std::size_t t) { return k + (t0 + t) * s.k_stride + kh * dk; };
    const auto gate = [&](const float* x, std::size_t t) { return x[(t0 + t) * s.gate_stride + h]; };
    float acc = 0.0f;
    for (std::size_t t = 0; t < n; ++t) {
        acc += gate(g, t);
        b.cum[t] = acc;
    }
    // The triangular system, and the right-hand sides: U = beta v, W = beta exp(cum) k (W in mw's first n rows,
    // the decayed queries exp(cum) q_scale q in its last n rows).
    float* w = b.mw.data();
    float* qd = b.mw.data() + n * dk;
    for (std::size_t t = 0; t < n; ++t) {
        const float bt = gate(beta, t);
        for (std::size_t u = 0; u < t; ++u) {
            b.l[t * n + u] = bt * dot<V>(kr(t), kr(u), dk) * std::exp(b.cum[t] - b.cum[u]);
        }
        const float* vr = v + (t0 + t) * s.v_stride + h * dv;
        const float ew = bt * std::exp(b.cum[t]), eq = s.q_scale * std::exp(b.cum[t]);
        for (std::size_t j = 0; j < dv; ++j) {
            b.u[t * dv + j] = bt * vr[j];
        }
        for (std::size_t i = 0; i < dk; ++i) {
            w[t * dk + i] = ew * kr(t)[i];
            qd[t * dk + i] = eq * qr(t)[i];
        }
        for (std::size_t u = 0; u < t; ++u) {
            axpy<V>(-b.l[t * n + u], b.u.data() + u * dv, b.u.data() + t * dv, dv);
            axpy<V>(-b.l[t * n + u], w + u * dk, w + t * dk, dk);
        }
    }
    // [W; Qd] S in one product: the state's prediction for each token, and the queries' read of it.
    std::fill(b.r.begin(), b.r.begin() + static_cast<std::ptrdiff_t>(2 * n * dv), 0.0f);
    gemm_acc<V>(2 * n, dv, dk, b.mw.data(), dk, st, dv, b.r.data(), dv);
    float* vn = b.u.data(); // U - W S: the corrections, in place of U
    for (std::size_t t = 0; t < n; ++t) {
        axpy<V>(-1.0f, b.r.data() + t * dv, vn + t * dv, dv);
    }
    // Outputs: the read of the old state plus the chunk's own causal part.
    for (std::size_t t = 0; t < n; ++t) {
        float* o = b.r.data() + (n + t) * dv;
        for (std::size_t u = 0; u <= t; ++u) {
            const float a = s.q_scale * dot<V>(qr(t), kr(u), dk) * std::exp(b.cum[t] - b.cum[u]);
            axpy<V>(a, vn + u * dv, o, dv);
        }
        std::memcpy(out + (t0 + t) * s.out_stride + h * dv, o, dv * sizeof(float));
    }
    // State at the chunk's end: exp(cum_last) S + K^T diag(exp(cum_last - cum)) Vn.
    const float last = b.cum[n - 1];
    for (std::size_t t = 0; t < n; ++t) {
        const float e = std::exp(last - b.cum[t]);
        for (std::size_t i = 0; i < dk; ++i) {
            b.kt[i * n + t] = e * kr(t)[i];
        }
    }
    const V vlast = splat<V>(std::exp(last));
    constexpr std::size_t L = lanes_of<V>;
    const std::size_t all = dk * dv, all_vec = all / L * L;
    for (std::size_t i = 0; i < all_vec; i += L) {
        store(st + i, load<V>(st + i) * vlast);
    }
    for (std::size_t i = all_vec; i < all; ++i) {
        st[i] *= std::exp(last);
    }
    gemm_acc<V>(dk, dv, n, b.kt.data(), n, vn, dv, st, dv);
}

template <class V>
void chunked(const delta_net_shape& s, const float* q, const float* k, const float* v, const float* g,
             const float* beta, float* state, float* out, std::size_t head_begin, std::size_t head_end,
             std::size_t chunk_len) {
    thread_local chunk_scratch b;
    const std::size_t n_max = std::min(chunk_len, s.n_tokens);
    b.reserve(n_max, s.dk, s.dv);
    for (std::size_t h = head_begin; h < head_end; ++h) {
        for (std::size_t t0 = 0; t0 < s.n_tokens; t0 += chunk_len) {
            chunk<V>(s, q, k, v, g, beta, state + h * s.dk * s.dv, out, h, t0, std::min(chunk_len, s.n_tokens - t0), b);
        }
    }
}

} // namespace
} // namespace sluice::kernels
