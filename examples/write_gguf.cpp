// Example: writes a small qwen3moe-shaped GGUF model (random weights, tiny GPT-2 style tokenizer) with the
// streaming writer. Usage: write_gguf OUTPUT.gguf
#include "runtime/gguf/writer.hpp"

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using sluice::kernels::quant_type;
namespace gguf = sluice::gguf;

// Hyperparameters of the toy model.
constexpr std::uint32_t n_layers = 2;
constexpr std::uint64_t n_embd = 128;
constexpr std::uint64_t n_head = 4;
constexpr std::uint64_t n_head_kv = 2;
constexpr std::uint64_t head_dim = 32;
constexpr std::uint64_t n_expert = 8;
constexpr std::uint64_t n_expert_used = 2;
constexpr std::uint64_t n_ff_exp = 64;

/// Converts a float to IEEE half bits (round to nearest; values here are small and normal).
std::uint16_t to_f16(float f) {
    const auto x = std::bit_cast<std::uint32_t>(f);
    const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000);
    const int exp = static_cast<int>((x >> 23) & 0xFF) - 127 + 15;
    const std::uint32_t mant = x & 0x7FFFFF;
    if (exp <= 0) {
        return sign; // flush tiny values to zero
    }
    if (exp >= 31) {
        return static_cast<std::uint16_t>(sign | 0x7C00);
    }
    auto half = static_cast<std::uint32_t>(sign) | (static_cast<std::uint32_t>(exp) << 10) | (mant >> 13);
    if ((mant & 0x1000) != 0) {
        ++half; // a carry into the exponent is still the correctly rounded value
    }
    return static_cast<std::uint16_t>(half);
}

/// Random weights for one tensor: norms are 1, other floats N(0, 0.02), Q8_0 blocks have a scale and int8s.
std::vector<std::byte> make_data(const gguf::tensor_info& t, std::mt19937& rng) {
    std::vector<std::byte> out(t.bytes);
    std::normal_distribution<float> normal(0.0F, 0.02F);
    const bool is_norm = t.name.find("norm") != std::string::npos;
    auto put = [&](std::size_t at, auto v) { std::memcpy(out.data() + at, &v, sizeof(v)); };
    switch (t.type) {
    case quant_type::f32:
        for (std::uint64_t i = 0; i < t.n_elements; ++i) {
            put(i * 4, is_norm ? 1.0F : normal(rng));
        }
        break;
    case quant_type::f16:
        for (std::uint64_t i = 0; i < t.n_elements; ++i) {
            put(i * 2, to_f16(normal(rng)));
        }
        break;
    case quant_type::q8_0: {
        std::uniform_int_distribution<int> q(-127, 127);
        for (std::uint64_t b = 0; b < t.n_elements / 32; ++b) {
            put(b * 34, to_f16(0.02F / 64.0F)); // |q| <= 127 gives weights within about +-0.04
            for (std::size_t i = 0; i < 32; ++i) {
                out[b * 34 + 2 + i] = static_cast<std::byte>(static_cast<std::int8_t>(q(rng)));
            }
        }
        break;
    }
    default:
        break;
    }
    return out;
}

/// The GPT-2 byte alphabet as UTF-8 strings: printable bytes map to themselves, the rest to U+0100 onwards.
std::vector<std::string> byte_tokens() {
    std::vector<std::string> out;
    int shifted = 0;
    for (int b = 0; b < 256; ++b) {
        const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
        const unsigned cp = printable ? static_cast<unsigned>(b) : 256U + static_cast<unsigned>(shifted++);
        std::string s;
        if (cp < 0x80) {
            s += static_cast<char>(cp);
        } else {
            s += static_cast<char>(0xC0 | (cp >> 6));
            s += static_cast<char>(0x80 | (cp & 0x3F));
        }
        out.push_back(s);
    }
    return out;
}

/// Sets the tokenizer keys: 256 byte tokens, merged tokens built from merges, and three control tokens.
std::uint64_t set_tokenizer(gguf::metadata& kv) {
    auto tokens = byte_tokens();
    const std::string space = tokens[' '];
    const std::vector<std::pair<std::string, std::string>> merges_list{
        {space, "t"},       {"h", "e"}, {space + "t", "he"}, {"i", "n"},   {space, "a"}, {"e", "r"},   {"o", "n"},
        {space, "s"},       {"r", "e"}, {space, "w"},        {"a", "t"},   {"e", "n"},   {space, "c"}, {"i", "s"},
        {space + "t", "o"}, {"o", "r"}, {"e", "s"},          {"i", "t"},   {space, "o"}, {"a", "n"},   {"l", "l"},
        {"in", "g"},        {"n", "d"}, {space + "a", "nd"}, {space, "b"}, {space, "f"}, {space, "m"},
    };
    std::vector<std::string> merges;
    for (const auto& [a, b] : merges_list) {
        merges.push_back(a + " " + b);
        tokens.push_back(a + b);
    }
    std::vector<std::int32_t> types(tokens.size(), 1);
    const std::uint32_t eos = static_cast<std::uint32_t>(tokens.size());
    for (const char* special : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
        tokens.emplace_back(special);
        types.push_back(3);
    }
    const auto n_tokens = tokens.size();
    kv.set_string("tokenizer.ggml.model", "gpt2");
    kv.set_string("tokenizer.ggml.pre", "qwen2");
    kv.set_array("tokenizer.ggml.tokens", std::move(tokens));
    kv.set_array("tokenizer.ggml.token_type", std::move(types));
    kv.set_array("tokenizer.ggml.merges", std::move(merges));
    kv.set_u32("tokenizer.ggml.bos_token_id", eos);
    kv.set_u32("tokenizer.ggml.eos_token_id", eos + 2);
    kv.set_u32("tokenizer.ggml.padding_token_id", eos);
    kv.set_bool("tokenizer.ggml.add_bos_token", false);
    kv.set_string("tokenizer.chat_template",
                  "{% for message in messages %}<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>\n"
                  "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}");
    return n_tokens;
}

