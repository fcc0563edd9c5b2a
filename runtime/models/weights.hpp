// A model's weights resident in memory: views of every tensor a layer uses, read through io/ (no mmap).
#pragma once

#include "io/dma_buffer.hpp"
#include "io/reader.hpp"
#include "kernels/quant_type.hpp"
#include "kernels/repack.hpp"
#include "runtime/gguf/model_files.hpp"
#include "runtime/models/architecture.hpp"
#include "runtime/models/hparams.hpp"
#include "runtime/models/tensor_names.hpp"
#include "sluice/error.hpp"
#include "sluice/model_options.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <functional>
#include <vector>

namespace sluice::models {

/// A matrix (rows of `cols` values), vector or 3-D expert tensor. Absent (false) when the model has no such
/// tensor; `data` is null for expert tensors left on disk for an expert cache.
struct weight_view {
    const std::byte* data = nullptr;
    kernels::quant_type type = kernels::quant_type::f32;
    std::uint64_t cols = 0;      ///< ne[0]
    std::uint64_t rows = 0;      ///< ne[1]
    std::uint64_t row_bytes = 0; ///< bytes of one row
    std::uint64_t n_expert = 0;  ///< experts stacked in a routed-expert tensor (its last dimension), else 0
    std::uint64_t expert_stride = 0; ///< bytes of one expert's slab (rows * row_bytes; row_bytes for a bias)
    /// How the resident rows are laid out (kernels/repack.hpp): GGUF's rows, or repacked at load for the kernels.
    /// Streamed expert tensors keep GGUF's layout (the cache reads file bytes). Same bytes either way.
    kernels::weight_layout layout = kernels::weight_layout::rows;

    explicit operator bool() const noexcept { return cols != 0; }
    /// F32 contents of a vector or router tensor (the loader checked the type).
    [[nodiscard]] const float* f32() const noexcept { return reinterpret_cast<const float*>(data); }
};

/// The Gated DeltaNet hybrids' linear-attention tensors (absent in every other layer).
struct hybrid_layer_weights {
    weight_view qkv, gate, conv1d, dt, a, alpha, beta, ba, norm, out;
    weight_view eh_proj, enorm, hnorm, shared_head_norm, embed_tokens, shared_head_head; ///< MTP block only
};

/// The tensors of one decoder layer (absent ones are empty views).
struct layer_weights {
    weight_view attn_norm, wq, wk, wv, wo, bq, bk, bv, q_norm, k_norm, ffn_norm;
    weight_view ffn_gate, ffn_up, ffn_down;                       ///< dense FFN
    weight_view router, gate_exps, up_exps, down_exps;            ///< routed experts (3-D)
    weight_view gate_exps_bias, up_exps_bias, down_exps_bias;     ///< their per-expert biases (2-D), if any
    weight_view shexp_gate_inp, shexp_gate, shexp_up, shexp_down; ///< shared expert
    weight_view bo, sinks, post_attn_norm, router_bias; ///< gpt-oss: output bias, sinks, FFN norm, router bias
    hybrid_layer_weights hybrid;                        ///< Gated DeltaNet hybrids
    weight_view wq_a, q_a_norm, wq_b, wkv_a, kv_a_norm, wk_b, wv_b; ///< multi-head latent attention (deepseek2)
    weight_view exp_probs_b; ///< the experts' selection bias (deepseek2, glm4moe)

    /// The norm before the FFN or MoE block: ffn_norm, or gpt-oss's post_attention_norm.
    [[nodiscard]] const weight_view& ffn_input_norm() const noexcept { return ffn_norm ? ffn_norm : post_attn_norm; }
};

/// A resident matrix to rewrite into the layout its kernels prefer (kernels::repack_rows, in place).
struct repack_job {
    std::byte* data;
    std::uint64_t rows; ///< all rows of the tensor (stacked experts included)
    std::uint64_t cols;
    std::uint64_t row_bytes; ///< in GGUF's layout
    kernels::weight_layout layout;
};

/// Progress of a load: bytes read so far of the total.
using load_progress = sluice::load_progress;

/// Every weight of a model, in memory. Move-only.
class model_weights {
public:
    /// Checks that `files` holds exactly the tensors `arch` expects for `hp` (names, shapes, types a kernel
    /// can run; vectors and routers F32), reads all tensor data into resident memory with large aligned reads
    /// through `reader`, and builds the views. Routed experts of layers past the main stack (MTP blocks) stay on
    /// disk unless `nextn_experts` (multi-token prediction runs them). With `skip_experts`, every routed-expert
    /// tensor of the main stack stays on disk: their views have shape and type but no data (an expert_cache reads
    /// them). Errors name the tensor ("tensor blk.3.ffn_up_exps.weight: ...").
    static boost::asio::awaitable<result<model_weights>> load(io::reader& reader, const gguf::model_files& files,
                                                              const architecture& arch, const model_hparams& hp,
                                                              load_progress progress = {}, bool skip_experts = false,
                                                              bool nextn_experts = false);

    weight_view token_embd, output_norm, output; ///< output aliases token_embd for tied embeddings
    std::vector<layer_weights> layers;
    /// Multi-token prediction blocks after the main stack (hp.hybrid.nextn_layers): loaded, not run by the forward
    /// pass (speculation::mtp_block runs them). Their routed experts stay on disk unless loaded with nextn_experts.
    std::vector<layer_weights> nextn;

    /// Gives the resident matrices that only go through the matrix products (attention and FFN projections,
    /// experts, an untied output matrix) the layout their kernels prefer at the active ISA level
    /// (kernels::preferred_layout) and returns the rewrites that makes due. The caller must run every job before
    /// the weights are used; jobs touch disjoint bytes, so they may run on any threads. The bytes held do not
    /// change, so the memory plan stays right.
    std::vector<repack_job> choose_layouts();

    /// Bytes held in memory.
    [[nodiscard]] std::uint64_t resident_bytes() const noexcept;

private:
    std::vector<io::dma_buffer> arenas_; ///< one per model file part: its tensor data region
};

/// Checks the tensor table of `files` against what `arch` expects for `hp` (the load's first step).
result<void> check_tensors(const gguf::model_files& files, const architecture& arch, const model_hparams& hp);

} // namespace sluice::models
