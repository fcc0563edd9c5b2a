// Row-tiled products over the per-format dot kernels; the tile keeps weight rows in cache across tokens.
#include "kernels/matmul.hpp"

#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/format_kernels.hpp"
#include "kernels/cpu/q4_k_x16.hpp"

#include <algorithm>
#include <cassert>
#include <numeric>
#include <vector>

namespace sluice::kernels {
namespace {

constexpr std::size_t tile_bytes = 32 * 1024; // weight bytes kept hot while every token passes over them

// Rows [r0, r1) of w against one prepared activation row into y[r0..r1).
void dot_range(const format_kernels& k, std::size_t cols, const std::uint8_t* w, std::size_t w_row_bytes,
               std::size_t r0, std::size_t r1, const std::uint8_t* act, float* y) {
    if (k.dot_rows != nullptr) {
        if (r0 < r1) {
            k.dot_rows(cols, w + r0 * w_row_bytes, w_row_bytes, r1 - r0, act, y + r0);
        }
        return;
    }
    for (std::size_t r = r0; r < r1; ++r) {
        y[r] = k.dot(cols, w + r * w_row_bytes, act);
    }
}

const format_kernels& kernels_for(quant_type type, isa_level isa) {
    const auto* k = find_format_kernels(std::min(isa, detect_isa()), type);
    assert(k != nullptr && "no kernels for this weight type");
    return *k;
}

// How many of `rest` tokens (left after the groups of four) go to the format's dot_few kernel: 2 or 3, else 0.
std::size_t few_tokens(const format_kernels& k, std::size_t rest) {
    return k.dot_few != nullptr && rest >= 2 && rest <= 3 ? rest : 0;
}

std::size_t tile_rows(std::size_t w_row_bytes) {
    return std::max<std::size_t>(1, tile_bytes / std::max<std::size_t>(1, w_row_bytes));
}

// Rows [row_begin, row_end) of q4_k_x16 weights against n_tokens prepared rows (row t at act + t*act_stride):
// out[t][r] for each r in range. Whole groups go straight to the kernel; a group cut by the range is computed
// into scratch and copied. Below AVX-512 a group is unpacked to GGUF rows and takes the level's dot kernel.
void x16_rows(const void* w, std::size_t w_row_bytes, std::size_t row_begin, std::size_t row_end, std::size_t cols,
              const std::uint8_t* act, std::size_t act_stride, std::size_t n_tokens, float* const* out, isa_level isa) {
    constexpr std::size_t g_rows = q4_k_x16_rows;
    const std::size_t group_bytes = g_rows * w_row_bytes;
    const auto* wb = static_cast<const std::uint8_t*>(w);
    thread_local std::vector<float*> ptrs;
    thread_local std::vector<float> part;
    thread_local std::vector<std::uint8_t> rows_copy;
    const bool simd = std::min(isa, detect_isa()) == isa_level::avx512;
    const format_kernels& k = kernels_for(quant_type::q4_k, isa);
    // Groups [g0, g1) into out rows starting at out_row0 (out_base[t] + out_row0 for token t).
    auto run_groups = [&](std::size_t g0, std::size_t g1, float* const* out_base, std::size_t out_row0) {
        ptrs.resize(n_tokens);
        for (std::size_t t = 0; t < n_tokens; ++t) {
            ptrs[t] = out_base[t] + out_row0;
        }
        if (simd) {
            avx512::matmul_q4_k_x16(cols, wb + g0 * group_bytes, g1 - g0, act, act_stride, n_tokens, ptrs.data());
            return;
        }
        rows_copy.resize(group_bytes);
        for (std::size_t g = g0; g < g1; ++g) {
            unpack_q4_k_x16(wb + g * group_bytes, cols / qk_k, rows_copy.data(), w_row_bytes);
            for (std::size_t t = 0; t < n_tokens; ++t) {
                for (std::size_t r = 0; r < g_rows; ++r) {
                    ptrs[t][(g - g0) * g_rows + r] =
                        k.dot(cols, rows_copy.data() + r * w_row_bytes, act + t * act_stride);
                }
            }
        }
    };
    const std::size_t full0 = (row_begin + g_rows - 1) / g_rows, full1 = row_end / g_rows;
    if (full0 < full1) {
        run_groups(full0, full1, out, full0 * g_rows);
    }
    // Groups the range cuts: at most one at each end (the same one when the range lies inside a group).
    std::size_t cut[2];
    std::size_t n_cut = 0;
    if (row_begin % g_rows != 0 || full0 >= full1) {
        cut[n_cut++] = row_begin / g_rows;
    }
    if (row_end % g_rows != 0 && (n_cut == 0 || row_end / g_rows != cut[0])) {
        cut[n_cut++] = row_end / g_rows;
    }
    thread_local std::vector<float*> part_ptrs;
    part_ptrs.resize(n_tokens);
    for (std::size_t c = 0; c < n_cut; ++c) {
        const std::size_t g = cut[c];
        part.resize(n_tokens * g_rows);
        for (std::size_t t = 0; t < n_tokens; ++t) {
            part_ptrs[t] = part.data() + t * g_rows;
        }
        run_groups(g, g + 1, part_ptrs.data(), 0);
        const std::size_t r0 = std::max(row_begin, g * g_rows), r1 = std::min(row_end, (g + 1) * g_rows);
        for (std::size_t t = 0; t < n_tokens; ++t) {
            for (std::size_t r = r0; r < r1; ++r) {
                out[t][r] = part[t * g_rows + r - g * g_rows];
            }
        }
    }
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
        dot_range(k, cols, wb, w_row_bytes, row_begin, row_end, ab, y);
        return;
    }
    // Tokens in groups of four share each weight block's unpacking where the format has a dot4 kernel.
    const std::size_t grouped = k.dot4 != nullptr ? n_tokens / 4 * 4 : 0;
    // Two or three tokens left over share it too where the format has a dot_few kernel.
    const std::size_t few = few_tokens(k, n_tokens - grouped);
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
        if (few > 0) {
            for (std::size_t r = r0; r < r1; ++r) {
                float out[4];
                k.dot_few(cols, wb + r * w_row_bytes, ab + grouped * act_stride, act_stride, few, out);
                for (std::size_t j = 0; j < few; ++j) {
                    y[(grouped + j) * y_stride + r] = out[j];
                }
            }
        }
        for (std::size_t t = grouped + few; t < n_tokens; ++t) {
            dot_range(k, cols, wb, w_row_bytes, r0, r1, ab + t * act_stride, y + t * y_stride);
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
    thread_local std::vector<float> tile_out;
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
        if (g1 - g0 == 1) {
            // One token (decode): no tile to share, so the whole row range in one call.
            const std::size_t s = order[g0];
            dot_range(k, cols, wb, w_row_bytes, row_begin, row_end,
                      ab + static_cast<std::size_t>(sel_token[s]) * act_stride, y + out_row(s) * y_stride);
            g0 = g1;
            continue;
        }
        // Tokens of this expert in groups of four share each weight block's unpacking (dot4 wants their
        // activation rows side by side, so they are gathered first).
        const std::size_t grouped = k.dot4 != nullptr ? (g1 - g0) / 4 * 4 : 0;
        const std::size_t few = few_tokens(k, g1 - g0 - grouped); // 2 or 3 left: one dot_few call per row
        if (grouped + few > 0) {
            gathered.resize((grouped + few) * act_stride);
            for (std::size_t i = 0; i < grouped + few; ++i) {
                std::copy_n(ab + static_cast<std::size_t>(sel_token[order[g0 + i]]) * act_stride, act_stride,
                            gathered.data() + i * act_stride);
            }
        }
        for (std::size_t r0 = row_begin; r0 < row_end; r0 += tile) {
            const std::size_t r1 = std::min(row_end, r0 + tile);
            for (std::size_t i = 0; i < grouped; i += 4) {
                if (k.dot4_rows != nullptr) {
                    // The several-row form into scratch (its outputs are token-major), then to the tokens' rows.
                    const std::size_t n = r1 - r0;
                    tile_out.resize(4 * n);
                    k.dot4_rows(cols, wb + r0 * w_row_bytes, w_row_bytes, n, gathered.data() + i * act_stride,
                                act_stride, tile_out.data(), n);
                    for (std::size_t j = 0; j < 4; ++j) {
                        std::copy_n(tile_out.data() + j * n, n, y + out_row(order[g0 + i + j]) * y_stride + r0);
                    }
                    continue;
                }
                for (std::size_t r = r0; r < r1; ++r) {
                    float out[4];
                    k.dot4(cols, wb + r * w_row_bytes, gathered.data() + i * act_stride, act_stride, out);
                    for (std::size_t j = 0; j < 4; ++j) {
                        y[out_row(order[g0 + i + j]) * y_stride + r] = out[j];
                    }
                }
            }
            if (few > 0) {
                for (std::size_t r = r0; r < r1; ++r) {
                    float out[4];
                    k.dot_few(cols, wb + r * w_row_bytes, gathered.data() + grouped * act_stride, act_stride, few, out);
                    for (std::size_t j = 0; j < few; ++j) {
                        y[out_row(order[g0 + grouped + j]) * y_stride + r] = out[j];
                    }
                }
            }
            for (std::size_t i = g0 + grouped + few; i < g1; ++i) {
                const std::size_t s = order[i];
                const std::uint8_t* a = ab + static_cast<std::size_t>(sel_token[s]) * act_stride;
                dot_range(k, cols, wb, w_row_bytes, r0, r1, a, y + out_row(s) * y_stride);
            }
        }
        g0 = g1;
    }
}

void matmul_prepared(quant_type type, weight_layout layout, const void* w, std::size_t w_row_bytes,
                     std::size_t row_begin, std::size_t row_end, std::size_t cols, const void* act,
                     std::size_t n_tokens, float* y, std::size_t y_stride, isa_level isa) {
    if (layout == weight_layout::rows) {
        matmul_prepared(type, w, w_row_bytes, row_begin, row_end, cols, act, n_tokens, y, y_stride, isa);
        return;
    }
    assert(type == quant_type::q4_k && layout == weight_layout::q4_k_x16);
    if (row_begin >= row_end || n_tokens == 0) {
        return;
    }
    thread_local std::vector<float*> out;
    out.resize(n_tokens);
    for (std::size_t t = 0; t < n_tokens; ++t) {
        out[t] = y + t * y_stride;
    }
    x16_rows(w, w_row_bytes, row_begin, row_end, cols, static_cast<const std::uint8_t*>(act),
             prepared_row_bytes(type, cols), n_tokens, out.data(), isa);
}

void matmul_experts(quant_type type, weight_layout layout, const void* const* expert_weights, std::size_t w_row_bytes,
                    std::size_t row_begin, std::size_t row_end, std::size_t cols, const void* act,
                    const std::int32_t* sel_expert, const std::int32_t* sel_token, std::size_t n_sel, float* y,
                    std::size_t y_stride, const std::int32_t* sel_out, isa_level isa) {
    if (layout == weight_layout::rows) {
        matmul_experts(type, expert_weights, w_row_bytes, row_begin, row_end, cols, act, sel_expert, sel_token, n_sel,
                       y, y_stride, sel_out, isa);
        return;
    }
    assert(type == quant_type::q4_k && layout == weight_layout::q4_k_x16);
    if (row_begin >= row_end) {
        return;
    }
    const auto* ab = static_cast<const std::uint8_t*>(act);
    const std::size_t act_stride = prepared_row_bytes(type, cols);
    thread_local std::vector<std::size_t> order;
    thread_local std::vector<std::uint8_t> gathered;
    thread_local std::vector<float*> out;
    order.resize(n_sel);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return sel_expert[a] < sel_expert[b]; });
    for (std::size_t g0 = 0; g0 < n_sel;) {
        std::size_t g1 = g0;
        while (g1 < n_sel && sel_expert[order[g1]] == sel_expert[order[g0]]) {
            ++g1;
        }
        // Every token of this expert, activation rows side by side, outputs at their rows of y.
        const std::size_t n = g1 - g0;
        gathered.resize(n * act_stride);
        out.resize(n);
        for (std::size_t i = 0; i < n; ++i) {
            const std::size_t s = order[g0 + i];
            std::copy_n(ab + static_cast<std::size_t>(sel_token[s]) * act_stride, act_stride,
                        gathered.data() + i * act_stride);
            out[i] = y + (sel_out ? static_cast<std::size_t>(sel_out[s]) : s) * y_stride;
        }
        x16_rows(expert_weights[sel_expert[order[g0]]], w_row_bytes, row_begin, row_end, cols, gathered.data(),
                 act_stride, n, out.data(), isa);
        g0 = g1;
    }
}

} // namespace sluice::kernels
