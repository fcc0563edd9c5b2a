// Name table from Hugging Face checkpoints to llama.cpp tensor names, with shape checks and expert stacking.
#include "runtime/convert/tensor_map.hpp"

#include "runtime/convert/hybrid_tensors.hpp"
#include "runtime/convert/mxfp4_import.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <unordered_map>

namespace sluice::convert {

namespace {

enum class target_kind {
    whole,         ///< the tensor as it is (leading 1-dims dropped)
    expert,        ///< one expert's [rows, cols] slab of a 3-D experts tensor
    fused_gate_up, ///< [E, 2*ff, n_embd]: gate rows then up rows of each expert
    fused_qkvz,    ///< Qwen3-Next's in_proj_qkvz: attn_qkv and attn_gate rows regrouped per key head
    ignore,        ///< buffers that are not weights (rotary inv_freq)
    // gpt-oss: gate and up interleaved (gate j at 2j, up at 2j + 1)
    mxfp4_blocks,  ///< *_blocks U8 [E, rows, cols/32, 16] (gate_up: 2*ff interleaved rows)
    mxfp4_scales,  ///< *_scales U8 [E, rows, cols/32]
    dense_gate_up, ///< gate_up_proj [E, n_embd, 2*ff]: transposed, interleaved columns
    dense_down,    ///< down_proj [E, ff, n_embd]: transposed
    gate_up_bias,  ///< gate_up_proj_bias [E, 2*ff]: interleaved
    kv_b_split,    ///< DeepSeek's kv_b_proj [H*(nope+v), r]: attn_k_b (per head transposed) and attn_v_b
};

struct hf_target {
    target_kind kind = target_kind::whole;
    std::string gguf;
    std::uint32_t expert = 0;
};

using models::tensor_kind;
using models::tensor_suffix;

/// gpt-oss's own tensor names (what its layers have that the common table has not, or lays out otherwise).
std::optional<hf_target> map_gpt_oss_name(std::uint32_t layer, std::string_view rest) {
    struct entry {
        std::string_view hf;
        target_kind kind;
        tensor_kind gguf;
        tensor_suffix suffix = tensor_suffix::weight;
    };
    static constexpr entry table[] = {
        {"post_attention_layernorm.weight", target_kind::whole, tensor_kind::attn_post_norm},
        {"self_attn.sinks", target_kind::whole, tensor_kind::attn_sinks},
        {"self_attn.o_proj.bias", target_kind::whole, tensor_kind::attn_output, tensor_suffix::bias},
        {"mlp.router.weight", target_kind::whole, tensor_kind::ffn_gate_inp},
        {"mlp.router.bias", target_kind::whole, tensor_kind::ffn_gate_inp, tensor_suffix::bias},
        {"mlp.experts.gate_up_proj_blocks", target_kind::mxfp4_blocks, tensor_kind::ffn_gate_exps},
        {"mlp.experts.gate_up_proj_scales", target_kind::mxfp4_scales, tensor_kind::ffn_gate_exps},
        {"mlp.experts.down_proj_blocks", target_kind::mxfp4_blocks, tensor_kind::ffn_down_exps},
        {"mlp.experts.down_proj_scales", target_kind::mxfp4_scales, tensor_kind::ffn_down_exps},
        {"mlp.experts.gate_up_proj", target_kind::dense_gate_up, tensor_kind::ffn_gate_exps},
        {"mlp.experts.down_proj", target_kind::dense_down, tensor_kind::ffn_down_exps},
        {"mlp.experts.gate_up_proj_bias", target_kind::gate_up_bias, tensor_kind::ffn_gate_exps, tensor_suffix::bias},
        {"mlp.experts.down_proj_bias", target_kind::whole, tensor_kind::ffn_down_exps, tensor_suffix::bias},
    };
    for (const auto& e : table) {
        if (rest == e.hf) {
            return hf_target{e.kind, models::tensor_name(e.gguf, layer, e.suffix), 0};
        }
    }
    return std::nullopt;
}

/// DeepSeek-V3 / Kimi-K2 and GLM-4.5's own names: MLA projections, the selection bias, shared experts (one fused
/// entry), GLM's FFN norm and its NextN tensors.
std::optional<hf_target> map_moe_family_name(std::uint32_t layer, std::string_view rest, hf_family family) {
    struct entry {
        std::string_view hf;
        tensor_kind gguf;
        tensor_suffix suffix = tensor_suffix::weight;
    };
    static constexpr entry table[] = {
        {"self_attn.q_a_proj.weight", tensor_kind::attn_q_a},
        {"self_attn.q_a_layernorm.weight", tensor_kind::attn_q_a_norm},
        {"self_attn.q_b_proj.weight", tensor_kind::attn_q_b},
        {"self_attn.kv_a_proj_with_mqa.weight", tensor_kind::attn_kv_a_mqa},
        {"self_attn.kv_a_layernorm.weight", tensor_kind::attn_kv_a_norm},
        {"mlp.gate.e_score_correction_bias", tensor_kind::exp_probs_b, tensor_suffix::bias},
        {"mlp.shared_experts.gate_proj.weight", tensor_kind::ffn_gate_shexp},
        {"mlp.shared_experts.up_proj.weight", tensor_kind::ffn_up_shexp},
        {"mlp.shared_experts.down_proj.weight", tensor_kind::ffn_down_shexp},
        {"eh_proj.weight", tensor_kind::nextn_eh_proj},
        {"enorm.weight", tensor_kind::nextn_enorm},
        {"hnorm.weight", tensor_kind::nextn_hnorm},
        {"shared_head.norm.weight", tensor_kind::nextn_shared_head_norm},
        {"shared_head.head.weight", tensor_kind::nextn_shared_head_head},
        {"embed_tokens.weight", tensor_kind::nextn_embed_tokens},
    };
    if (rest == "self_attn.kv_b_proj.weight") {
        return hf_target{target_kind::kv_b_split, models::tensor_name(tensor_kind::attn_k_b, layer), 0};
    }
    if (family == hf_family::glm4moe && rest == "post_attention_layernorm.weight") {
        return hf_target{target_kind::whole, models::tensor_name(tensor_kind::attn_post_norm, layer), 0};
    }
    for (const auto& e : table) {
        if (rest == e.hf) {
            return hf_target{target_kind::whole, models::tensor_name(e.gguf, layer, e.suffix), 0};
        }
    }
    return std::nullopt;
}

/// Suffixes of "model.layers.N." and the GGUF tensor they map to.
struct layer_entry {
    std::string_view hf;
    tensor_kind kind;
    tensor_suffix suffix = tensor_suffix::weight;
};

constexpr layer_entry layer_table[] = {
    {"input_layernorm.weight", tensor_kind::attn_norm},
    {"post_attention_layernorm.weight", tensor_kind::ffn_norm},
    {"self_attn.q_proj.weight", tensor_kind::attn_q},
    {"self_attn.k_proj.weight", tensor_kind::attn_k},
    {"self_attn.v_proj.weight", tensor_kind::attn_v},
    {"self_attn.o_proj.weight", tensor_kind::attn_output},
    {"self_attn.q_proj.bias", tensor_kind::attn_q, tensor_suffix::bias},
    {"self_attn.k_proj.bias", tensor_kind::attn_k, tensor_suffix::bias},
    {"self_attn.v_proj.bias", tensor_kind::attn_v, tensor_suffix::bias},
    {"self_attn.q_norm.weight", tensor_kind::attn_q_norm},
    {"self_attn.k_norm.weight", tensor_kind::attn_k_norm},
    {"mlp.gate_proj.weight", tensor_kind::ffn_gate},
    {"mlp.up_proj.weight", tensor_kind::ffn_up},
    {"mlp.down_proj.weight", tensor_kind::ffn_down},
    {"mlp.gate.weight", tensor_kind::ffn_gate_inp},
    {"block_sparse_moe.gate.weight", tensor_kind::ffn_gate_inp},
    {"mlp.shared_expert.gate_proj.weight", tensor_kind::ffn_gate_shexp},
    {"mlp.shared_expert.up_proj.weight", tensor_kind::ffn_up_shexp},
    {"mlp.shared_expert.down_proj.weight", tensor_kind::ffn_down_shexp},
    {"mlp.shared_expert_gate.weight", tensor_kind::ffn_gate_inp_shexp},
    // Experts stored stacked, one 3-D tensor per projection (newer transformers).
    {"mlp.experts.gate_proj", tensor_kind::ffn_gate_exps},
    {"mlp.experts.up_proj", tensor_kind::ffn_up_exps},
    {"mlp.experts.down_proj", tensor_kind::ffn_down_exps},
    {"mlp.experts.gate_proj.weight", tensor_kind::ffn_gate_exps},
    {"mlp.experts.up_proj.weight", tensor_kind::ffn_up_exps},
    {"mlp.experts.down_proj.weight", tensor_kind::ffn_down_exps},
};

/// Per-expert projection names: (prefix, projection, GGUF tensor).
struct expert_entry {
    std::string_view prefix;
    std::string_view proj;
    tensor_kind kind;
};

constexpr expert_entry expert_table[] = {
    {"mlp.experts.", "gate_proj.weight", tensor_kind::ffn_gate_exps},
    {"mlp.experts.", "up_proj.weight", tensor_kind::ffn_up_exps},
    {"mlp.experts.", "down_proj.weight", tensor_kind::ffn_down_exps},
    {"block_sparse_moe.experts.", "w1.weight", tensor_kind::ffn_gate_exps},
    {"block_sparse_moe.experts.", "w3.weight", tensor_kind::ffn_up_exps},
    {"block_sparse_moe.experts.", "w2.weight", tensor_kind::ffn_down_exps},
};

/// Reads a decimal number at the start of `s` followed by '.', advancing past both.
std::optional<std::uint32_t> take_index(std::string_view& s) {
    std::uint32_t n = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec != std::errc{} || end == s.data() || end == s.data() + s.size() || *end != '.') {
        return std::nullopt;
    }
    s.remove_prefix(static_cast<std::size_t>(end - s.data()) + 1);
    return n;
}

std::optional<hf_target> map_layer_name(std::uint32_t layer, std::string_view rest, hf_family family) {
    if (family == hf_family::gpt_oss) {
        if (auto t = map_gpt_oss_name(layer, rest)) {
            return t;
        }
    }
    if (family == hf_family::deepseek2 || family == hf_family::glm4moe) {
        if (auto t = map_moe_family_name(layer, rest, family)) {
            return t;
        }
    }
    if (rest == "self_attn.rotary_emb.inv_freq") {
        return hf_target{target_kind::ignore, {}, 0};
    }
    for (const auto& e : layer_table) {
        if (rest == e.hf) {
            return hf_target{target_kind::whole, models::tensor_name(e.kind, layer, e.suffix), 0};
        }
    }
    if (rest == "mlp.experts.gate_up_proj" || rest == "mlp.experts.gate_up_proj.weight") {
        return hf_target{target_kind::fused_gate_up, models::tensor_name(tensor_kind::ffn_gate_exps, layer), 0};
    }
    for (const auto& e : expert_table) {
        if (!rest.starts_with(e.prefix)) {
            continue;
        }
        std::string_view tail = rest.substr(e.prefix.size());
        const auto expert = take_index(tail);
        if (expert && tail == e.proj) {
            return hf_target{target_kind::expert, models::tensor_name(e.kind, layer), *expert};
        }
    }
    return std::nullopt;
}

/// A hybrid layer's own tensors ("model.layers.N.linear_attn...", its MTP names, post_attention_layernorm).
std::optional<hf_target> map_hybrid_name(std::string_view name) {
    constexpr std::string_view layers = "model.layers.";
    if (!name.starts_with(layers)) {
        return std::nullopt;
    }
    std::string_view rest = name.substr(layers.size());
    const auto layer = take_index(rest);
    const auto e = layer ? hybrid_layer_entry(rest) : std::nullopt;
    if (!e) {
        return std::nullopt;
    }
    return hf_target{e->fused_qkvz ? target_kind::fused_qkvz : target_kind::whole,
                     models::tensor_name(e->kind, *layer, e->suffix), 0};
}

std::optional<hf_target> map_name(std::string_view name, hf_family family) {
    if (name == "model.embed_tokens.weight") {
        return hf_target{target_kind::whole, models::tensor_name(tensor_kind::token_embd), 0};
    }
    if (name == "model.norm.weight") {
        return hf_target{target_kind::whole, models::tensor_name(tensor_kind::output_norm), 0};
    }
    if (name == "lm_head.weight") {
        return hf_target{target_kind::whole, models::tensor_name(tensor_kind::output), 0};
    }
    constexpr std::string_view layers = "model.layers.";
    if (!name.starts_with(layers)) {
        return std::nullopt;
    }
    std::string_view rest = name.substr(layers.size());
    const auto layer = take_index(rest);
    if (!layer) {
        return std::nullopt;
    }
    return map_layer_name(*layer, rest, family);
}

std::vector<std::uint64_t> strip_leading_ones(std::vector<std::uint64_t> shape) {
    while (shape.size() > 1 && shape.front() == 1) {
        shape.erase(shape.begin());
    }
    return shape;
}

/// The sources gathered for one expected tensor.
struct slot {
    const models::tensor_spec* spec = nullptr;
    std::vector<row_run> runs;                   ///< whole or stacked tensors
    std::string from;                            ///< the HF tensor that filled `runs`
    std::vector<std::optional<row_run>> experts; ///< per-expert slabs
    std::vector<gather_run> gathers;             ///< gpt-oss's transposed or interleaved tensors
    const st_tensor* mx_blocks = nullptr;        ///< gpt-oss MXFP4, paired in finish()
    const st_tensor* mx_scales = nullptr;
    std::uint64_t mx_interleave =
        0; ///< 0: rows in order; else 2 rows per output row, this one at offset (interleave-1)
};

class mapper {
public:
    mapper(const hf_model_config& cfg, const std::vector<models::tensor_spec>& expected) : cfg_(cfg) {
        for (const auto& s : expected) {
            slot sl;
            sl.spec = &s;
            if (s.role == models::tensor_role::experts) {
                sl.experts.resize(s.ne[2]);
            }
            slots_.emplace(s.name, std::move(sl));
        }
    }

