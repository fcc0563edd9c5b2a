// Synthetic Hugging Face checkpoints for the converter tests.
#include "tests/convert/hf_checkpoint.hpp"

#include "kernels/quant.hpp"
#include "runtime/tokenizer/byte_level.hpp"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace sluice::test {

namespace json = boost::json;

namespace {

std::uint64_t elems(const std::vector<std::uint64_t>& shape) {
    std::uint64_t n = 1;
    for (auto d : shape) {
        n *= d;
    }
    return n;
}

std::vector<std::byte> encode(const hf_tensor& t) {
    if (!t.raw.empty()) {
        return t.raw;
    }
    const std::size_t n = t.values.size();
    if (t.dtype == "F32") {
        std::vector<std::byte> out(n * 4);
        std::memcpy(out.data(), t.values.data(), out.size());
        return out;
    }
    std::vector<std::byte> out(n * 2);
    const auto type = t.dtype == "F16" ? kernels::quant_type::f16 : kernels::quant_type::bf16;
    if (n > 0) {
        kernels::quantize_row(type, t.values.data(), out.data(), n);
    }
    return out;
}

/// Deterministic values in [-1, 1) from a per-tensor seed.
std::vector<float> random_values(std::uint64_t n, std::uint64_t seed) {
    std::vector<float> v(n);
    std::uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
    for (auto& x : v) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x = static_cast<float>(static_cast<double>(s >> 40) / static_cast<double>(1ull << 24) * 2.0 - 1.0);
    }
    return v;
}

std::string utf8(std::uint32_t cp) {
    std::string s;
    if (cp < 0x80) {
        s += static_cast<char>(cp);
    } else if (cp < 0x800) {
        s += static_cast<char>(0xC0 | (cp >> 6));
        s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        s += static_cast<char>(0xE0 | (cp >> 12));
        s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return s;
}

class builder {
public:
    explicit builder(hf_tensors& out) : out_(out) {}
    void add(const std::string& name, std::vector<std::uint64_t> shape) {
        hf_tensor t;
        t.values = random_values(elems(shape), ++seed_);
        t.shape = std::move(shape);
        out_[name] = std::move(t);
    }

private:
    hf_tensors& out_;
    std::uint64_t seed_ = 0;
};

} // namespace

void write_text(const std::filesystem::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
    if (!out) {
        throw std::runtime_error("cannot write " + path.string());
    }
}

void write_safetensors(const std::filesystem::path& path, const hf_tensors& tensors) {
    json::object header;
    header["__metadata__"] = json::object{{"format", "pt"}};
    std::vector<std::byte> data;
    for (const auto& [name, t] : tensors) {
        const auto bytes = encode(t);
        json::array shape;
        for (auto d : t.shape) {
            shape.push_back(d);
        }
        header[name] = json::object{{"dtype", t.dtype},
                                    {"shape", std::move(shape)},
                                    {"data_offsets", json::array{data.size(), data.size() + bytes.size()}}};
        data.insert(data.end(), bytes.begin(), bytes.end());
    }
    std::string text = json::serialize(header);
    text.append((8 - text.size() % 8) % 8, ' ');
    std::ofstream out(path, std::ios::binary);
    const std::uint64_t len = text.size();
    for (int i = 0; i < 8; ++i) {
        out.put(static_cast<char>((len >> (8 * i)) & 0xFF));
    }
    out << text;
    out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
    if (!out) {
        throw std::runtime_error("cannot write " + path.string());
    }
}

