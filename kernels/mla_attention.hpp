// Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2): every query head attends over one cache row per
// position holding the compressed latent c (kv_lora_rank values, normalised) and the rotary key k_pe that all
// heads share. Two forms: the plain form (prefill) takes keys and values decompressed per head; the absorbed form
// (decode) folds the key decompression into the query and returns latent outputs for the caller to decompress.
#pragma once

#include "kernels/isa.hpp"
#include "kernels/quant_type.hpp"

#include <cstddef>

namespace sluice::kernels {

/// Shapes of one MLA call. The cache row of position p starts at cache + p * cache_stride (elements of the cache
/// type): `rank` latent values, then `rope_dim` rotary key values.
struct mla_shape {
    std::size_t n_tokens = 1; ///< query tokens (1 for decode)
    std::size_t n_heads = 0;
    std::size_t rank = 0;         ///< kv_lora_rank
    std::size_t rope_dim = 0;     ///< qk_rope_head_dim
    std::size_t nope_dim = 0;     ///< qk_nope_head_dim (plain form)
    std::size_t v_dim = 0;        ///< v_head_dim (plain form)
    std::size_t kv_len = 0;       ///< cached positions visible to the last query token
    std::size_t first_pos = 0;    ///< cache position of query token 0; token t sees positions [0, first_pos + t]
    std::size_t cache_stride = 0; ///< >= rank + rope_dim
    float scale = 1.0f;           ///< softmax scale: 1 / sqrt(nope_dim + rope_dim), times YaRN's mscale^2
};

/// Plain form. q: [n_tokens][n_heads][nope_dim + rope_dim] (non-rotary part first); k_nope: [kv_len][n_heads]
/// [nope_dim] and v: [kv_len][n_heads][v_dim], decompressed from the latents; the rotary keys come from the cache.
/// score(t, h, j) = scale * (q_nope . k_nope[j][h] + q_pe . k_pe[j]); out: [n_tokens][n_heads][v_dim].
/// Works on query heads [head_begin, head_end); thread-safe for disjoint head ranges. Cache type F16 or F32.
void mla_attention_plain(const mla_shape& s, quant_type cache_type, const float* q, const float* k_nope, const float* v,
                         const void* cache, float* out, std::size_t head_begin, std::size_t head_end,
                         isa_level isa = active_isa());

/// The plain form's inputs from the cache's latents and the GGUF weights (rows of `weight_type`): for positions
/// [0, n_pos) and heads [head_begin, head_end), k_nope[j][h] = W_kb,h c_j and v[j][h] = W_vb,h c_j, where `k_b` is
/// attn_k_b {nope_dim, rank, n_heads} (per head: rank rows of nope_dim values, i.e. W_kb,h transposed) and `v_b`
/// is attn_v_b {rank, v_dim, n_heads} (per head: v_dim rows of rank values). Layouts of k_nope and v as
/// `mla_attention_plain` takes them. Thread-safe for disjoint head ranges. Cache type F16 or F32; rows of
/// `weight_type` need nope_dim and rank to be multiples of its block.
void mla_decompress(const mla_shape& s, quant_type weight_type, const void* k_b, const void* v_b, quant_type cache_type,
                    const void* cache, std::size_t n_pos, float* k_nope, float* v, std::size_t head_begin,
                    std::size_t head_end, isa_level isa = active_isa());

/// Absorbed form. q: [n_tokens][n_heads][rank + rope_dim]: per head W_kb^T q_nope (rank values) then q_pe.
/// score(t, h, j) = scale * (q . cache row j), one dot over rank + rope_dim values; out: [n_tokens][n_heads][rank],
/// the softmax-weighted sum of latents, which W_vb turns into the head's value output.
/// Works on query heads [head_begin, head_end); thread-safe for disjoint head ranges. Cache type F16 or F32.
void mla_attention_absorbed(const mla_shape& s, quant_type cache_type, const float* q, const void* cache, float* out,
                            std::size_t head_begin, std::size_t head_end, isa_level isa = active_isa());

} // namespace sluice::kernels