    result<void> add(const st_tensor& t) {
        std::optional<hf_target> target;
        if (cfg_.hybrid) {
            const auto name = hybrid_tensor_name(cfg_, t.name);
            if (!name) {
                return {}; // the vision tower of a multimodal checkpoint
            }
            target = map_hybrid_name(*name);
            target = target ? target : map_name(*name, cfg_.family);
        } else if (!cfg_.tensor_prefix.empty()) {
            // Kimi-K2.5: the language model's tensors under the prefix; the vision tower and projector are not
            // part of the GGUF language model.
            if (!std::string_view(t.name).starts_with(cfg_.tensor_prefix)) {
                return {};
            }
            target = map_name(std::string_view(t.name).substr(cfg_.tensor_prefix.size()), cfg_.family);
        } else {
            target = map_name(t.name, cfg_.family);
        }
        if (target && cfg_.family == hf_family::deepseek2 && past_main_stack(target->gguf)) {
            return {}; // DeepSeek's NextN layers: llama.cpp's deepseek2 files leave them out
        }
        if (!target) {
            return make_error(std::errc::not_supported,
                              "tensor " + t.name + ": not a tensor of " + cfg_.hf_class + " known to the converter");
        }
        if (target->kind == target_kind::ignore || (cfg_.tied_embeddings && target->gguf == models::tensor_name(tensor_kind::output))) {
            return {};
        }
        if (t.dtype == st_dtype::other) {
            return make_error(std::errc::not_supported, "tensor " + t.name + ": dtype " + t.dtype_name +
                                                            " is not supported (F32, F16, BF16 are)");
        }
        const auto it = slots_.find(target->gguf);
        if (it == slots_.end()) {
            return make_error(std::errc::invalid_argument, "tensor " + t.name + " (" + target->gguf +
                                                               "): not part of a " + cfg_.hp.arch +
                                                               " model with this config.json");
        }
        switch (target->kind) {
        case target_kind::whole:
            return add_whole(t, it->second);
        case target_kind::expert:
            return add_expert(t, it->second, target->expert);
        case target_kind::fused_gate_up:
            return add_fused(t, it->second);
        case target_kind::mxfp4_blocks:
        case target_kind::mxfp4_scales:
            return add_mxfp4(t, it->second, target->kind == target_kind::mxfp4_blocks);
        case target_kind::dense_gate_up:
        case target_kind::dense_down:
        case target_kind::gate_up_bias:
            return add_gathered(t, it->second, target->kind);
        case target_kind::fused_qkvz:
            return add_qkvz(t, it->second);
        case target_kind::kv_b_split:
            return add_kv_b(t, it->second);
        case target_kind::ignore:
            break;
        }
        return {};
    }

