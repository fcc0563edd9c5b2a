// Multi-section partial RoPE: angles once per call (shared by every head), then NeoX rotation of each head.
#include "kernels/rope_multi.hpp"

#include <cassert>
#include <cmath>

namespace sluice::kernels {

std::size_t rope_section_of(std::size_t i, const rope_multi_params& p) noexcept {
    const auto& s = p.sections;
    if (p.layout == rope_section_layout::interleaved) {
        if (i % 3 == 1 && i < 3 * static_cast<std::size_t>(s[1])) {
            return 1;
        }
        if (i % 3 == 2 && i < 3 * static_cast<std::size_t>(s[2])) {
            return 2;
        }
        return 0;
    }
    std::size_t end = 0;
    for (std::size_t sec = 0; sec < 3; ++sec) {
        end += s[sec];
        if (i < end) {
            return sec;
        }
    }
    return 3;
}

void rope_multi(float* x, std::size_t n_heads, std::size_t head_stride, const std::array<std::int64_t, 4>& pos,
                const rope_multi_params& p) noexcept {
    assert(p.n_rot % 2 == 0);
    const std::size_t half = p.n_rot / 2;
    float cos_t[512];
    float sin_t[512];
    assert(half <= 512);
    const double theta_scale = std::pow(static_cast<double>(p.freq_base), -2.0 / static_cast<double>(p.n_rot));
    double inv_freq = 1.0;
    for (std::size_t i = 0; i < half; ++i, inv_freq *= theta_scale) {
        const double theta = static_cast<double>(pos[rope_section_of(i, p)]) * p.freq_scale * inv_freq;
        cos_t[i] = static_cast<float>(std::cos(theta));
        sin_t[i] = static_cast<float>(std::sin(theta));
    }
    for (std::size_t h = 0; h < n_heads; ++h) {
        float* v = x + h * head_stride;
        for (std::size_t i = 0; i < half; ++i) {
            const float x0 = v[i];
            const float x1 = v[i + half];
            v[i] = x0 * cos_t[i] - x1 * sin_t[i];
            v[i + half] = x0 * sin_t[i] + x1 * cos_t[i];
        }
    }
}

} // namespace sluice::kernels
