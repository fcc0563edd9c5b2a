// The architecture registry and the shared hyperparameter loading path.
#include "runtime/models/architecture.hpp"

#include "runtime/models/kv_cache.hpp"

#include <array>
#include <string>

namespace sluice::models {

std::span<const architecture* const> supported_architectures() {
    static const std::array<const architecture*, 12> all{
        &llama_architecture(),    &qwen2_architecture(),    &qwen3_architecture(),   &qwen2moe_architecture(),
        &qwen3moe_architecture(), &olmoe_architecture(),    &gpt_oss_architecture(), &qwen35moe_architecture(),
        &qwen35_architecture(),   &qwen3next_architecture(), &deepseek2_architecture(), &glm4moe_architecture()};
    return all;
}

std::vector<layer_cache_spec> cache_layout_of(const architecture& arch, const model_hparams& hp) {
    return arch.cache_layout ? arch.cache_layout(hp) : attention_cache_layout(hp);
}

result<const architecture*> find_architecture(std::string_view name) {
    std::string names;
    for (const auto* a : supported_architectures()) {
        if (a->name == name) {
            return a;
        }
        names += names.empty() ? "" : ", ";
        names += a->name;
    }
    return make_error(std::errc::not_supported,
                      "architecture '" + std::string(name) + "' is not supported (supported: " + names + ")");
}

result<model_hparams> load_hparams(const gguf::metadata& kv, const architecture*& arch_out) {
    auto name = kv.get_string(gguf::keys::architecture);
    if (!name) {
        return name.error();
    }
    auto arch = find_architecture(*name);
    if (!arch) {
        return arch.error();
    }
    auto hp = read_hparams(kv, *name);
    if (!hp) {
        return hp.error();
    }
    if (auto r = (*arch)->configure(kv, *hp); !r) {
        return r.error();
    }
    if (auto r = check_hparams(*hp); !r) {
        return r.error();
    }
    arch_out = *arch;
    return hp;
}

} // namespace sluice::models