    result<std::vector<tensor_source>> finish(const std::vector<models::tensor_spec>& expected) {
        std::vector<tensor_source> out;
        for (const auto& s : expected) {
            slot& sl = slots_.at(s.name);
            tensor_source src;
            src.spec = s;
            if (sl.mx_blocks || sl.mx_scales) {
                if (auto r = mxfp4_runs(sl, src); !r) {
                    return r.error();
                }
                out.push_back(std::move(src));
                continue;
            }
            if (!sl.gathers.empty()) {
                src.gathers = sl.gathers;
                out.push_back(std::move(src));
                continue;
            }
            if (!sl.experts.empty() && sl.runs.empty()) {
                for (std::size_t e = 0; e < sl.experts.size(); ++e) {
                    if (!sl.experts[e]) {
                        return make_error(std::errc::invalid_argument, "tensor " + s.name +
                                                                           ": the checkpoint has no expert " +
                                                                           std::to_string(e) + " for it");
                    }
                    src.runs.push_back(*sl.experts[e]);
                }
            } else {
                src.runs = sl.runs;
            }
            if (src.runs.empty()) {
                // The one optional tensor, output.weight, may only be absent when config.json ties it.
                if (s.optional && (s.name != models::tensor_name(tensor_kind::output) || cfg_.tied_embeddings)) {
                    continue;
                }
                return make_error(std::errc::invalid_argument, "tensor " + s.name + ": missing from the checkpoint");
            }
            const auto parsed = models::parse_tensor_name(s.name);
            if (cfg_.hybrid && parsed && sl.from != "fused in_proj_qkvz") {
                apply_hybrid_layout(cfg_, parsed->kind, src);
            }
            const bool weight = parsed && parsed->suffix == tensor_suffix::weight;
            if (cfg_.hp.arch == "llama" && weight && parsed->kind == tensor_kind::attn_q) {
                src.permute_heads = cfg_.hp.n_head;
            } else if (cfg_.hp.arch == "llama" && weight && parsed->kind == tensor_kind::attn_k) {
                src.permute_heads = cfg_.hp.n_head_kv;
            }
            out.push_back(std::move(src));
        }
        return out;
    }

private:
    static error wrong_shape(const st_tensor& t, std::string_view gguf, std::span<const std::uint64_t> want) {
        return make_error(std::errc::invalid_argument, "tensor " + t.name + " (" + std::string(gguf) + "): shape " +
                                                           shape_string(t.shape) + ", expected " + shape_string(want));
    }

