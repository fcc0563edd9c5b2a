// The converter on synthetic checkpoints of every supported class: tensor tables, metadata, layouts, types.
#include "runtime/convert/converter.hpp"
#include "runtime/models/architecture.hpp"
#include "tests/cli/scratch.hpp"
#include "tests/convert/gguf_values.hpp"
#include "tests/convert/hf_checkpoint.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace sluice;
using kernels::quant_type;

/// A fresh folder per test.
fs::path test_dir(const std::string& name) {
    const auto dir = test::scratch_dir() / "convert" / name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

struct converted {
    fs::path path;
    gguf::model_files model;
    models::model_hparams hp;
    const models::architecture* arch = nullptr;
    convert::convert_summary summary;
};

/// Writes `m` under `name`, converts it to `type` and opens the result; fails the test on any error.
converted convert_model(const std::string& name, const test::hf_model& m,
                        convert::output_type type = convert::output_type::f32, int shards = 1) {
    const auto dir = test_dir(name);
    test::write_hf_model(dir / "hf", m, shards);
    const auto out = dir / "out.gguf";
    auto summary = convert::convert_checkpoint(dir / "hf", out, {.type = type});
    if (!summary) {
        throw std::runtime_error(summary.error().message);
    }
    auto model = gguf::model_files::open(out);
    if (!model) {
        throw std::runtime_error(model.error().message);
    }
    const models::architecture* arch = nullptr;
    auto hp = models::load_hparams(model->kv(), arch);
    if (!hp) {
        throw std::runtime_error(hp.error().message);
    }
    return {out, std::move(*model), *hp, arch, *summary};
}

const gguf::tensor_info& tensor(const converted& c, const std::string& name) {
    const auto* t = c.model.find_tensor(name);
    if (t == nullptr) {
        throw std::runtime_error("no tensor " + name);
    }
    return *t;
}

/// Rows [first, first + n) of an HF tensor's values.
std::vector<float> hf_rows(const test::hf_model& m, const std::string& name, std::uint64_t first, std::uint64_t n) {
    const auto& t = m.tensors.at(name);
    const std::uint64_t row = t.shape.back();
    return {t.values.begin() + static_cast<std::ptrdiff_t>(first * row),
            t.values.begin() + static_cast<std::ptrdiff_t>((first + n) * row)};
}

std::vector<float> slice(const std::vector<float>& v, std::uint64_t first, std::uint64_t n) {
    return {v.begin() + static_cast<std::ptrdiff_t>(first), v.begin() + static_cast<std::ptrdiff_t>(first + n)};
}

const char* const every_class[] = {"LlamaForCausalLM",    "MistralForCausalLM", "MixtralForCausalLM",
                                   "Qwen2ForCausalLM",    "Qwen3ForCausalLM",   "Qwen2MoeForCausalLM",
                                   "Qwen3MoeForCausalLM", "OlmoeForCausalLM"};

class every_hf_class : public testing::TestWithParam<const char*> {};

TEST_P(every_hf_class, tensors_equal_the_architecture_table_with_types_by_role) {
    const auto m = test::make_hf_model(GetParam());
    const auto c = convert_model(std::string(GetParam()) + "_table", m, convert::output_type::f16);
    const auto expected = c.arch->tensors(c.hp);
    ASSERT_EQ(c.model.tensors().size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
        const auto& t = c.model.tensors()[i];
        const auto& e = expected[i];
        EXPECT_EQ(t.name, e.name);
        ASSERT_EQ(t.n_dims, e.ne.size()) << e.name;
        for (std::size_t d = 0; d < e.ne.size(); ++d) {
            EXPECT_EQ(t.ne[d], e.ne[d]) << e.name << " dim " << d;
        }
        const bool f32 = e.role == models::tensor_role::vector || e.role == models::tensor_role::router;
        const quant_type want = f32 ? quant_type::f32 : quant_type::f16;
        EXPECT_EQ(t.type, want) << e.name;
    }
}

TEST_P(every_hf_class, metadata_round_trips_to_the_config_values) {
    const auto m = test::make_hf_model(GetParam());
    const auto c = convert_model(std::string(GetParam()) + "_kv", m, convert::output_type::f16);
    const auto& cfg = m.config;
    const auto& hp = c.hp;
    const std::string cls = GetParam();
    auto u = [&](const char* k) { return static_cast<std::uint32_t>(cfg.at(k).to_number<std::int64_t>()); };
    EXPECT_EQ(hp.n_vocab, u("vocab_size"));
    EXPECT_EQ(hp.n_embd, u("hidden_size"));
    EXPECT_EQ(hp.n_layer, u("num_hidden_layers"));
    EXPECT_EQ(hp.n_head, u("num_attention_heads"));
    EXPECT_EQ(hp.n_head_kv, u("num_key_value_heads"));
    EXPECT_EQ(hp.head_dim, u("head_dim"));
    EXPECT_EQ(hp.n_ctx_train, u("max_position_embeddings"));
    EXPECT_EQ(hp.n_ff, u("intermediate_size"));
    EXPECT_FLOAT_EQ(hp.rms_eps, 1e-5f);
    EXPECT_FLOAT_EQ(hp.rope.freq_base, 500000.0f);
    EXPECT_EQ(hp.rope.n_rot, hp.head_dim);
    if (cfg.contains("num_experts_per_tok")) {
        EXPECT_EQ(hp.n_expert, cfg.contains("num_experts") ? u("num_experts") : u("num_local_experts"));
        EXPECT_EQ(hp.n_expert_used, u("num_experts_per_tok"));
        EXPECT_EQ(hp.n_ff_exp,
                  cfg.contains("moe_intermediate_size") ? u("moe_intermediate_size") : u("intermediate_size"));
    } else {
        EXPECT_EQ(hp.n_expert, 0u);
    }
    if (cls == "Qwen2MoeForCausalLM") {
        EXPECT_EQ(hp.n_ff_shexp, u("shared_expert_intermediate_size"));
        EXPECT_TRUE(hp.shared_expert);
    }
    if (cfg.contains("norm_topk_prob")) {
        EXPECT_EQ(hp.expert_weights_norm, cfg.at("norm_topk_prob").as_bool());
        EXPECT_TRUE(c.model.kv().contains(hp.arch + ".expert_weights_norm"));
    }
    const auto& kv = c.model.kv();
    EXPECT_EQ(*kv.get_string("general.name"), "hf");
    EXPECT_EQ(*kv.get_u32("general.file_type"), 1u);
    EXPECT_EQ(*kv.get_u32("general.quantization_version"), 2u);
    EXPECT_EQ(*kv.get_string("tokenizer.ggml.model"), "gpt2");
    EXPECT_EQ(kv.get_array_of_strings("tokenizer.ggml.tokens")->size(), hp.n_vocab);
}

INSTANTIATE_TEST_SUITE_P(convert, every_hf_class, testing::ValuesIn(every_class));

TEST(convert, config_classes_map_to_the_llama_cpp_architectures) {
    const std::pair<const char*, const char*> expected[] = {
        {"LlamaForCausalLM", "llama"},       {"MistralForCausalLM", "llama"}, {"MixtralForCausalLM", "llama"},
        {"Qwen2ForCausalLM", "qwen2"},       {"Qwen3ForCausalLM", "qwen3"},   {"Qwen2MoeForCausalLM", "qwen2moe"},
        {"Qwen3MoeForCausalLM", "qwen3moe"}, {"OlmoeForCausalLM", "olmoe"},
    };
    for (const auto& [cls, arch] : expected) {
        const auto c = convert_model(std::string(cls) + "_arch", test::make_hf_model(cls));
        EXPECT_EQ(c.hp.arch, arch) << cls;
    }
}

TEST(convert, llama_q_and_k_rows_move_from_rotate_half_to_interleaved_pairs) {
    const auto m = test::make_hf_model("LlamaForCausalLM");
    const auto c = convert_model("llama_permute", m);
    const std::uint64_t hd = 16;
    const std::uint64_t row = 64;
    for (const auto& [gguf_name, hf_name, heads] :
         {std::tuple{"blk.1.attn_q.weight", "model.layers.1.self_attn.q_proj.weight", 4},
          std::tuple{"blk.1.attn_k.weight", "model.layers.1.self_attn.k_proj.weight", 2}}) {
        const auto got = test::read_values(c.path, tensor(c, gguf_name));
        const auto& src = m.tensors.at(hf_name).values;
        // Specific rows: new row 1 is old row hd/2 (head 0, i 0, j 1); new row hd + 2 is old row hd + 1.
        EXPECT_EQ(slice(got, 1 * row, row), slice(src, (hd / 2) * row, row));
        EXPECT_EQ(slice(got, (hd + 2) * row, row), slice(src, (hd + 1) * row, row));
        EXPECT_EQ(got[(hd - 1) * row + 5], src[(hd - 1) * row + 5]); // the last row of a head stays
        for (std::uint64_t h = 0; h < static_cast<std::uint64_t>(heads); ++h) {
            for (std::uint64_t i = 0; i < hd / 2; ++i) {
                for (std::uint64_t j = 0; j < 2; ++j) {
                    EXPECT_EQ(slice(got, (h * hd + 2 * i + j) * row, row),
                              slice(src, (h * hd + j * (hd / 2) + i) * row, row))
                        << gguf_name << " head " << h << " i " << i << " j " << j;
                }
            }
        }
    }
    // V and O are not permuted.
    EXPECT_EQ(test::read_values(c.path, tensor(c, "blk.0.attn_v.weight")),
              m.tensors.at("model.layers.0.self_attn.v_proj.weight").values);
}

TEST(convert, neox_architectures_keep_q_rows_in_order) {
    const auto m = test::make_hf_model("Qwen3ForCausalLM");
    const auto c = convert_model("qwen3_no_permute", m);
    EXPECT_EQ(test::read_values(c.path, tensor(c, "blk.0.attn_q.weight")),
              m.tensors.at("model.layers.0.self_attn.q_proj.weight").values);
    EXPECT_EQ(test::read_values(c.path, tensor(c, "blk.0.attn_q_norm.weight")),
              m.tensors.at("model.layers.0.self_attn.q_norm.weight").values);
}

TEST(convert, per_expert_tensors_stack_with_expert_e_at_slab_e) {
    const auto m = test::make_hf_model("Qwen3MoeForCausalLM");
    const auto c = convert_model("qwen3moe_stack", m);
    const std::uint64_t ff = 32;
    const std::uint64_t embd = 64;
    for (const auto& [gguf_name, proj, rows] : {std::tuple{"blk.1.ffn_gate_exps.weight", "gate_proj", ff},
                                                std::tuple{"blk.1.ffn_up_exps.weight", "up_proj", ff},
                                                std::tuple{"blk.1.ffn_down_exps.weight", "down_proj", embd}}) {
        const auto got = test::read_values(c.path, tensor(c, gguf_name));
        const std::uint64_t slab = rows * (ff * embd / rows);
        for (std::uint64_t e = 0; e < 4; ++e) {
            const std::string hf = "model.layers.1.mlp.experts." + std::to_string(e) + "." + proj + ".weight";
            EXPECT_EQ(slice(got, e * slab, slab), m.tensors.at(hf).values) << gguf_name << " expert " << e;
        }
    }
}

TEST(convert, mixtral_w1_w3_w2_become_gate_up_down_experts) {
    const auto m = test::make_hf_model("MixtralForCausalLM");
    const auto c = convert_model("mixtral_stack", m);
    const std::uint64_t slab = 96 * 64;
    for (const auto& [gguf_name, w] :
         {std::pair{"blk.0.ffn_gate_exps.weight", "w1"}, std::pair{"blk.0.ffn_up_exps.weight", "w3"},
          std::pair{"blk.0.ffn_down_exps.weight", "w2"}}) {
        const auto got = test::read_values(c.path, tensor(c, gguf_name));
        for (std::uint64_t e = 0; e < 4; ++e) {
            const std::string hf = "model.layers.0.block_sparse_moe.experts." + std::to_string(e) + "." + w + ".weight";
            EXPECT_EQ(slice(got, e * slab, slab), m.tensors.at(hf).values) << gguf_name << " expert " << e;
        }
    }
    EXPECT_EQ(test::read_values(c.path, tensor(c, "blk.0.ffn_gate_inp.weight")),
              m.tensors.at("model.layers.0.block_sparse_moe.gate.weight").values);
}

TEST(convert, fused_gate_up_splits_into_gate_and_up_slabs) {
    test::hf_shape shape;
    shape.fused_experts = true;
    const auto m = test::make_hf_model("OlmoeForCausalLM", shape);
    const auto c = convert_model("olmoe_fused", m);
    const std::uint64_t ff = 96; // OLMoE experts have intermediate_size rows
    const auto gate = test::read_values(c.path, tensor(c, "blk.1.ffn_gate_exps.weight"));
    const auto up = test::read_values(c.path, tensor(c, "blk.1.ffn_up_exps.weight"));
    const auto down = test::read_values(c.path, tensor(c, "blk.1.ffn_down_exps.weight"));
    const std::string fused = "model.layers.1.mlp.experts.gate_up_proj";
    for (std::uint64_t e = 0; e < 4; ++e) {
        EXPECT_EQ(slice(gate, e * ff * 64, ff * 64), hf_rows(m, fused, e * 2 * ff, ff)) << "expert " << e;
        EXPECT_EQ(slice(up, e * ff * 64, ff * 64), hf_rows(m, fused, e * 2 * ff + ff, ff)) << "expert " << e;
    }
    EXPECT_EQ(down, m.tensors.at("model.layers.1.mlp.experts.down_proj").values);
}

TEST(convert, shared_expert_gate_becomes_a_vector_of_n_embd) {
    const auto m = test::make_hf_model("Qwen2MoeForCausalLM");
    const auto c = convert_model("qwen2moe_shexp", m);
    const auto& t = tensor(c, "blk.0.ffn_gate_inp_shexp.weight");
    EXPECT_EQ(t.n_dims, 1u);
    EXPECT_EQ(t.ne[0], 64u);
    EXPECT_EQ(test::read_values(c.path, t), m.tensors.at("model.layers.0.mlp.shared_expert_gate.weight").values);
    EXPECT_EQ(test::read_values(c.path, tensor(c, "blk.0.attn_k.bias")),
              m.tensors.at("model.layers.0.self_attn.k_proj.bias").values);
}

TEST(convert, tied_embeddings_leave_out_the_output_tensor) {
    test::hf_shape shape;
    shape.tied = true;
    const auto c = convert_model("tied", test::make_hf_model("Qwen3ForCausalLM", shape));
    EXPECT_EQ(c.model.find_tensor("output.weight"), nullptr);
    EXPECT_NE(c.model.find_tensor("token_embd.weight"), nullptr);
}

TEST(convert, sharded_checkpoint_converts_to_the_same_bytes_as_one_file) {
    const auto m = test::make_hf_model("Qwen2MoeForCausalLM");
    const auto one = convert_model("shards_1", m, convert::output_type::q8_0, 1);
    const auto three = convert_model("shards_3", m, convert::output_type::q8_0, 3);
    auto bytes = [](const fs::path& p) {
        std::ifstream in(p, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(in), {});
    };
    EXPECT_EQ(bytes(one.path), bytes(three.path));
}

TEST(convert, half_precision_sources_read_exactly) {
    for (const std::string dtype : {"F16", "BF16"}) {
        auto m = test::make_hf_model("Qwen3ForCausalLM");
        auto& t = m.tensors.at("model.layers.0.mlp.up_proj.weight");
        t.dtype = dtype;
        const auto c = convert_model("source_" + dtype, m);
        // Round the source through the same format to know what the file holds.
        const auto type = dtype == "F16" ? quant_type::f16 : quant_type::bf16;
        std::vector<std::byte> raw(t.values.size() * 2);
        kernels::quantize_row(type, t.values.data(), raw.data(), t.values.size());
        std::vector<float> want(t.values.size());
        kernels::dequantize_row(type, raw.data(), want.data(), want.size());
        EXPECT_EQ(test::read_values(c.path, tensor(c, "blk.0.ffn_up.weight")), want) << dtype;
    }
}

/// Root-mean-square error of `got` against `want`, relative to the RMS of `want`.
double relative_rms_error(const std::vector<float>& got, const std::vector<float>& want) {
    double err = 0;
    double ref = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        err += (got[i] - want[i]) * (got[i] - want[i]);
        ref += want[i] * want[i];
    }
    return std::sqrt(err / ref);
}

