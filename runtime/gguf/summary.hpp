// Summaries of a model for tools such as `sluice inspect`: tokenizer facts and dense/expert tensor totals.
#pragma once

#include "runtime/gguf/metadata.hpp"
#include "runtime/gguf/model_files.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace sluice::gguf {

/// What the `tokenizer.*` keys say, without building a tokenizer. Absent keys leave fields empty.
struct tokenizer_summary {
    std::string model;        ///< tokenizer.ggml.model ("gpt2", "llama", ...)
    std::string pre;          ///< tokenizer.ggml.pre
    std::size_t n_tokens = 0; ///< length of tokenizer.ggml.tokens
    std::size_t n_merges = 0; ///< length of tokenizer.ggml.merges
    bool has_scores = false;
    bool has_token_types = false;
    std::optional<std::uint32_t> bos_id;
    std::optional<std::uint32_t> eos_id;
    bool has_chat_template = false;
};

/// Reads the tokenizer keys. Errors when a present key has the wrong type.
result<tokenizer_summary> summarize_tokenizer(const metadata& kv);

/// Byte and tensor counts split into dense tensors and routed-expert tensors (names `*_exps`).
struct tensor_totals {
    std::uint64_t dense_tensors = 0;
    std::uint64_t dense_bytes = 0;
    std::uint64_t expert_tensors = 0;
    std::uint64_t expert_bytes = 0;
    std::uint64_t max_experts = 0;      ///< largest ne[2] among expert tensors
    std::uint64_t bytes_per_expert = 0; ///< one expert of one layer (its gate + up + down slabs), max over layers
};

/// Sums tensors by group.
tensor_totals summarize_tensors(const model_files& model);

} // namespace sluice::gguf