    result<void> claim(const st_tensor& t, slot& sl) {
        if (!sl.runs.empty() || !sl.gathers.empty() || sl.mx_blocks || sl.mx_scales ||
            std::any_of(sl.experts.begin(), sl.experts.end(), [](auto& e) { return e.has_value(); })) {
            return make_error(std::errc::invalid_argument, "tensor " + t.name + ": " + sl.spec->name +
                                                               " is already provided by " +
                                                               (sl.from.empty() ? "per-expert tensors" : sl.from));
        }
        sl.from = t.name;
        return {};
    }

    result<void> add_whole(const st_tensor& t, slot& sl) {
        std::vector<std::uint64_t> want(sl.spec->ne.rbegin(), sl.spec->ne.rend());
        // Hybrid checkpoints keep inner 1-dims too (conv1d [C, 1, K]); rows are all but the last dimension.
        const auto squeeze = [&](std::vector<std::uint64_t> shape) {
            if (cfg_.hybrid) {
                std::erase(shape, std::uint64_t{1});
            }
            return strip_leading_ones(std::move(shape));
        };
        if (squeeze(t.shape) != squeeze(want)) {
            return wrong_shape(t, sl.spec->name, want);
        }
        if (auto r = claim(t, sl); !r) {
            return r;
        }
        sl.runs.push_back({&t, 0, t.rows()});
        return {};
    }

