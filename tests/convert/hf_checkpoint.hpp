// Test helpers: a tiny safetensors writer and synthetic Hugging Face checkpoints (config.json, tokenizer files,
// weights) of every class the converter supports, with the source values kept for comparison.
#pragma once

#include <boost/json.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace sluice::test {

/// One tensor to write: values are stored as `dtype` ("F32", "F16", "BF16"); `raw` overrides them when set.
struct hf_tensor {
    std::vector<std::uint64_t> shape;
    std::vector<float> values;
    std::string dtype = "F32";
    std::vector<std::byte> raw; ///< exact data bytes (for other dtypes or corrupt files)
};

using hf_tensors = std::map<std::string, hf_tensor>;

/// Writes `tensors` as a safetensors file (header padded to 8 bytes, data in name order).
void write_safetensors(const std::filesystem::path& path, const hf_tensors& tensors);

/// Shape of a synthetic model. Defaults: 64-wide rows (K-quant fallback), 2 layers, 4 heads (2 KV) of 16.
struct hf_shape {
    std::uint32_t n_embd = 64;
    std::uint32_t n_layer = 2;
    std::uint32_t n_head = 4;
    std::uint32_t n_head_kv = 2;
    std::uint32_t head_dim = 16;
    std::uint32_t n_ff = 96;
    std::uint32_t n_expert = 4;
    std::uint32_t n_expert_used = 2;
    std::uint32_t n_ff_exp = 32;
    std::uint32_t n_ff_shexp = 48;
    std::uint32_t n_vocab = 300;
    bool tied = false;
    bool fused_experts = false; ///< mlp.experts.gate_up_proj / down_proj instead of per-expert tensors
};

/// A synthetic checkpoint: config.json content and the weights with their values.
struct hf_model {
    std::string hf_class;
    boost::json::object config;
    hf_tensors tensors;
};

/// Builds config and random weights (deterministic) for `hf_class` (one of the seven supported classes).
hf_model make_hf_model(const std::string& hf_class, const hf_shape& shape = {});

/// Writes config.json, tokenizer.json, tokenizer_config.json and the weights into `dir` (created): one
/// model.safetensors, or `shards` files plus model.safetensors.index.json.
void write_hf_model(const std::filesystem::path& dir, const hf_model& model, int shards = 1);

/// A byte-level BPE tokenizer.json: the 256 byte tokens, a few merges, "<|endoftext|>" (special) and
/// "<tool>" (not special) added tokens. 263 tokens.
std::string tiny_tokenizer_json();

/// Writes `text` to `path`.
void write_text(const std::filesystem::path& path, const std::string& text);

} // namespace sluice::test