hf_model make_hf_model(const std::string& hf_class, const hf_shape& s) {
    hf_model m;
    m.hf_class = hf_class;
    const bool mixtral = hf_class == "MixtralForCausalLM";
    const bool qwen2moe = hf_class == "Qwen2MoeForCausalLM";
    const bool qwen3moe = hf_class == "Qwen3MoeForCausalLM";
    const bool olmoe = hf_class == "OlmoeForCausalLM";
    const bool moe = mixtral || qwen2moe || qwen3moe || olmoe;
    const bool bias = hf_class == "Qwen2ForCausalLM" || qwen2moe;
    const bool qk_norm = hf_class == "Qwen3ForCausalLM" || qwen3moe;
    const std::uint32_t ff_exp = mixtral || olmoe ? s.n_ff : s.n_ff_exp;

    auto& c = m.config;
    c["architectures"] = json::array{json::string(hf_class)};
    c["vocab_size"] = s.n_vocab;
    c["hidden_size"] = s.n_embd;
    c["num_hidden_layers"] = s.n_layer;
    c["num_attention_heads"] = s.n_head;
    c["num_key_value_heads"] = s.n_head_kv;
    c["head_dim"] = s.head_dim;
    c["intermediate_size"] = s.n_ff;
    c["max_position_embeddings"] = 2048;
    c["rms_norm_eps"] = 1e-5;
    c["rope_theta"] = 500000.0;
    c["hidden_act"] = "silu";
    c["tie_word_embeddings"] = s.tied;
    c["rope_scaling"] = nullptr;
    c["torch_dtype"] = "float32";
    if (mixtral) {
        c["num_local_experts"] = s.n_expert;
    } else if (moe) {
        c["num_experts"] = s.n_expert;
    }
    if (moe) {
        c["num_experts_per_tok"] = s.n_expert_used;
    }
    if (qwen2moe || qwen3moe) {
        c["moe_intermediate_size"] = s.n_ff_exp;
        c["decoder_sparse_step"] = 1;
        c["mlp_only_layers"] = json::array();
        c["norm_topk_prob"] = qwen3moe;
    }
    if (qwen2moe) {
        c["shared_expert_intermediate_size"] = s.n_ff_shexp;
    }
    if (olmoe) {
        c["norm_topk_prob"] = false;
        c["clip_qkv"] = nullptr;
    }

    builder b(m.tensors);
    const std::uint64_t q = std::uint64_t{s.n_head} * s.head_dim;
    const std::uint64_t kv = std::uint64_t{s.n_head_kv} * s.head_dim;
    b.add("model.embed_tokens.weight", {s.n_vocab, s.n_embd});
    b.add("model.norm.weight", {s.n_embd});
    if (!s.tied) {
        b.add("lm_head.weight", {s.n_vocab, s.n_embd});
    }
    for (std::uint32_t il = 0; il < s.n_layer; ++il) {
        const std::string p = "model.layers." + std::to_string(il) + ".";
        b.add(p + "input_layernorm.weight", {s.n_embd});
        b.add(p + "post_attention_layernorm.weight", {s.n_embd});
        b.add(p + "self_attn.q_proj.weight", {q, s.n_embd});
        b.add(p + "self_attn.k_proj.weight", {kv, s.n_embd});
        b.add(p + "self_attn.v_proj.weight", {kv, s.n_embd});
        b.add(p + "self_attn.o_proj.weight", {s.n_embd, q});
        if (bias) {
            b.add(p + "self_attn.q_proj.bias", {q});
            b.add(p + "self_attn.k_proj.bias", {kv});
            b.add(p + "self_attn.v_proj.bias", {kv});
        }
        if (qk_norm) {
            b.add(p + "self_attn.q_norm.weight", {s.head_dim});
            b.add(p + "self_attn.k_norm.weight", {s.head_dim});
        }
        if (olmoe) {
            b.add(p + "self_attn.q_norm.weight", {q});
            b.add(p + "self_attn.k_norm.weight", {kv});
        }
        if (!moe) {
            b.add(p + "mlp.gate_proj.weight", {s.n_ff, s.n_embd});
            b.add(p + "mlp.up_proj.weight", {s.n_ff, s.n_embd});
            b.add(p + "mlp.down_proj.weight", {s.n_embd, s.n_ff});
            continue;
        }
        if (mixtral) {
            b.add(p + "block_sparse_moe.gate.weight", {s.n_expert, s.n_embd});
            for (std::uint32_t e = 0; e < s.n_expert; ++e) {
                const std::string x = p + "block_sparse_moe.experts." + std::to_string(e) + ".";
                b.add(x + "w1.weight", {ff_exp, s.n_embd});
                b.add(x + "w2.weight", {s.n_embd, ff_exp});
                b.add(x + "w3.weight", {ff_exp, s.n_embd});
            }
            continue;
        }
        b.add(p + "mlp.gate.weight", {s.n_expert, s.n_embd});
        if (s.fused_experts) {
            b.add(p + "mlp.experts.gate_up_proj", {s.n_expert, 2 * std::uint64_t{ff_exp}, s.n_embd});
            b.add(p + "mlp.experts.down_proj", {s.n_expert, s.n_embd, ff_exp});
        } else {
            for (std::uint32_t e = 0; e < s.n_expert; ++e) {
                const std::string x = p + "mlp.experts." + std::to_string(e) + ".";
                b.add(x + "gate_proj.weight", {ff_exp, s.n_embd});
                b.add(x + "up_proj.weight", {ff_exp, s.n_embd});
                b.add(x + "down_proj.weight", {s.n_embd, ff_exp});
            }
        }
        if (qwen2moe) {
            b.add(p + "mlp.shared_expert.gate_proj.weight", {s.n_ff_shexp, s.n_embd});
            b.add(p + "mlp.shared_expert.up_proj.weight", {s.n_ff_shexp, s.n_embd});
            b.add(p + "mlp.shared_expert.down_proj.weight", {s.n_embd, s.n_ff_shexp});
            b.add(p + "mlp.shared_expert_gate.weight", {1, s.n_embd});
        }
    }
    return m;
}

