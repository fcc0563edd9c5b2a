// gpt-oss against transformers 5.17 (tests/fixtures/reference/gpt_oss*, tools/reference/make_gpt_oss_fixture.py):
// transformers' bf16 save converted at F32 within 1e-4 of the float64 logits, also when decoding token by token past
// the sliding window; the MXFP4 checkpoint converted with its experts kept in MXFP4 (the same values, exactly, and
// within the 8-bit-activation bounds of the other quantised types); llama.cpp's conversion of the same checkpoint
// holding the same tensors byte for byte and giving the same logits.
#include "kernels/quant.hpp"
#include "runtime/convert/converter.hpp"
#include "runtime/engine/session.hpp"
#include "runtime/gguf/model_files.hpp"
#include "runtime/gguf/writer.hpp"
#include "tests/cli/scratch.hpp"
#include "tests/engine/tiny_model.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>

namespace sluice {
namespace {

namespace fs = std::filesystem;
using kernels::quant_type;

const fs::path reference_dir = fs::path(SLUICE_SOURCE_DIR) / "tests" / "fixtures" / "reference";

struct fixture {
    std::vector<std::vector<std::int32_t>> sequences;
    std::vector<float> logits; ///< [sequence][position][vocab]
    std::size_t n_vocab = 0;
    std::size_t decode_sequence = 0, decode_prefill = 0;
    std::vector<std::int32_t> greedy_prompt, greedy_continuation;
};

std::vector<std::int32_t> ids_of(const boost::json::value& v) {
    std::vector<std::int32_t> out;
    for (const auto& x : v.as_array()) {
        out.push_back(static_cast<std::int32_t>(x.to_number<std::int64_t>()));
    }
    return out;
}

const fixture& reference() {
    static const fixture f = [] {
        fixture f;
        std::ifstream in(reference_dir / "gpt_oss" / "reference.json");
        const auto ref = boost::json::parse(std::string(std::istreambuf_iterator<char>(in), {})).as_object();
        for (const auto& seq : ref.at("sequences").as_array()) {
            f.sequences.push_back(ids_of(seq));
        }
        f.n_vocab = static_cast<std::size_t>(ref.at("vocab_size").to_number<std::int64_t>());
        f.decode_sequence = static_cast<std::size_t>(ref.at("decode").at("sequence").to_number<std::int64_t>());
        f.decode_prefill = static_cast<std::size_t>(ref.at("decode").at("prefill").to_number<std::int64_t>());
        f.greedy_prompt = ids_of(ref.at("greedy").at("prompt"));
        f.greedy_continuation = ids_of(ref.at("greedy").at("continuation"));
        std::ifstream bin(reference_dir / "gpt_oss" / "logits.bin", std::ios::binary);
        const std::string raw(std::istreambuf_iterator<char>(bin), {});
        f.logits.resize(raw.size() / sizeof(float));
        std::memcpy(f.logits.data(), raw.data(), f.logits.size() * sizeof(float));
        return f;
    }();
    return f;
}

/// `name` (gpt_oss or gpt_oss_bf16) converted to `type` in this process's scratch folder.
fs::path convert_fixture(const std::string& name, convert::output_type type, const std::string& type_name) {
    const auto dir = test::scratch_dir() / "gpt_oss_fidelity" / name;
    const auto out = dir / (type_name + ".gguf");
    if (fs::exists(out)) {
        return out;
    }
    const auto hf = dir / "hf";
    if (!fs::exists(hf)) {
        fs::create_directories(hf);
        for (const char* f : {"config.json", "model.safetensors"}) {
            fs::create_symlink(reference_dir / name / f, hf / f);
        }
        for (const char* f : {"tokenizer.json", "tokenizer_config.json"}) {
            fs::create_symlink(reference_dir / "tokenizer" / f, hf / f);
        }
    }
    auto r = convert::convert_checkpoint(hf, out, {.type = type});
    if (!r) {
        throw std::runtime_error(r.error().message);
    }
    return out;
}

fs::path bf16_save_at_f32() {
    return convert_fixture("gpt_oss_bf16", convert::output_type::f32, "f32");
}

std::shared_ptr<model> load_f32_cache(const fs::path& path, std::uint32_t n_batch = 64) {
    return test::load_model(path, n_batch, 256, 2, quant_type::f32);
}

/// Logits of every fixture sequence, each in a fresh session, concatenated.
std::vector<float> engine_logits(const std::shared_ptr<model>& m) {
    std::vector<float> all;
    for (const auto& seq : reference().sequences) {
        session s(m);
        std::vector<float> logits;
        auto r = test::run_sync<result<void>>([&] { return s.evaluate(seq, logits); });
        if (!r) {
            throw std::runtime_error(r.error().message);
        }
        all.insert(all.end(), logits.begin(), logits.end());
    }
    return all;
}

struct comparison {
    double max_diff = 0, max_abs = 0, mean_cosine = 0, top1 = 0, decisive_top1 = 0;
};

comparison compare(const std::vector<float>& ours, const float* ref, std::size_t n_pos, std::size_t n_vocab) {
    comparison c;
    for (std::size_t i = 0; i < n_pos * n_vocab; ++i) {
        c.max_abs = std::max(c.max_abs, std::fabs(double(ref[i])));
    }
    std::size_t agree = 0, decisive = 0, decisive_agree = 0;
    for (std::size_t p = 0; p < n_pos; ++p) {
        const float* a = ours.data() + p * n_vocab;
        const float* b = ref + p * n_vocab;
        double dot = 0, na = 0, nb = 0, top = -INFINITY, second = -INFINITY;
        for (std::size_t i = 0; i < n_vocab; ++i) {
            c.max_diff = std::max(c.max_diff, std::fabs(double(a[i]) - b[i]));
            dot += double(a[i]) * b[i];
            na += double(a[i]) * a[i];
            nb += double(b[i]) * b[i];
            second = std::max(second, std::min(top, double(b[i])));
            top = std::max(top, double(b[i]));
        }
        c.mean_cosine += dot / std::sqrt(na * nb) / double(n_pos);
        const bool same = std::max_element(a, a + n_vocab) - a == std::max_element(b, b + n_vocab) - b;
        agree += same;
        if (top - second >= 0.02 * c.max_abs) {
            ++decisive;
            decisive_agree += same;
        }
    }
    c.top1 = double(agree) / double(n_pos);
    c.decisive_top1 = decisive ? double(decisive_agree) / double(decisive) : 1.0;
    return c;
}

comparison compare_all(const std::vector<float>& ours) {
    const auto& f = reference();
    return compare(ours, f.logits.data(), f.logits.size() / f.n_vocab, f.n_vocab);
}

std::vector<std::int32_t> greedy(const std::shared_ptr<model>& m) {
    const auto& f = reference();
    session s(m);
    generate_request req;
    req.prompt_tokens = f.greedy_prompt;
    req.sampling.temperature = 0.0f;
    req.max_tokens = static_cast<std::uint32_t>(f.greedy_continuation.size());
    req.ignore_eos = true;
    auto stream = s.generate(std::move(req));
    test::run_sync<int>([&]() -> boost::asio::awaitable<int> {
        while (true) {
            auto ev = co_await stream.next();
            if (!ev || !*ev) {
                EXPECT_TRUE(ev) << ev.error().message;
                co_return 0;
            }
        }
    });
    return stream.tokens();
}

TEST(gpt_oss_fidelity, f32_logits_match_transformers_within_1e_4_and_greedy_output_is_identical) {
    const auto m = load_f32_cache(bf16_save_at_f32());
    const auto c = compare_all(engine_logits(m));
    std::printf("gpt_oss f32: max|diff| %.3g of max|logit| %.3g (%.2e), top-1 %.4f\n", c.max_diff, c.max_abs,
                c.max_diff / c.max_abs, c.top1);
    EXPECT_LE(c.max_diff, 1e-4 * c.max_abs);
    EXPECT_EQ(c.top1, 1.0);
    EXPECT_EQ(greedy(m), reference().greedy_continuation);
}

// Ten tokens of prefill, then one token at a time to position 39: the windowed layer's cache holds only its window
// (12 positions plus a batch), so every step past position 12 reads a ring that has wrapped.
TEST(gpt_oss_fidelity, decoding_token_by_token_past_the_sliding_window_matches_transformers) {
    const auto& f = reference();
    for (std::uint32_t n_batch : {1u, 64u}) {
        const auto m = load_f32_cache(bf16_save_at_f32(), n_batch);
        const auto& seq = f.sequences[f.decode_sequence];
        session s(m);
        std::vector<float> all, logits;
        auto r =
            test::run_sync<result<void>>([&] { return s.evaluate(std::span(seq).first(f.decode_prefill), logits); });
        ASSERT_TRUE(r) << r.error().message;
        all = logits;
        for (std::size_t t = f.decode_prefill; t < seq.size(); ++t) {
            r = test::run_sync<result<void>>([&] { return s.evaluate(std::span(seq).subspan(t, 1), logits); });
            ASSERT_TRUE(r) << r.error().message;
            all.insert(all.end(), logits.begin(), logits.end());
        }
        std::size_t offset = 0;
        for (std::size_t i = 0; i < f.decode_sequence; ++i) {
            offset += f.sequences[i].size() * f.n_vocab;
        }
        const auto c = compare(all, f.logits.data() + offset, seq.size(), f.n_vocab);
        EXPECT_LE(c.max_diff, 1e-4 * c.max_abs) << "batch " << n_batch;
        EXPECT_EQ(c.top1, 1.0) << "batch " << n_batch;
    }
}

/// Every tensor of a GGUF file: name -> (type, shape, bytes).
struct tensor_bytes {
    quant_type type;
    std::vector<std::uint64_t> shape;
    std::vector<std::byte> data;
};

std::map<std::string, tensor_bytes> read_tensors(const fs::path& path) {
    auto files = gguf::model_files::open(path);
    if (!files) {
        throw std::runtime_error(files.error().message);
    }
    std::map<std::string, tensor_bytes> out;
    std::ifstream in(path, std::ios::binary);
    for (const auto& t : files->tensors()) {
        tensor_bytes b{t.type, std::vector<std::uint64_t>(t.shape().begin(), t.shape().end()),
                       std::vector<std::byte>(t.bytes)};
        in.seekg(static_cast<std::streamoff>(t.offset));
        in.read(reinterpret_cast<char*>(b.data.data()), static_cast<std::streamsize>(b.data.size()));
        out.emplace(t.name, std::move(b));
    }
    return out;
}

std::vector<float> as_floats(const tensor_bytes& t) {
    std::uint64_t n = 1;
    for (auto d : t.shape) {
        n *= d;
    }
    std::vector<float> out(n);
    kernels::dequantize_row(t.type, t.data.data(), out.data(), n);
    return out;
}

// The hub's MXFP4 experts stay MXFP4 (as llama.cpp's converter keeps them) and hold exactly the values transformers
// dequantises; every other tensor equals the F32 conversion of transformers' own bf16 save.
TEST(gpt_oss_fidelity, mxfp4_checkpoint_converts_to_the_values_transformers_reads) {
    const auto mxfp4 = read_tensors(convert_fixture("gpt_oss", convert::output_type::f32, "f32"));
    const auto dense = read_tensors(bf16_save_at_f32());
    ASSERT_EQ(mxfp4.size(), dense.size());
    std::size_t experts = 0;
    for (const auto& [name, t] : mxfp4) {
        const auto it = dense.find(name);
        ASSERT_NE(it, dense.end()) << name;
        EXPECT_EQ(t.shape, it->second.shape) << name;
        if (t.type == quant_type::mxfp4) {
            ++experts;
            EXPECT_EQ(as_floats(t), as_floats(it->second)) << name;
        } else {
            EXPECT_EQ(t.type, it->second.type) << name;
            EXPECT_TRUE(t.data == it->second.data) << name;
        }
    }
    EXPECT_EQ(experts, 6u); // gate, up and down of both layers
}

// MXFP4 experts multiply 8-bit activations (as llama.cpp's do), so the criterion is the quantised types': the
// same top-1 where the reference is decisive and a cosine near 1.
TEST(gpt_oss_fidelity, mxfp4_experts_agree_on_top1_and_cosine) {
    const auto m = test::load_model(convert_fixture("gpt_oss", convert::output_type::f32, "f32"), 64, 256, 2);
    const auto c = compare_all(engine_logits(m));
    std::printf("gpt_oss mxfp4: top-1 %.4f (decisive %.4f), cosine mean %.6f, max|diff| %.3g of %.3g\n", c.top1,
                c.decisive_top1, c.mean_cosine, c.max_diff, c.max_abs);
    EXPECT_GE(c.decisive_top1, 0.99);
    EXPECT_GE(c.mean_cosine, 0.999);
    EXPECT_EQ(greedy(m), reference().greedy_continuation);
}

TEST(gpt_oss_fidelity, bf16_conversion_matches_within_1e_2) {
    // Every weight is bf16-exact, so only the F16 KV cache rounds.
    const auto m = test::load_model(convert_fixture("gpt_oss_bf16", convert::output_type::bf16, "bf16"), 64, 256, 2);
    const auto c = compare_all(engine_logits(m));
    std::printf("gpt_oss bf16: top-1 %.4f, cosine mean %.6f, max|diff| %.3g of %.3g\n", c.top1, c.mean_cosine,
                c.max_diff, c.max_abs);
    EXPECT_LE(c.max_diff, 1e-2 * c.max_abs);
    EXPECT_EQ(c.top1, 1.0);
}

/// A copy of a GGUF model with every tensor of `type` dequantized to F32: the same rounded weights, computed
/// without quantized activations.
fs::path dequantized_copy(const fs::path& src, quant_type type) {
    const auto out = fs::path(src).replace_extension(".dequantized.gguf");
    auto files = gguf::model_files::open(src);
    if (!files) {
        throw std::runtime_error(files.error().message);
    }
    gguf::writer w(out);
    for (const auto& e : files->kv().entries()) {
        w.kv().set(e.key, e.value);
    }
    for (const auto& t : files->tensors()) {
        if (!w.add_tensor(t.name, t.type == type ? quant_type::f32 : t.type, t.shape())) {
            throw std::runtime_error("add_tensor " + t.name);
        }
    }
    const auto all = read_tensors(src);
    for (const auto& t : files->tensors()) {
        const auto& b = all.at(t.name);
        if (t.type != type) {
            EXPECT_TRUE(w.write_tensor(b.data));
            continue;
        }
        const auto values = as_floats(b);
        EXPECT_TRUE(w.write_tensor(std::as_bytes(std::span(values))));
    }
    if (auto r = w.finish(); !r) {
        throw std::runtime_error(r.error().message);
    }
    return out;
}

// Q8_0 against transformers, split as the other fixtures' test does: the rounded weights computed in F32 with an
// F32 KV cache, and the 8-bit activations against those. gpt-oss's wide expert pre-activations (scaled so the
// clamp at 7 is reached) make its random logits more sensitive to weight rounding than the other fixtures'.
TEST(gpt_oss_fidelity, q8_0_error_splits_into_weight_and_activation_rounding) {
    const auto q8 = convert_fixture("gpt_oss_bf16", convert::output_type::q8_0, "q8_0");
    const auto quantized = engine_logits(test::load_model(q8, 64, 256, 2));
    const auto rounded = engine_logits(load_f32_cache(dequantized_copy(q8, quant_type::q8_0)));
    const auto n_pos = reference().logits.size() / reference().n_vocab;
    const auto activations = compare(quantized, rounded.data(), n_pos, reference().n_vocab);
    const auto weights = compare_all(rounded);
    const auto both = compare_all(quantized);
    std::printf("gpt_oss q8_0: rounded weights vs transformers: top-1 %.4f (decisive %.4f) cosine %.6f | 8-bit "
                "activations vs rounded weights: top-1 %.4f cosine %.6f | q8_0 vs transformers: top-1 %.4f "
                "(decisive %.4f) cosine %.6f\n",
                weights.top1, weights.decisive_top1, weights.mean_cosine, activations.top1, activations.mean_cosine,
                both.top1, both.decisive_top1, both.mean_cosine);
    EXPECT_GE(weights.mean_cosine, 0.997);
    EXPECT_GE(activations.mean_cosine, 0.997);
    EXPECT_GE(both.decisive_top1, 0.95);
}

TEST(gpt_oss_fidelity, batched_prefill_equals_token_by_token) {
    const auto path = bf16_save_at_f32();
    const auto batched = engine_logits(test::load_model(path, 64, 256, 2));
    const auto single_model = test::load_model(path, 1, 256, 2);
    std::vector<float> single;
    for (const auto& seq : reference().sequences) {
        session s(single_model);
        std::vector<float> logits;
        for (const auto t : seq) {
            auto r = test::run_sync<result<void>>([&] { return s.evaluate(std::span(&t, 1), logits); });
            ASSERT_TRUE(r) << r.error().message;
            single.insert(single.end(), logits.begin(), logits.end());
        }
    }
    const auto c = compare(batched, single.data(), single.size() / reference().n_vocab, reference().n_vocab);
    EXPECT_LE(c.max_diff, 1e-5 * c.max_abs);
}

// llama.cpp's own converter on the same MXFP4 checkpoint: the file loads, holds the tensors `sluice convert` writes
// (names, types, shapes and bytes), and gives transformers' logits (its weights are exact: BF16 matrices).
TEST(gpt_oss_fidelity, llama_cpp_converted_file_loads_and_equals_sluice_conversion) {
    const auto llama_path = reference_dir / "gpt_oss" / "llamacpp-bf16.gguf";
    const auto theirs = read_tensors(llama_path);
    const auto ours = read_tensors(convert_fixture("gpt_oss", convert::output_type::bf16, "bf16"));
    ASSERT_EQ(theirs.size(), ours.size());
    for (const auto& [name, t] : theirs) {
        const auto it = ours.find(name);
        ASSERT_NE(it, ours.end()) << name;
        EXPECT_EQ(t.type, it->second.type) << name;
        EXPECT_EQ(t.shape, it->second.shape) << name;
        EXPECT_TRUE(t.data == it->second.data) << name;
    }
    const auto m = test::load_model(llama_path, 64, 256, 2, quant_type::f32);
    const auto c = compare_all(engine_logits(m));
    std::printf("gpt_oss llama.cpp bf16: top-1 %.4f (decisive %.4f), cosine %.6f, max|diff| %.3g of %.3g\n", c.top1,
                c.decisive_top1, c.mean_cosine, c.max_diff, c.max_abs);
    EXPECT_GE(c.decisive_top1, 0.99);
    EXPECT_GE(c.mean_cosine, 0.999);
}

} // namespace
} // namespace sluice
