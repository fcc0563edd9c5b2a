// Row-tiled products over the per-format dot kernels; the tile keeps weight rows in cache across tokens.
#include "kernels/matmul.hpp"

#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/format_kernels.hpp"

#include <algorithm>
#include <cassert>
#include <numeric>
#include <vector>

namespace sluice::kernels {
namespace {

constexpr std::size_t tile_bytes = 32 * 1024; // weight bytes kept hot while every token passes over them

const format_kernels& kernels_for(quant_type type, isa_level isa) {
    const auto* k = find_format_kernels(std::min(isa, detect_isa()), type);
    assert(k != nullptr && "no kernels for this weight type");
    return *k;
}

std::size_t tile_rows(std::size_t w_row_bytes) {
    return std::max<std::size_t>(1, tile_bytes / std::max<std::size_t>(1, w_row_bytes));
}

} // namespace

std::size_t prepared_row_bytes(quant_type type, std::size_t cols) noexcept {
    const auto* k = scalar_format_kernels(type);
    if (k == nullptr) {
        return 0;
    }
    switch (k->act) {
    case act_format::f32:
        return cols * sizeof(float);
    case act_format::q8_0:
        return cols / qk32 * sizeof(block_q8_0);
    case act_format::q8_k:
        return cols / qk_k * sizeof(block_q8_k);
    }
    return 0;
}

void prepare_activations(quant_type type, const float* x, std::size_t x_stride, std::size_t n_rows, std::size_t cols,
                         void* out, isa_level isa) {
    const auto& k = kernels_for(type, isa);
    const prepare_fn prepare = prepare_kernel(std::min(isa, detect_isa()), k.act);
    const std::size_t stride = prepared_row_bytes(type, cols);
    for (std::size_t i = 0; i < n_rows; ++i) {
        prepare(x + i * x_stride, static_cast<std::uint8_t*>(out) + i * stride, cols);
    }
}

void matmul_prepared(quant_type type, const void* w, std::size_t w_row_bytes, std::size_t row_begin,
                     std::size_t row_end, std::size_t cols, const void* act, std::size_t n_tokens, float* y,
                     std::size_t y_stride, isa_level isa) {
    const format_kernels& k = kernels_for(type, isa);
    const auto* wb = static_cast<const std::uint8_t*>(w);
    const auto* ab = static_cast<const std::uint8_t*>(act);
    const std::size_t act_stride = prepared_row_bytes(type, cols);
    if (n_tokens == 1) {
        // Decode: one sequential weight stream. (Interleaving two rows to share activation loads measured
        // 4x slower from DRAM on the reference machine: the hardware prefetcher lost the streams.)
        for (std::size_t r = row_begin; r < row_end; ++r) {
            y[r] = k.dot(cols, wb + r * w_row_bytes, ab);
        }
        return;
    }
    // Tokens in groups of four share each weight block's unpacking where the format has a dot4 kernel.
    const std::size_t grouped = k.dot4 != nullptr ? n_tokens / 4 * 4 : 0;
    // A several-row kernel walks 16 rows per column chunk, so its tile holds at least that many.
    const std::size_t tile = std::max<std::size_t>(tile_rows(w_row_bytes), k.dot4_rows != nullptr ? 16 : 1);
    for (std::size_t r0 = row_begin; r0 < row_end; r0 += tile) {
        const std::size_t r1 = std::min(row_end, r0 + tile);
        for (std::size_t t = 0; t < grouped; t += 4) {
            if (k.dot4_rows != nullptr) {
                k.dot4_rows(cols, wb + r0 * w_row_bytes, w_row_bytes, r1 - r0, ab + t * act_stride, act_stride,
                            y + t * y_stride + r0, y_stride);
                continue;
            }
            for (std::size_t r = r0; r < r1; ++r) {
                float out[4];
                k.dot4(cols, wb + r * w_row_bytes, ab + t * act_stride, act_stride, out);
                for (std::size_t j = 0; j < 4; ++j) {
                    y[(t + j) * y_stride + r] = out[j];
                }
            }
        }
        for (std::size_t t = grouped; t < n_tokens; ++t) {
            for (std::size_t r = r0; r < r1; ++r) {
                y[t * y_stride + r] = k.dot(cols, wb + r * w_row_bytes, ab + t * act_stride);
            }
        }
    }
}

void matmul(quant_type type, const void* w, std::size_t rows, std::size_t cols, const float* x, std::size_t n_tokens,
            float* y, isa_level isa) {
    std::vector<std::uint8_t> act(prepared_row_bytes(type, cols) * n_tokens + 64);
    prepare_activations(type, x, cols, n_tokens, cols, act.data(), isa);
    const std::size_t w_row_bytes = row_bytes(type, cols).value_or(0);
    matmul_prepared(type, w, w_row_bytes, 0, rows, cols, act.data(), n_tokens, y, rows, isa);
}

void matmul_experts(quant_type type, const void* const* expert_weights, std::size_t w_row_bytes, std::size_t row_begin,
                    std::size_t row_end, std::size_t cols, const void* act, const std::int32_t* sel_expert,
                    const std::int32_t* sel_token, std::size_t n_sel, float* y, std::size_t y_stride,
                    const std::int32_t* sel_out, isa_level isa) {
    const format_kernels& k = kernels_for(type, isa);
    auto out_row = [sel_out](std::size_t s) { return sel_out ? static_cast<std::size_t>(sel_out[s]) : s; };
    const auto* ab = static_cast<const std::uint8_t*>(act);
    const std::size_t act_stride = prepared_row_bytes(type, cols);
    // Group selections by expert so each expert's weight tile is read once for all its tokens. Scratch is
    // per thread and only grows, so steady-state calls do not allocate.
    thread_local std::vector<std::size_t> order;
    thread_local std::vector<std::uint8_t> gathered;
    order.resize(n_sel);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return sel_expert[a] < sel_expert[b]; });
    const std::size_t tile = tile_rows(w_row_bytes);
    for (std::size_t g0 = 0; g0 < n_sel;) {
        std::size_t g1 = g0;
        while (g1 < n_sel && sel_expert[order[g1]] == sel_expert[order[g0]]) {
            ++g1;
        }
        const auto* wb = static_cast<const std::uint8_t*>(expert_weights[sel_expert[order[g0]]]);
        // Tokens of this expert in groups of four share each weight block's unpacking (dot4 wants their
        // activation rows side by side, so they are gathered first).
        const std::size_t grouped = k.dot4 != nullptr ? (g1 - g0) / 4 * 4 : 0;
        if (grouped) {
            gathered.resize(grouped * act_stride);
            for (std::size_t i = 0; i < grouped; ++i) {
                std::copy_n(ab + static_cast<std::size_t>(sel_token[order[g0 + i]]) * act_stride, act_stride,
                            gathered.data() + i * act_stride);
            }
        }
        for (std::size_t r0 = row_begin; r0 < row_end; r0 += tile) {
            const std::size_t r1 = std::min(row_end, r0 + tile);
            for (std::size_t i = 0; i < grouped; i += 4) {
                for (std::size_t r = r0; r < r1; ++r) {
                    float out[4];
                    k.dot4(cols, wb + r * w_row_bytes, gathered.data() + i * act_stride, act_stride, out);
                    for (std::size_t j = 0; j < 4; ++j) {
                        y[out_row(order[g0 + i + j]) * y_stride + r] = out[j];
                    }
                }
            }
            for (std::size_t i = g0 + grouped; i < g1; ++i) {
                const std::size_t s = order[i];
                const std::uint8_t* a = ab + static_cast<std::size_t>(sel_token[s]) * act_stride;
                for (std::size_t r = r0; r < r1; ++r) {
                    y[out_row(s) * y_stride + r] = k.dot(cols, wb + r * w_row_bytes, a);
                }
            }
        }
        g0 = g1;
    }
}

} // namespace sluice::kernels
