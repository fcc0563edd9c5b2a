// config.json to the hybrid (Gated DeltaNet + gated attention) geometry, following llama.cpp's converter for
// Qwen3_5(Moe)ForCausalLM/ForConditionalGeneration and Qwen3NextForCausalLM.
#include "runtime/convert/hf_config_hybrid.hpp"

#include <boost/json.hpp>

#include <cmath>
#include <limits>
#include <string>

namespace sluice::convert {

namespace json = boost::json;

namespace {

error field_error(std::string_view field, std::string_view why) {
    return make_error(std::errc::invalid_argument,
                      "config.json: field " + std::string(field) + ": " + std::string(why));
}

const json::value* find(const json::object& o, std::string_view key) {
    const auto* v = o.if_contains(key);
    return v == nullptr || v->is_null() ? nullptr : v;
}

/// A positive 32-bit count; `fallback` when absent and fallback is given.
result<std::uint32_t> count(const json::object& o, std::string_view key, std::optional<std::uint32_t> fallback = {}) {
    const auto* v = find(o, key);
    if (v == nullptr) {
        if (fallback) {
            return *fallback;
        }
        return field_error(key, "missing");
    }
    const bool ok =
        (v->is_int64() && v->get_int64() > 0 && v->get_int64() <= std::numeric_limits<std::uint32_t>::max()) ||
        (v->is_uint64() && v->get_uint64() > 0 && v->get_uint64() <= std::numeric_limits<std::uint32_t>::max());
    if (!ok) {
        return field_error(key, "expected a positive 32-bit integer, found " + json::serialize(*v));
    }
    return static_cast<std::uint32_t>(v->to_number<std::uint64_t>());
}

/// rope_parameters (transformers 5) or rope_scaling (4), when it is an object.
const json::object* rope_object(const json::object& o, std::string& name) {
    for (const char* key : {"rope_parameters", "rope_scaling"}) {
        if (const auto* v = find(o, key); v && v->is_object()) {
            name = key;
            return &v->get_object();
        }
    }
    return nullptr;
}

/// Rotated dimensions per head: head_dim times partial_rotary_factor (rope object first, then top level;
/// 0.25 when neither says, as both transformers and llama.cpp default it).
result<void> read_partial_rotary(const json::object& o, const json::object* rope, const std::string& rope_name,
                                 models::model_hparams& hp) {
    double factor = 0.25;
    std::string field = "partial_rotary_factor";
    const json::value* v = rope ? find(*rope, "partial_rotary_factor") : nullptr;
    if (v != nullptr) {
        field = rope_name + ".partial_rotary_factor";
    } else {
        v = find(o, "partial_rotary_factor");
    }
    if (v != nullptr) {
        if (!v->is_number() || !(v->to_number<double>() > 0.0) || v->to_number<double>() > 1.0) {
            return field_error(field, "expected a number in (0, 1], found " + json::serialize(*v));
        }
        factor = v->to_number<double>();
    }
    const auto n_rot = static_cast<std::uint32_t>(static_cast<double>(hp.head_dim) * factor);
    if (n_rot == 0 || n_rot % 2 != 0) {
        return field_error(field, "head_dim x partial_rotary_factor must be a positive even number of dimensions");
    }
    hp.rope.n_rot = n_rot;
    return {};
}

/// M-RoPE sections (Qwen3.5): [11, 11, 10] when absent, as llama.cpp writes; interleaved only.
result<void> read_sections(const json::object* rope, const std::string& rope_name, hf_hybrid_config& h,
                           std::uint32_t n_rot) {
    h.rope_sections = {11, 11, 10, 0};
    if (rope == nullptr) {
        return {};
    }
    if (const auto* inter = find(*rope, "mrope_interleaved"); inter && !(inter->is_bool() && inter->get_bool())) {
        return field_error(rope_name + ".mrope_interleaved", "only interleaved M-RoPE sections are supported");
    }
    const auto* sec = find(*rope, "mrope_section");
    if (sec == nullptr) {
        return {};
    }
    const std::string field = rope_name + ".mrope_section";
    if (!sec->is_array() || sec->get_array().empty() || sec->get_array().size() > 4) {
        return field_error(field, "expected a list of up to 4 section sizes");
    }
    h.rope_sections = {};
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < sec->get_array().size(); ++i) {
        const auto& x = sec->get_array()[i];
        if (!x.is_int64() || x.get_int64() < 0 || x.get_int64() > 4096) {
            return field_error(field, "expected non-negative integers, found " + json::serialize(x));
        }
        h.rope_sections[i] = static_cast<std::uint32_t>(x.get_int64());
        sum += h.rope_sections[i];
    }
    if (sum == 0 || sum > n_rot / 2) {
        return field_error(field, "sections must add up to at most half the rotated dimensions (" +
                                      std::to_string(n_rot / 2) + ")");
    }
    return {};
}

/// The layer pattern: layer_types (transformers 5), else full_attention_interval (default 4). When both are given
/// they must agree.
result<void> read_pattern(const json::object& o, std::uint32_t n_layer, hf_hybrid_config& h) {
    std::uint32_t interval = 4;
    const bool has_interval = find(o, "full_attention_interval") != nullptr;
    if (has_interval) {
        auto i = count(o, "full_attention_interval");
        if (!i) {
            return i.error();
        }
        interval = *i;
    }
    h.recurrent.assign(n_layer, false);
    for (std::uint32_t l = 0; l < n_layer; ++l) {
        h.recurrent[l] = (l + 1) % interval != 0;
    }
    if (const auto* types = find(o, "layer_types")) {
        if (!types->is_array() || types->get_array().size() != n_layer) {
            return field_error("layer_types",
                               "expected a list of num_hidden_layers (" + std::to_string(n_layer) + ") layer types");
        }
        std::vector<bool> from_types(n_layer);
        for (std::uint32_t l = 0; l < n_layer; ++l) {
            const auto& t = types->get_array()[l];
            const std::string_view name = t.is_string() ? std::string_view(t.get_string()) : "";
            if (name != "linear_attention" && name != "full_attention") {
                return field_error("layer_types", "entry " + std::to_string(l) + " is " + json::serialize(t) +
                                                      ", expected \"linear_attention\" or \"full_attention\"");
            }
            from_types[l] = name == "linear_attention";
        }
        if (has_interval && from_types != h.recurrent) {
            return field_error("layer_types", "disagrees with full_attention_interval " + std::to_string(interval));
        }
        h.recurrent = std::move(from_types);
    }
    // The interval GGUF records when the pattern is periodic (full attention closes every period).
    h.full_attention_interval = 0;
    for (std::uint32_t p = 1; p <= n_layer && h.full_attention_interval == 0; ++p) {
        bool fits = true;
        for (std::uint32_t l = 0; l < n_layer && fits; ++l) {
            fits = h.recurrent[l] == ((l + 1) % p != 0);
        }
        h.full_attention_interval = fits ? p : 0;
    }
    return {};
}

} // namespace

