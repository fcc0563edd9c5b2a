// Partial multi-section rotary embedding (M-RoPE) as Qwen3.5 uses it: NeoX pairs over the first n_rot dimensions
// of each head, each frequency driven by the position of its section (time, height, width, extra).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace sluice::kernels {

/// How frequency index i (0 <= i < n_rot/2) picks its section. Sections s0..s3 (sum <= n_rot/2):
/// - `interleaved` (Qwen3.5, llama.cpp's IMROPE): i % 3 == 1 and i < 3*s1 -> height; i % 3 == 2 and i < 3*s2 ->
///   width; otherwise time.
/// - `contiguous` (Qwen2-VL, llama.cpp's MROPE): the first s0 indices time, the next s1 height, the next s2 width,
///   the rest extra.
enum class rope_section_layout { interleaved, contiguous };

struct rope_multi_params {
    std::size_t n_rot = 0; ///< rotated dimensions per head (even, <= head_dim); the rest pass through
    float freq_base = 10000.0f;
    float freq_scale = 1.0f;
    std::array<std::uint32_t, 4> sections{}; ///< rope.dimension_sections
    rope_section_layout layout = rope_section_layout::interleaved;
};

/// Rotates `n_heads` heads (head h at x + h*head_stride) in place. pos[s] is the position of section s (time,
/// height, width, extra); text tokens have all four equal, which makes this plain NeoX RoPE on n_rot dimensions.
/// theta_i = pos[section(i)] * freq_scale * freq_base^(-2i / n_rot); pairs (x[i], x[i + n_rot/2]).
void rope_multi(float* x, std::size_t n_heads, std::size_t head_stride, const std::array<std::int64_t, 4>& pos,
                const rope_multi_params& p) noexcept;

/// The section that drives frequency index i.
std::size_t rope_section_of(std::size_t i, const rope_multi_params& p) noexcept;

} // namespace sluice::kernels