TEST(convert, quantized_types_dequantize_close_to_the_source) {
    test::hf_shape shape;
    shape.n_embd = 256;
    shape.n_head = 4;
    shape.head_dim = 64;
    shape.n_ff = 256;
    shape.n_expert = 2;
    shape.n_expert_used = 1;
    shape.n_ff_exp = 256;
    shape.n_layer = 1;
    const auto m = test::make_hf_model("Qwen3MoeForCausalLM", shape);
    const std::tuple<convert::output_type, quant_type, double, std::uint32_t> cases[] = {
        {convert::output_type::f16, quant_type::f16, 1e-3, 1},
        {convert::output_type::bf16, quant_type::bf16, 1e-2, 32},
        {convert::output_type::q8_0, quant_type::q8_0, 1e-2, 7},
        {convert::output_type::q6_k, quant_type::q6_k, 3e-2, 18},
        {convert::output_type::q4_k, quant_type::q4_k, 0.12, 15},
        {convert::output_type::q5_k, quant_type::q5_k, 0.06, 16},
        {convert::output_type::q3_k, quant_type::q3_k, 0.25, 11},
        {convert::output_type::q2_k, quant_type::q2_k, 0.45, 10},
    };
    for (const auto& [type, qt, tolerance, file_type] : cases) {
        const auto c = convert_model("quant_" + std::string(kernels::traits_of(qt).name), m, type);
        EXPECT_EQ(*c.model.kv().get_u32("general.file_type"), file_type);
        EXPECT_EQ(c.summary.fallbacks, 0u);
        const auto& embd = tensor(c, "token_embd.weight");
        EXPECT_EQ(embd.type, qt);
        EXPECT_LT(relative_rms_error(test::read_values(c.path, embd), m.tensors.at("model.embed_tokens.weight").values),
                  tolerance)
            << kernels::traits_of(qt).name;
        const auto& up = tensor(c, "blk.0.ffn_up_exps.weight");
        EXPECT_EQ(up.type, qt);
        const auto got = test::read_values(c.path, up);
        EXPECT_LT(relative_rms_error(slice(got, 256 * 256, 256 * 256),
                                     m.tensors.at("model.layers.0.mlp.experts.1.up_proj.weight").values),
                  tolerance);
        EXPECT_EQ(tensor(c, "blk.0.ffn_gate_inp.weight").type, quant_type::f32);
        EXPECT_EQ(tensor(c, "blk.0.attn_norm.weight").type, quant_type::f32);
    }
}