    result<void> add_expert(const st_tensor& t, slot& sl, std::uint32_t e) {
        const auto& ne = sl.spec->ne;
        const std::vector<std::uint64_t> want{ne[1], ne[0]};
        if (sl.experts.empty() || e >= sl.experts.size()) {
            return make_error(std::errc::invalid_argument, "tensor " + t.name + ": expert " + std::to_string(e) +
                                                               " is out of range (the config has " +
                                                               std::to_string(sl.experts.size()) + " experts)");
        }
        if (t.shape != want) {
            return wrong_shape(t, sl.spec->name, want);
        }
        if (sl.experts[e] || !sl.runs.empty()) {
            return make_error(std::errc::invalid_argument, "tensor " + t.name + ": expert " + std::to_string(e) +
                                                               " of " + sl.spec->name + " given twice");
        }
        sl.experts[e] = row_run{&t, 0, ne[1]};
        return {};
    }

    result<void> add_fused(const st_tensor& t, slot& gate) {
        const auto parsed = models::parse_tensor_name(gate.spec->name);
        const std::string up_name = models::tensor_name(tensor_kind::ffn_up_exps, parsed ? *parsed->layer : 0);
        slot& up = slots_.at(up_name);
        const auto& ne = gate.spec->ne;
        const std::vector<std::uint64_t> want{ne[2], 2 * ne[1], ne[0]};
        if (t.shape != want) {
            return wrong_shape(t, gate.spec->name + " + " + up_name, want);
        }
        if (auto r = claim(t, gate); !r) {
            return r;
        }
        if (auto r = claim(t, up); !r) {
            return r;
        }
        for (std::uint64_t e = 0; e < ne[2]; ++e) {
            gate.runs.push_back({&t, e * 2 * ne[1], ne[1]});
            up.runs.push_back({&t, e * 2 * ne[1] + ne[1], ne[1]});
        }
        return {};
    }