void set_hyperparameters(gguf::metadata& kv) {
    kv.set_string("general.architecture", "qwen3moe");
    kv.set_string("general.name", "Sluice toy qwen3moe");
    kv.set_u32("general.file_type", 7); // mostly Q8_0
    kv.set_u32("qwen3moe.block_count", n_layers);
    kv.set_u32("qwen3moe.context_length", 4096);
    kv.set_u32("qwen3moe.embedding_length", n_embd);
    kv.set_u32("qwen3moe.feed_forward_length", 256);
    kv.set_u32("qwen3moe.expert_feed_forward_length", n_ff_exp);
    kv.set_u32("qwen3moe.expert_count", n_expert);
    kv.set_u32("qwen3moe.expert_used_count", n_expert_used);
    kv.set_u32("qwen3moe.attention.head_count", n_head);
    kv.set_u32("qwen3moe.attention.head_count_kv", n_head_kv);
    kv.set_u32("qwen3moe.attention.key_length", head_dim);
    kv.set_u32("qwen3moe.attention.value_length", head_dim);
    kv.set_f32("qwen3moe.attention.layer_norm_rms_epsilon", 1e-6F);
    kv.set_f32("qwen3moe.rope.freq_base", 1000000.0F);
}

sluice::result<void> declare_tensors(gguf::writer& w, std::uint64_t n_vocab) {
    auto add = [&](const std::string& name, quant_type type, std::initializer_list<std::uint64_t> shape) {
        return w.add_tensor(name, type, shape);
    };
    if (auto r = add("token_embd.weight", quant_type::q8_0, {n_embd, n_vocab}); !r) {
        return r;
    }
    for (std::uint32_t l = 0; l < n_layers; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        for (const auto& r : {
                 add(p + "attn_norm.weight", quant_type::f32, {n_embd}),
                 add(p + "attn_q.weight", quant_type::q8_0, {n_embd, n_head * head_dim}),
                 add(p + "attn_k.weight", quant_type::f16, {n_embd, n_head_kv * head_dim}),
                 add(p + "attn_v.weight", quant_type::f16, {n_embd, n_head_kv * head_dim}),
                 add(p + "attn_output.weight", quant_type::q8_0, {n_head * head_dim, n_embd}),
                 add(p + "attn_q_norm.weight", quant_type::f32, {head_dim}),
                 add(p + "attn_k_norm.weight", quant_type::f32, {head_dim}),
                 add(p + "ffn_norm.weight", quant_type::f32, {n_embd}),
                 add(p + "ffn_gate_inp.weight", quant_type::f32, {n_embd, n_expert}),
                 add(p + "ffn_gate_exps.weight", quant_type::q8_0, {n_embd, n_ff_exp, n_expert}),
                 add(p + "ffn_up_exps.weight", quant_type::q8_0, {n_embd, n_ff_exp, n_expert}),
                 add(p + "ffn_down_exps.weight", quant_type::q8_0, {n_ff_exp, n_embd, n_expert}),
             }) {
            if (!r) {
                return r;
            }
        }
    }
    if (auto r = add("output_norm.weight", quant_type::f32, {n_embd}); !r) {
        return r;
    }
    return add("output.weight", quant_type::q8_0, {n_embd, n_vocab});
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s OUTPUT.gguf\n", argv[0]);
        return 2;
    }
    gguf::writer w(argv[1]);
    set_hyperparameters(w.kv());
    const std::uint64_t n_vocab = set_tokenizer(w.kv());
    if (auto r = declare_tensors(w, n_vocab); !r) {
        std::fprintf(stderr, "write_gguf: %s\n", r.error().message.c_str());
        return 1;
    }
    std::mt19937 rng(42);
    std::uint64_t total = 0;
    while (const auto* t = w.next_tensor()) {
        const auto data = make_data(*t, rng); // one tensor in memory at a time
        total += data.size();
        if (auto r = w.write_tensor(data); !r) {
            std::fprintf(stderr, "write_gguf: %s\n", r.error().message.c_str());
            return 1;
        }
    }
    auto paths = w.finish();
    if (!paths) {
        std::fprintf(stderr, "write_gguf: %s\n", paths.error().message.c_str());
        return 1;
    }
    std::fprintf(stderr, "wrote %s: %zu tensors, %llu bytes of weights\n", argv[1], w.tensors().size(),
                 static_cast<unsigned long long>(total));
    return 0;
}
