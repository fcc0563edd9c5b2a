// Reading, checking and writing the hybrids' GGUF keys.
#include "runtime/models/hybrid_hparams.hpp"

#include <string>

namespace sluice::models {

namespace {

std::string key(const model_hparams& hp, std::string_view suffix) {
    std::string k = hp.arch;
    k += '.';
    k += suffix;
    return k;
}

error bad(const model_hparams& hp, std::string_view suffix, const std::string& why) {
    return make_error(std::errc::invalid_argument, "metadata key " + key(hp, suffix) + ": " + why);
}

/// The layer pattern: the per-layer array when the file has one (llama.cpp reads it first), else the interval.
result<void> read_pattern(const gguf::metadata& kv, model_hparams& hp, std::uint32_t n_layer_all) {
    auto& h = hp.hybrid;
    const auto array_key = key(hp, "attention.recurrent_layers");
    if (kv.contains(array_key)) {
        auto arr = kv.get_array(array_key);
        if (!arr) {
            return arr.error();
        }
        std::vector<bool> flags;
        if (const auto* b = (*arr)->as<bool>()) {
            flags = *b;
        } else if (const auto* i = (*arr)->as<std::int32_t>()) {
            for (const auto x : *i) {
                flags.push_back(x != 0);
            }
        } else {
            return bad(hp, "attention.recurrent_layers", "expected an array of booleans");
        }
        if (flags.size() != n_layer_all && flags.size() != hp.n_layer) {
            return bad(hp, "attention.recurrent_layers",
                       std::to_string(flags.size()) + " entries for " + std::to_string(n_layer_all) + " blocks");
        }
        flags.resize(hp.n_layer);
        h.recurrent = std::move(flags);
        return {};
    }
    auto interval = kv.find_u32(key(hp, "full_attention_interval"));
    if (!interval) {
        return interval.error();
    }
    const std::uint32_t p = interval->value_or(4);
    if (p == 0) {
        return bad(hp, "full_attention_interval", "must be positive");
    }
    h.recurrent.assign(hp.n_layer, false);
    for (std::uint32_t l = 0; l < hp.n_layer; ++l) {
        h.recurrent[l] = (l + 1) % p != 0;
    }
    return {};
}

result<void> read_sections(const gguf::metadata& kv, model_hparams& hp) {
    const auto k = key(hp, "rope.dimension_sections");
    auto sec = kv.get_array_of_i32(k);
    if (!sec) {
        return sec.error();
    }
    if (sec->empty() || sec->size() > 4) {
        return bad(hp, "rope.dimension_sections", "expected 1 to 4 section sizes");
    }
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < sec->size(); ++i) {
        if ((*sec)[i] < 0) {
            return bad(hp, "rope.dimension_sections", "negative section size");
        }
        hp.hybrid.rope_sections[i] = static_cast<std::uint32_t>((*sec)[i]);
        sum += hp.hybrid.rope_sections[i];
    }
    if (sum == 0 || sum > hp.rope.n_rot / 2) {
        return bad(hp, "rope.dimension_sections",
                   "sections must add up to at most half of rope.dimension_count (" + std::to_string(hp.rope.n_rot) +
                       ")");
    }
    return {};
}

} // namespace

std::uint32_t full_attention_interval(const std::vector<bool>& recurrent) noexcept {
    const auto n = static_cast<std::uint32_t>(recurrent.size());
    for (std::uint32_t p = 1; p <= n; ++p) {
        bool fits = true;
        for (std::uint32_t l = 0; l < n && fits; ++l) {
            fits = recurrent[l] == ((l + 1) % p != 0);
        }
        if (fits) {
            return p;
        }
    }
    return 0;
}

result<void> read_hybrid_hparams(const gguf::metadata& kv, model_hparams& hp, bool sections) {
    auto& h = hp.hybrid;
    for (auto [suffix, field] : {std::pair<const char*, std::uint32_t*>{"ssm.conv_kernel", &h.conv_kernel},
                                 {"ssm.state_size", &h.state_size},
                                 {"ssm.group_count", &h.group_count},
                                 {"ssm.time_step_rank", &h.time_step_rank},
                                 {"ssm.inner_size", &h.inner_size}}) {
        auto v = kv.get_u32(key(hp, suffix));
        if (!v) {
            return v.error();
        }
        if (*v == 0) {
            return bad(hp, suffix, "must be positive");
        }
        *field = *v;
    }
    if (h.conv_kernel > 64) {
        return bad(hp, "ssm.conv_kernel",
                   "a convolution of " + std::to_string(h.conv_kernel) + " taps is not supported");
    }
    if (h.time_step_rank % h.group_count != 0) {
        return bad(hp, "ssm.time_step_rank",
                   "the value heads must be a multiple of ssm.group_count (" + std::to_string(h.group_count) + ")");
    }
    if (std::uint64_t{h.time_step_rank} * h.state_size != h.inner_size) {
        return bad(hp, "ssm.inner_size",
                   "must equal ssm.time_step_rank x ssm.state_size (" +
                       std::to_string(std::uint64_t{h.time_step_rank} * h.state_size) + ")");
    }
    // block_count counts the MTP blocks; configure may run on hparams already reduced to the main stack.
    auto blocks = kv.get_u32(key(hp, "block_count"));
    if (!blocks) {
        return blocks.error();
    }
    const std::uint32_t n_layer_all = *blocks;
    auto nextn = kv.find_u32(key(hp, "nextn_predict_layers"));
    if (!nextn) {
        return nextn.error();
    }
    h.nextn_layers = nextn->value_or(0);
    if (h.nextn_layers >= n_layer_all) {
        return bad(hp, "nextn_predict_layers", "must be less than block_count (" + std::to_string(n_layer_all) + ")");
    }
    hp.n_layer = n_layer_all - h.nextn_layers;
    if (auto r = read_pattern(kv, hp, n_layer_all); !r) {
        return r;
    }
    if (sections) {
        if (auto r = read_sections(kv, hp); !r) {
            return r;
        }
    }
    return {};
}

void write_hybrid_hparams(const model_hparams& hp, gguf::metadata& kv) {
    const auto& h = hp.hybrid;
    kv.set_u32(key(hp, "ssm.conv_kernel"), h.conv_kernel);
    kv.set_u32(key(hp, "ssm.state_size"), h.state_size);
    kv.set_u32(key(hp, "ssm.group_count"), h.group_count);
    kv.set_u32(key(hp, "ssm.time_step_rank"), h.time_step_rank);
    kv.set_u32(key(hp, "ssm.inner_size"), h.inner_size);
    if (const auto p = full_attention_interval(h.recurrent); p != 0) {
        kv.set_u32(key(hp, "full_attention_interval"), p);
    } else {
        std::vector<bool> flags = h.recurrent;
        flags.resize(hp.n_layer + h.nextn_layers, false); // MTP blocks are full attention
        kv.set_array(key(hp, "attention.recurrent_layers"), std::move(flags));
    }
    if (h.rope_sections != std::array<std::uint32_t, 4>{}) {
        std::vector<std::int32_t> sec;
        for (const auto s : h.rope_sections) {
            sec.push_back(static_cast<std::int32_t>(s));
        }
        kv.set_array(key(hp, "rope.dimension_sections"), std::move(sec));
    }
    if (h.nextn_layers) {
        kv.set_u32(key(hp, "nextn_predict_layers"), h.nextn_layers);
    }
}

} // namespace sluice::models