    /// The up slot beside a gate slot of the same layer and suffix.
    slot& up_of(const slot& gate) {
        const auto parsed = models::parse_tensor_name(gate.spec->name);
        return slots_.at(models::tensor_name(tensor_kind::ffn_up_exps, parsed ? *parsed->layer : 0,
                                             parsed ? parsed->suffix : tensor_suffix::weight));
    }

    /// gpt-oss MXFP4: records the blocks or scales of a down tensor, or of gate and up together.
    result<void> add_mxfp4(const st_tensor& t, slot& sl, bool blocks) {
        const auto parsed = models::parse_tensor_name(sl.spec->name);
        const bool gate_up = parsed && parsed->kind == tensor_kind::ffn_gate_exps;
        std::vector<slot*> targets{&sl};
        if (gate_up) {
            targets.push_back(&up_of(sl));
        }
        for (std::size_t i = 0; i < targets.size(); ++i) {
            const st_tensor*& field = blocks ? targets[i]->mx_blocks : targets[i]->mx_scales;
            if (field != nullptr || !targets[i]->runs.empty() || !targets[i]->gathers.empty()) {
                return make_error(std::errc::invalid_argument,
                                  "tensor " + t.name + ": " + targets[i]->spec->name + " is already provided");
            }
            field = &t;
            targets[i]->mx_interleave = gate_up ? i + 1 : 0;
        }
        return {};
    }