std::string tiny_tokenizer_json() {
    json::object vocab;
    for (int b = 0; b < 256; ++b) {
        vocab[utf8(tokenizer::byte_to_code_point(static_cast<std::uint8_t>(b)))] = b;
    }
    const std::string space = utf8(tokenizer::byte_to_code_point(' '));
    const std::pair<std::string, std::string> merges[] = {
        {space, "t"}, {"h", "e"}, {space + "t", "he"}, {"i", "n"}, {space, "a"}};
    json::array merge_list;
    int id = 256;
    for (const auto& [a, b] : merges) {
        vocab[a + b] = id++;
        merge_list.push_back(json::string(a + " " + b));
    }
    json::object model{
        {"type", "BPE"},          {"dropout", nullptr},        {"unk_token", nullptr},           {"fuse_unk", false},
        {"byte_fallback", false}, {"vocab", std::move(vocab)}, {"merges", std::move(merge_list)}};
    json::array added{
        json::object{{"id", 261}, {"content", "<|endoftext|>"}, {"special", true}},
        json::object{{"id", 262}, {"content", "<tool>"}, {"special", false}},
    };
    json::object byte_level{
        {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
    json::object root{{"version", "1.0"},
                      {"added_tokens", std::move(added)},
                      {"normalizer", nullptr},
                      {"pre_tokenizer", byte_level},
                      {"post_processor", byte_level},
                      {"decoder", byte_level},
                      {"model", std::move(model)}};
    return json::serialize(root);
}

void write_hf_model(const std::filesystem::path& dir, const hf_model& model, int shards) {
    std::filesystem::create_directories(dir);
    write_text(dir / "config.json", json::serialize(model.config));
    write_text(dir / "tokenizer.json", tiny_tokenizer_json());
    write_text(dir / "tokenizer_config.json",
               json::serialize(json::object{{"bos_token", nullptr},
                                            {"eos_token", "<|endoftext|>"},
                                            {"pad_token", json::object{{"content", "<|endoftext|>"}}},
                                            {"add_bos_token", false},
                                            {"chat_template", "{{ messages }}"}}));
    if (shards <= 1) {
        write_safetensors(dir / "model.safetensors", model.tensors);
        return;
    }
    std::vector<hf_tensors> parts(static_cast<std::size_t>(shards));
    json::object weight_map;
    std::size_t i = 0;
    for (const auto& [name, t] : model.tensors) {
        const std::size_t part = i++ % parts.size();
        parts[part][name] = t;
        char file[64];
        std::snprintf(file, sizeof file, "model-%05zu-of-%05d.safetensors", part + 1, shards);
        weight_map[name] = file;
    }
    for (std::size_t p = 0; p < parts.size(); ++p) {
        char file[64];
        std::snprintf(file, sizeof file, "model-%05zu-of-%05d.safetensors", p + 1, shards);
        write_safetensors(dir / file, parts[p]);
    }
    write_text(dir / "model.safetensors.index.json",
               json::serialize(
                   json::object{{"metadata", json::object{{"total_size", 0}}}, {"weight_map", std::move(weight_map)}}));
}

} // namespace sluice::test
