// Declarations of the gated delta-rule kernels per ISA: the scalar references in delta_net.cpp, the SIMD paths in
// delta_net_<isa>.cpp (one source, delta_net_simd.hpp, built with each ISA's flags).
#pragma once

#include "kernels/delta_net.hpp"

namespace sluice::kernels {

namespace scalar {
void delta_net_recurrent(const delta_net_shape& s, const float* q, const float* k, const float* v, const float* g,
                         const float* beta, float* state, float* out, std::size_t head_begin, std::size_t head_end);
void delta_net_chunked(const delta_net_shape& s, const float* q, const float* k, const float* v, const float* g,
                       const float* beta, float* state, float* out, std::size_t head_begin, std::size_t head_end,
                       std::size_t chunk);
} // namespace scalar

namespace avx2 {
void delta_net_recurrent(const delta_net_shape& s, const float* q, const float* k, const float* v, const float* g,
                         const float* beta, float* state, float* out, std::size_t head_begin, std::size_t head_end);
void delta_net_chunked(const delta_net_shape& s, const float* q, const float* k, const float* v, const float* g,
                       const float* beta, float* state, float* out, std::size_t head_begin, std::size_t head_end,
                       std::size_t chunk);
} // namespace avx2

namespace avx512 {
void delta_net_recurrent(const delta_net_shape& s, const float* q, const float* k, const float* v, const float* g,
                         const float* beta, float* state, float* out, std::size_t head_begin, std::size_t head_end);
void delta_net_chunked(const delta_net_shape& s, const float* q, const float* k, const float* v, const float* g,
                       const float* beta, float* state, float* out, std::size_t head_begin, std::size_t head_end,
                       std::size_t chunk);
} // namespace avx512

/// The key head that value head `h` reads.
inline std::size_t delta_key_head(const delta_net_shape& s, std::size_t h) noexcept {
    return s.order == delta_head_order::tiled ? h % s.n_k_heads : h / (s.n_heads / s.n_k_heads);
}

} // namespace sluice::kernels