    /// gpt-oss MXFP4 at finish(): both halves present, shapes checked, one run per expert.
    result<void> mxfp4_runs(const slot& sl, tensor_source& src) const {
        const auto& ne = sl.spec->ne; // {cols, rows, E}
        if (!sl.mx_blocks || !sl.mx_scales) {
            const st_tensor* have = sl.mx_blocks ? sl.mx_blocks : sl.mx_scales;
            return make_error(std::errc::invalid_argument, "tensor " + have->name + ": its " +
                                                               (sl.mx_blocks ? "_scales" : "_blocks") +
                                                               " partner is missing from the checkpoint");
        }
        const std::uint64_t hf_rows = sl.mx_interleave ? 2 * ne[1] : ne[1];
        if (auto r = check_mxfp4_pair(*sl.mx_blocks, *sl.mx_scales, ne[2], hf_rows, ne[0]); !r) {
            return r.error();
        }
        for (std::uint64_t e = 0; e < ne[2]; ++e) {
            const std::uint64_t offset = sl.mx_interleave ? sl.mx_interleave - 1 : 0;
            src.mxfp4.push_back({sl.mx_blocks, sl.mx_scales, e * hf_rows + offset, ne[1], sl.mx_interleave ? 2u : 1u});
        }
        return {};
    }

    /// gpt-oss's dense experts as transformers saves them (transposed, gate/up columns interleaved) and its
    /// interleaved gate/up biases: gathered runs.
    result<void> add_gathered(const st_tensor& t, slot& sl, target_kind kind) {
        const auto& ne = sl.spec->ne;
        const bool paired = kind != target_kind::dense_down;
        slot* const targets[2] = {&sl, paired ? &up_of(sl) : nullptr};
        std::vector<std::uint64_t> want;
        if (kind == target_kind::gate_up_bias) {
            want = {ne[1], 2 * ne[0]}; // [E, 2*ff]
        } else if (kind == target_kind::dense_gate_up) {
            want = {ne[2], ne[0], 2 * ne[1]}; // [E, n_embd, 2*ff]
        } else {
            want = {ne[2], ne[0], ne[1]}; // [E, ff, n_embd]
        }
        if (t.shape != want) {
            return wrong_shape(t, sl.spec->name, want);
        }
        for (std::size_t i = 0; i < (paired ? 2u : 1u); ++i) {
            if (auto r = claim(t, *targets[i]); !r) {
                return r;
            }
            if (kind == target_kind::gate_up_bias) { // output row e: elements e*2ff + i + 2j
                targets[i]->gathers.push_back({&t, 0, ne[1], ne[1], i, 2 * ne[0], 2});
                continue;
            }
            for (std::uint64_t e = 0; e < ne[2]; ++e) { // expert e: its [cols][2*ff or n_embd] matrix, by columns
                const std::uint64_t width = t.shape[2];
                targets[i]->gathers.push_back({&t, e * ne[0], ne[0], ne[1], i, paired ? 2u : 1u, width});
            }
        }
        return {};
    }

