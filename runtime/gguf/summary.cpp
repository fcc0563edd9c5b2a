// Summaries of a model: tokenizer keys and dense/expert tensor totals.
#include "runtime/gguf/summary.hpp"

#include "runtime/gguf/try.hpp"

#include <algorithm>
#include <map>

namespace sluice::gguf {

result<tokenizer_summary> summarize_tokenizer(const metadata& kv) {
    tokenizer_summary s;
    SLUICE_GGUF_TRY(const auto model, kv.find_string(keys::tokenizer_model));
    SLUICE_GGUF_TRY(const auto pre, kv.find_string(keys::tokenizer_pre));
    s.model = model.value_or("");
    s.pre = pre.value_or("");
    if (kv.contains(keys::tokenizer_tokens)) {
        SLUICE_GGUF_TRY(const auto tokens, kv.get_array_of_strings(keys::tokenizer_tokens));
        s.n_tokens = tokens.size();
    }
    if (kv.contains(keys::tokenizer_merges)) {
        SLUICE_GGUF_TRY(const auto merges, kv.get_array_of_strings(keys::tokenizer_merges));
        s.n_merges = merges.size();
    }
    s.has_scores = kv.contains(keys::tokenizer_scores);
    s.has_token_types = kv.contains(keys::tokenizer_token_type);
    SLUICE_GGUF_TRY(s.bos_id, kv.find_u32(keys::tokenizer_bos_id));
    SLUICE_GGUF_TRY(s.eos_id, kv.find_u32(keys::tokenizer_eos_id));
    s.has_chat_template = kv.contains(keys::chat_template);
    return s;
}

tensor_totals summarize_tensors(const model_files& model) {
    tensor_totals t;
    std::map<int, std::uint64_t> per_layer_expert; // block index -> bytes of one expert (sum of slabs)
    for (const auto& info : model.tensors()) {
        if (!info.is_expert()) {
            ++t.dense_tensors;
            t.dense_bytes += info.bytes;
            continue;
        }
        ++t.expert_tensors;
        t.expert_bytes += info.bytes;
        t.max_experts = std::max(t.max_experts, info.expert_count());
        if (info.expert_count() != 0) {
            per_layer_expert[block_index(info.name)] += info.expert_stride();
        }
    }
    for (const auto& [layer, bytes] : per_layer_expert) {
        t.bytes_per_expert = std::max(t.bytes_per_expert, bytes);
    }
    return t;
}

} // namespace sluice::gguf