TEST(convert, k_quant_rows_of_64_fall_back_to_q8_0_and_rows_of_48_to_f16) {
    const auto m = test::make_hf_model("Qwen2MoeForCausalLM");
    const auto c = convert_model("fallback", m, convert::output_type::q4_k);
    EXPECT_EQ(tensor(c, "token_embd.weight").type, quant_type::q8_0);
    EXPECT_EQ(tensor(c, "blk.0.ffn_down_exps.weight").type, quant_type::q8_0); // rows of 32
    EXPECT_EQ(tensor(c, "blk.0.ffn_down_shexp.weight").type, quant_type::f16); // rows of 48
    EXPECT_EQ(c.summary.fallbacks, c.summary.tensors - (2 * 7 + 1)); // every weight: no row is a multiple of 256
    const auto got = test::read_values(c.path, tensor(c, "blk.0.ffn_up_exps.weight"));
    EXPECT_LT(
        relative_rms_error(slice(got, 0, 32 * 64), m.tensors.at("model.layers.0.mlp.experts.0.up_proj.weight").values),
        1e-2);
}

TEST(convert, general_name_is_the_folder_name_even_with_a_trailing_slash) {
    const auto dir = test_dir("trailing_slash");
    test::write_hf_model(dir / "My-Model", test::make_hf_model("Qwen2ForCausalLM"));
    auto r = convert::convert_checkpoint((dir / "My-Model").string() + "/", dir / "out.gguf", {});
    ASSERT_TRUE(r) << r.error().message;
    auto model = gguf::model_files::open(dir / "out.gguf");
    ASSERT_TRUE(model) << model.error().message;
    EXPECT_EQ(*model->kv().get_string("general.name"), "My-Model");
}

} // namespace
