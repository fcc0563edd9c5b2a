// How llama.cpp's converter lays out the Gated DeltaNet hybrids' tensors (Qwen3.5 MoE, Qwen3.5, Qwen3-Next), as
// row orders, column orders and value transforms the converter applies while streaming rows: the value-head
// reorder of qwen35/qwen35moe files, the split of Qwen3-Next's fused in_proj_qkvz, the stored 1 + w of the
// zero-centred norms and -exp(A_log).
#pragma once

#include <cstdint>
#include <vector>

namespace sluice::convert {

/// A change applied to every value of a tensor on its way to GGUF.
enum class value_transform {
    none,
    add_one, ///< zero-centred RMSNorm weights: GGUF stores 1 + w
    neg_exp, ///< A_log: GGUF stores a = -exp(A_log) (ssm_a)
};

/// A run of `n` consecutive source rows starting at `first`.
struct row_span {
    std::uint64_t first = 0;
    std::uint64_t n = 0;
};

/// The value-head geometry of one linear-attention layer.
struct value_heads {
    std::uint64_t n_k_heads = 0; ///< key heads
    std::uint64_t per_k = 0;     ///< value heads per key head (r)
    std::uint64_t head_size = 0; ///< rows (or columns) per head: d, or 1 for per-head scalars

    /// Source head of tiled destination head th: grouped head (th % n_k_heads) * per_k + th / n_k_heads.
    [[nodiscard]] std::uint64_t grouped_of_tiled(std::uint64_t th) const noexcept {
        return (th % n_k_heads) * per_k + th / n_k_heads;
    }
};

/// Rows of a tensor whose rows [offset, offset + heads) are value heads of `head_size` rows, in tiled order
/// (llama.cpp's qwen35 converter), preceded by `offset` rows kept in place: attn_qkv (offset = the q and k rows),
/// attn_gate, ssm_alpha, ssm_beta and ssm_conv1d (offset = the q and k channels) of qwen35 and qwen35moe.
std::vector<row_span> tiled_value_rows(const value_heads& v, std::uint64_t offset);

/// The column order that makes the columns of each row tiled: destination column c reads source column
/// order[c] (ssm_out, whose columns are value heads, and the per-head vectors ssm_dt and ssm_a, one row of n_heads).
std::vector<std::uint64_t> tiled_value_columns(const value_heads& v);

/// Rows of Qwen3-Next's fused in_proj_qkvz ([q d | k d | v r d | z r d] per key head) that make attn_qkv (every key
/// head's q, then every k, then every v) and attn_gate (every z), with d = key head dimension.
std::vector<row_span> qwen3next_qkv_rows(std::uint64_t n_k_heads, std::uint64_t d, std::uint64_t per_k);
std::vector<row_span> qwen3next_gate_rows(std::uint64_t n_k_heads, std::uint64_t d, std::uint64_t per_k);

/// Applies `t` to n values in place.
void apply_value_transform(value_transform t, float* values, std::uint64_t n) noexcept;

/// Reorders the columns of `rows` rows of `cols` floats in place by `order` (destination c = source order[c]).
void permute_columns(float* data, std::uint64_t rows, std::uint64_t cols, const std::vector<std::uint64_t>& order);

} // namespace sluice::convert
