// Tiny random-weight models for engine tests.
#include "tests/engine/tiny_model.hpp"

#include "runtime/mkmodel/presets.hpp"
#include "runtime/mkmodel/random_model.hpp"
#include "runtime/mkmodel/tokenizer_keys.hpp"
#include "tests/cli/scratch.hpp"

#include <random>
#include <stdexcept>

namespace sluice::test {

namespace {

models::model_hparams tiny_hparams(const std::string& arch) {
    if (arch == "qwen35moe" || arch == "qwen35" || arch == "qwen3next" || arch == "deepseek2" ||
        arch == "glm4moe") { // their own tiny presets
        auto hp = mkmodel::find_preset("tiny-" + arch)->hparams;
        hp.n_vocab = 512;
        hp.n_ctx_train = 1024;
        return hp;
    }
    models::model_hparams hp;
    hp.arch = arch;
    hp.n_vocab = 512;
    hp.n_ctx_train = 1024;
    hp.n_embd = 256;
    hp.n_layer = 2;
    hp.n_head = 4;
    hp.n_head_kv = 2;
    hp.head_dim = 64;
    hp.head_dim_v = 64;
    hp.rope.n_rot = 64;
    hp.rope.freq_base = 10000.0f;
    hp.rms_eps = 1e-6f;
    const bool moe =
        arch == "qwen2moe" || arch == "qwen3moe" || arch == "olmoe" || arch == "mixtral" || arch == "gpt-oss";
    hp.n_ff = moe && arch != "mixtral" ? 0 : 512;
    if (moe) {
        hp.n_expert = 8;
        hp.n_expert_used = 2;
        hp.n_ff_exp = arch == "mixtral" ? 512 : 256;
    }
    if (arch == "qwen2moe") {
        hp.n_ff_shexp = 512;
    }
    if (arch == "gpt-oss") { // a 16-token window on layer 0, YaRN as published, 4 of 8 experts
        hp.n_expert_used = 4;
        hp.n_ff_exp = 512; // MXFP4 experts this wide outweigh their slots' alignment room (streaming_test)
        hp.gpt_oss.sliding_window = 16;
        hp.rope.ext_factor = 1.0f;
        hp.rope.freq_scale = 1.0f / 32.0f;
        hp.rope.n_ctx_orig = 4096;
        hp.rope.attn_factor = 1.3466f;
    }
    if (arch == "mixtral") {
        hp.arch = "llama";
    }
    return hp;
}

} // namespace

std::filesystem::path tiny_model(const std::string& arch, kernels::quant_type type, std::uint64_t seed,
                                 const std::string& variant, std::function<void(void*)> mutate) {
    const auto path = scratch_dir() / (arch + "-" + std::string(kernels::traits_of(type).name) + "-" +
                                       std::to_string(seed) + variant + ".gguf");
    if (std::filesystem::exists(path)) {
        return path;
    }
    mkmodel::random_model_spec spec;
    spec.hparams = tiny_hparams(arch);
    spec.type = type;
    spec.seed = seed;
    spec.name = arch;
    auto plan = mkmodel::plan_random_model(spec);
    if (!plan) {
        throw std::runtime_error(plan.error().message);
    }
    auto tok = mkmodel::synthetic_tokenizer(spec.hparams.n_vocab);
    if (!tok) {
        throw std::runtime_error(tok.error().message);
    }
    for (const auto& e : tok->entries()) {
        plan->kv.set(e.key, e.value);
    }
    if (mutate) {
        mutate(&*plan);
    }
    auto written = mkmodel::write_random_model(*plan, path);
    if (!written) {
        throw std::runtime_error(written.error().message);
    }
    return path;
}

std::shared_ptr<model> load_model(const std::filesystem::path& path, std::uint32_t n_batch, std::uint32_t n_ctx,
                                  std::size_t n_threads, kernels::quant_type kv_type) {
    model_options opts;
    opts.n_batch = n_batch;
    opts.n_ctx = n_ctx;
    opts.n_threads = n_threads;
    opts.kv_type = kv_type == kernels::quant_type::f32 ? kv_cache_type::f32 : kv_cache_type::f16;
    auto m = run_sync<result<std::shared_ptr<model>>>([&] { return model::load(path, opts); });
    if (!m) {
        throw std::runtime_error(m.error().message);
    }
    return *m;
}

generation_outcome run_generation(session& s, generate_request req) {
    return run_sync<generation_outcome>([&]() -> boost::asio::awaitable<generation_outcome> {
        generation_outcome o;
        auto stream = s.generate(std::move(req));
        for (;;) {
            auto ev = co_await stream.next();
            if (!ev) {
                o.error = ev.error().message;
                break;
            }
            if (!*ev) {
                break;
            }
            o.text += (*ev)->text;
            o.events.push_back(std::move(**ev));
        }
        o.tokens = stream.tokens();
        o.summary = stream.summary();
        co_return o;
    });
}

std::vector<std::int32_t> random_tokens(std::size_t n, std::uint32_t seed, std::int32_t n_vocab) {
    std::mt19937 rng(seed);
    std::vector<std::int32_t> ids(n);
    for (auto& id : ids) {
        id = static_cast<std::int32_t>(rng() % static_cast<std::uint32_t>(n_vocab));
    }
    return ids;
}

} // namespace sluice::test
