// Hugging Face tensor names of the Gated DeltaNet hybrids to GGUF, and the layout each GGUF tensor needs (used by
// tensor_map): the multimodal prefix, the MTP block, the linear-attention projections, and the row orders, column
// orders and value transforms of hybrid_layout.hpp.
#pragma once

#include "runtime/convert/hf_config.hpp"
#include "runtime/convert/tensor_map.hpp"
#include "runtime/models/tensor_names.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace sluice::convert {

/// A hybrid checkpoint's tensor name as the decoder tables spell it: "model.language_model." becomes "model.",
/// "mtp.layers.0.X" becomes "model.layers.<n_layer>.X" and the MTP projection and norms get their own names
/// (see hybrid_layer_entry). nullopt: a tensor to skip (the vision tower).
std::optional<std::string> hybrid_tensor_name(const hf_model_config& cfg, std::string_view name);

/// The GGUF tensor of a hybrid layer's tensor `rest` ("linear_attn.in_proj_qkv.weight"), when it is one.
struct hybrid_target {
    models::tensor_kind kind;
    models::tensor_suffix suffix = models::tensor_suffix::weight;
    bool fused_qkvz = false; ///< Qwen3-Next's in_proj_qkvz: becomes attn_qkv and attn_gate
};
std::optional<hybrid_target> hybrid_layer_entry(std::string_view rest);

/// Sets what `src` needs on the way to GGUF in a hybrid model: the tiled value-head order of qwen35/qwen35moe
/// (rows through `src.runs`, columns through `src.column_order`), 1 + w for the zero-centred norms, -exp for
/// ssm_a. `kind` is src's tensor kind. The runs must still be the whole source tensor's rows.
void apply_hybrid_layout(const hf_model_config& cfg, models::tensor_kind kind, tensor_source& src);

/// The runs of attn_qkv and attn_gate taken from Qwen3-Next's fused in_proj_qkvz tensor `t`.
std::vector<row_run> qwen3next_split_runs(const hf_model_config& cfg, const st_tensor& t, bool gate);

} // namespace sluice::convert
