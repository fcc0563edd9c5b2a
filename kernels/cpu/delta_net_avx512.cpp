// The gated delta rule at the AVX512 level: delta_net_simd.hpp over 64-byte vectors (16 floats).
#include "kernels/cpu/delta_net_simd.hpp"

namespace sluice::kernels::avx512 {

namespace {
using vec = float __attribute__((vector_size(64)));
} // namespace

void delta_net_recurrent(const delta_net_shape& s, const float* q, const float* k, const float* v, const float* g,
                         const float* beta, float* state, float* out, std::size_t head_begin, std::size_t head_end) {
    recurrent<vec>(s, q, k, v, g, beta, state, out, head_begin, head_end);
}

void delta_net_chunked(const delta_net_shape& s, const float* q, const float* k, const float* v, const float* g,
                       const float* beta, float* state, float* out, std::size_t head_begin, std::size_t head_end,
                       std::size_t chunk) {
    chunked<vec>(s, q, k, v, g, beta, state, out, head_begin, head_end, chunk);
}

} // namespace sluice::kernels::avx512
