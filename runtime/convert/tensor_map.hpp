// Hugging Face tensor names to GGUF tensors: which checkpoint rows make up each tensor the architecture expects.
#pragma once

#include "runtime/convert/hf_config.hpp"
#include "runtime/convert/hybrid_layout.hpp"
#include "runtime/convert/safetensors.hpp"
#include "runtime/models/tensor_plan.hpp"
#include "sluice/error.hpp"

#include <cstdint>
#include <vector>

namespace sluice::convert {

/// A run of consecutive rows of one checkpoint tensor.
struct row_run {
    const st_tensor* tensor = nullptr;
    std::uint64_t first_row = 0;
    std::uint64_t n_rows = 0;
};

/// Rows gathered from a block of checkpoint rows read at once (gpt-oss's transposed and interleaved layouts): rows
/// [first_row, first_row + src_rows) of `tensor`, as one flat array `a`, give n_rows output rows; output row i,
/// element j is a[offset + i * row_step + j * elem_step].
struct gather_run {
    const st_tensor* tensor = nullptr;
    std::uint64_t first_row = 0;
    std::uint64_t src_rows = 0;
    std::uint64_t n_rows = 0;
    std::uint64_t offset = 0;
    std::uint64_t row_step = 0;
    std::uint64_t elem_step = 0;
};

/// MXFP4 rows of a Hugging Face blocks/scales pair (gpt-oss): matrix rows first_row, first_row + row_step, ...
/// (n_rows of them; a matrix row is the blocks of one output row, over every expert's rows in order).
struct mxfp4_run {
    const st_tensor* blocks = nullptr;
    const st_tensor* scales = nullptr;
    std::uint64_t first_row = 0;
    std::uint64_t n_rows = 0;
    std::uint64_t row_step = 1;
};

/// One GGUF tensor to write: its spec and the checkpoint rows that make it, in output row order: plain runs,
/// gathered runs, or MXFP4 runs (written as MXFP4 whatever the output type).
struct tensor_source {
    models::tensor_spec spec;
    std::vector<row_run> runs;
    std::vector<gather_run> gathers;
    std::vector<mxfp4_run> mxfp4;
    /// Non-zero for llama Q/K: rows are regrouped per head from HF's rotate-half order to interleaved pairs
    /// (new row h*d + 2i + j = old row h*d + j*d/2 + i, d = head size); the value is the head count.
    std::uint32_t permute_heads = 0;
    /// Applied to every value (the hybrids' 1 + w norms and -exp(A_log)).
    value_transform transform = value_transform::none;
    /// When set, destination column c of each row is source column column_order[c] (the hybrids' tiled heads).
    std::vector<std::uint64_t> column_order;
};

/// Matches every checkpoint tensor to `expected` (an architecture's tensor list; optional entries may stay
/// unmatched, output.weight is dropped when `cfg.tied_embeddings`). Supports per-expert tensors
/// (mlp.experts.E.*, block_sparse_moe.experts.E.w1/w2/w3), stacked [E, rows, cols] expert tensors and fused
/// mlp.experts.gate_up_proj [E, 2*ff, n_embd]; for gpt-oss, the experts as published (MXFP4 *_blocks/*_scales,
/// gate and up rows interleaved) or as transformers saves them dequantised (gate_up_proj [E, n_embd, 2*ff] with
/// interleaved columns, down_proj [E, ff, n_embd]), with their interleaved biases. Errors name the HF tensor:
/// unknown names, wrong shapes or dtypes, duplicates; or the GGUF tensor (and expert) nothing in the checkpoint
/// provides.
result<std::vector<tensor_source>> map_tensors(const hf_model_config& cfg, const checkpoint& ckpt,
                                               const std::vector<models::tensor_spec>& expected);

/// Applies the llama Q/K row permutation to `rows` rows of `row_elems` floats (whole heads of `head_dim` rows).
void permute_qk_rows(float* data, std::uint64_t rows, std::uint64_t row_elems, std::uint64_t head_dim);

} // namespace sluice::convert