bool is_hybrid_family(hf_family family) noexcept {
    return family == hf_family::qwen35moe || family == hf_family::qwen35 || family == hf_family::qwen3next;
}

result<void> read_hybrid_config(const json::object& o, hf_family family, hf_model_config& cfg) {
    hf_hybrid_config h;
    auto& hp = cfg.hp;
    // Gated DeltaNet geometry. llama.cpp keeps one head dimension (ssm.state_size) for keys and values.
    std::uint32_t key_dim = 0, value_dim = 0;
    for (auto [target, key] : {std::pair{&h.conv_kernel, "linear_conv_kernel_dim"},
                               {&key_dim, "linear_key_head_dim"},
                               {&value_dim, "linear_value_head_dim"},
                               {&h.group_count, "linear_num_key_heads"},
                               {&h.time_step_rank, "linear_num_value_heads"}}) {
        auto v = count(o, key);
        if (!v) {
            return v.error();
        }
        *target = *v;
    }
    if (value_dim != key_dim) {
        return field_error("linear_value_head_dim", "must equal linear_key_head_dim (" + std::to_string(key_dim) + ")");
    }
    if (h.time_step_rank % h.group_count != 0) {
        return field_error("linear_num_value_heads", "must be a multiple of linear_num_key_heads");
    }
    h.state_size = key_dim;
    h.inner_size = value_dim * h.time_step_rank;
    if (auto r = read_pattern(o, hp.n_layer, h); !r) {
        return r;
    }
    std::string rope_name;
    const json::object* rope = rope_object(o, rope_name);
    if (auto r = read_partial_rotary(o, rope, rope_name, hp); !r) {
        return r;
    }
    if (family != hf_family::qwen3next) {
        if (auto r = read_sections(rope, rope_name, h, hp.rope.n_rot); !r) {
            return r;
        }
    }
    if (const auto* mtp = find(o, "mtp_num_hidden_layers")) {
        if (!mtp->is_int64() || mtp->get_int64() < 0 || mtp->get_int64() > 16) {
            return field_error("mtp_num_hidden_layers", "expected a small non-negative integer");
        }
        h.mtp_layers = static_cast<std::uint32_t>(mtp->get_int64());
    }
    // The same in the model's own terms (what the GGUF writer and the architecture read).
    auto& mh = hp.hybrid;
    mh.conv_kernel = h.conv_kernel;
    mh.state_size = h.state_size;
    mh.group_count = h.group_count;
    mh.time_step_rank = h.time_step_rank;
    mh.inner_size = h.inner_size;
    mh.recurrent = h.recurrent;
    mh.rope_sections = h.rope_sections;
    mh.nextn_layers = h.mtp_layers;
    mh.tiled_value_heads = family != hf_family::qwen3next;
    mh.fused_ba = family == hf_family::qwen3next;
    cfg.hybrid = std::move(h);
    return {};
}

} // namespace sluice::convert