    /// Whether a GGUF name is in a block past the main stack.
    bool past_main_stack(const std::string& gguf) const {
        const auto parsed = models::parse_tensor_name(gguf);
        return parsed && parsed->layer && *parsed->layer >= cfg_.hp.n_layer;
    }

    /// DeepSeek's kv_b_proj [H * (nope + v), r], per head nope key rows then v value rows of the latent: attn_k_b
    /// {nope, r, H} holds each head's key rows transposed (r rows of nope values, gathered), attn_v_b {r, v, H} its
    /// value rows as they are.
    result<void> add_kv_b(const st_tensor& t, slot& k_b) {
        const auto parsed = models::parse_tensor_name(k_b.spec->name);
        slot& v_b = slots_.at(models::tensor_name(tensor_kind::attn_v_b, parsed ? *parsed->layer : 0));
        const std::uint64_t nope = k_b.spec->ne[0], rank = k_b.spec->ne[1], heads = k_b.spec->ne[2];
        const std::uint64_t v = v_b.spec->ne[1];
        const std::vector<std::uint64_t> want{heads * (nope + v), rank};
        if (t.shape != want) {
            return wrong_shape(t, k_b.spec->name + " + " + v_b.spec->name, want);
        }
        if (auto r = claim(t, k_b); !r) {
            return r;
        }
        if (auto r = claim(t, v_b); !r) {
            return r;
        }
        for (std::uint64_t h = 0; h < heads; ++h) {
            // Output row i (a latent index), element j (a key dimension) = kv_b[h (nope + v) + j][i].
            k_b.gathers.push_back({&t, h * (nope + v), nope, rank, 0, 1, rank});
            v_b.runs.push_back({&t, h * (nope + v) + nope, v});
        }
        return {};
    }

    /// Qwen3-Next's fused q/k/v/z projection: the rows of attn_qkv and of attn_gate, regrouped per key head.
    result<void> add_qkvz(const st_tensor& t, slot& qkv) {
        const auto parsed = models::parse_tensor_name(qkv.spec->name);
        slot& gate = slots_.at(models::tensor_name(tensor_kind::attn_gate, parsed ? *parsed->layer : 0));
        const std::vector<std::uint64_t> want{qkv.spec->ne[1] + gate.spec->ne[1], qkv.spec->ne[0]};
        if (t.shape != want) {
            return wrong_shape(t, qkv.spec->name + " + " + gate.spec->name, want);
        }
        if (auto r = claim(t, qkv); !r) {
            return r;
        }
        if (auto r = claim(t, gate); !r) {
            return r;
        }
        qkv.from = gate.from = "fused in_proj_qkvz";
        qkv.runs = qwen3next_split_runs(cfg_, t, false);
        gate.runs = qwen3next_split_runs(cfg_, t, true);
        return {};
    }

    const hf_model_config& cfg_;
    std::unordered_map<std::string, slot> slots_;
};

} // namespace

result<std::vector<tensor_source>> map_tensors(const hf_model_config& cfg, const checkpoint& ckpt,
                                               const std::vector<models::tensor_spec>& expected) {
    mapper m(cfg, expected);
    for (const auto& t : ckpt.tensors()) {
        if (auto r = m.add(t); !r) {
            return r.error();
        }
    }
    return m.finish(expected);
}

void permute_qk_rows(float* data, std::uint64_t rows, std::uint64_t row_elems, std::uint64_t head_dim) {
    const std::uint64_t half = head_dim / 2;
    std::vector<float> head(head_dim * row_elems);
    for (std::uint64_t h = 0; h + head_dim <= rows; h += head_dim) {
        float* base = data + h * row_elems;
        std::copy(base, base + head.size(), head.begin());
        for (std::uint64_t i = 0; i < half; ++i) {
            for (std::uint64_t j = 0; j < 2; ++j) {
                const float* from = head.data() + (j * half + i) * row_elems;
                std::copy(from, from + row_elems, base + (2 * i + j) * row_elems);
            }
        }
    }
}

} // namespace sluice::convert
