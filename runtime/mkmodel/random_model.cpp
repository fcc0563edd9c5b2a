// Planning and writing random-weight models.
#include "runtime/mkmodel/random_model.hpp"

#include "kernels/quant.hpp"
#include "runtime/gguf/model_files.hpp"
#include "runtime/gguf/writer.hpp"
#include "runtime/mkmodel/block_pool.hpp"
#include "runtime/models/tensor_names.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <system_error>
#include <utility>

namespace sluice::mkmodel {

namespace {

using kernels::quant_type;
using models::tensor_role;

/// Standard deviation of the values of `role` for a tensor whose rows hold `fan_in` values.
float weight_stddev(tensor_role role, std::uint64_t fan_in) {
    if (role == tensor_role::embedding) {
        return 1.0f;
    }
    const float unit = 1.0f / std::sqrt(static_cast<float>(fan_in));
    // Routers get larger logits so top-k routing is decisive and differs from token to token.
    return role == tensor_role::router ? 2.0f * unit : unit;
}

bool is_float_role(tensor_role role) {
    return role == tensor_role::vector || role == tensor_role::router;
}

/// llama.cpp's general.file_type for a model mostly of `type`.
std::uint32_t file_type_of(quant_type type) {
    switch (type) {
    case quant_type::f32:
        return 0;
    case quant_type::f16:
        return 1;
    case quant_type::q4_0:
        return 2;
    case quant_type::q2_k:
        return 10;
    case quant_type::q3_k:
        return 11; // Q3_K_S: every quantized tensor is Q3_K
    case quant_type::mxfp4:
        return 38;
    case quant_type::iq2_xxs:
        return 19;
    case quant_type::iq2_xs:
        return 20;
    case quant_type::iq3_xxs:
        return 23;
    case quant_type::iq1_s:
        return 24;
    case quant_type::iq3_s:
        return 26;
    case quant_type::iq2_s:
        return 28;
    case quant_type::iq1_m:
        return 31;
    case quant_type::tq1_0:
        return 36;
    case quant_type::tq2_0:
        return 37;
    case quant_type::q8_0:
        return 7;
    case quant_type::q4_k:
        return 14; // Q4_K_S: every quantized tensor is Q4_K
    case quant_type::q5_k:
        return 16;
    case quant_type::q6_k:
        return 18;
    case quant_type::bf16:
        return 32;
    default:
        return 0;
    }
}

bool is_quantized(quant_type type) {
    return type != quant_type::f32 && type != quant_type::f16 && type != quant_type::bf16;
}

void set_general_keys(const random_model_spec& spec, gguf::metadata& kv) {
    kv.set_string(gguf::keys::name, spec.name.empty() ? spec.hparams.arch + " (random weights)" : spec.name);
    kv.set_string("general.description", "random weights from sluice mkmodel, seed " + std::to_string(spec.seed));
    kv.set_u32("general.file_type", file_type_of(spec.type));
    if (is_quantized(spec.type)) {
        kv.set_u32("general.quantization_version", 2);
    }
}

error row_error(const models::tensor_spec& t, quant_type type) {
    const auto& traits = kernels::traits_of(type);
    return make_error(std::errc::invalid_argument,
                      "type " + std::string(traits.name) + ": tensor " + t.name + " has rows of " +
                          std::to_string(t.ne[0]) + " values, not a multiple of the block size " +
                          std::to_string(traits.block_elems) + " (choose another --type, e.g. q8_0)");
}

/// F32 data of a norm weight, bias or router.
std::vector<std::byte> float_tensor(const planned_tensor& t, std::uint64_t n_elements, std::uint64_t seed) {
    random_stream rng(derive_seed(seed, t.spec.name));
    const bool norm = t.spec.name.find("norm") != std::string::npos;
    const bool bias = t.spec.name.ends_with(".bias");
    const float stddev = norm || bias ? 0.02f : weight_stddev(t.spec.role, t.spec.ne[0]);
    std::vector<std::byte> out(n_elements * sizeof(float));
    for (std::uint64_t i = 0; i < n_elements; ++i) {
        float v = (norm ? 1.0f : 0.0f) + stddev * rng.normal();
        if (t.spec.name.ends_with(".ssm_a")) {
            v = -std::exp(0.5f * rng.normal()); // a = -exp(A_log) < 0: the delta rule's state decays
        }
        std::memcpy(out.data() + i * sizeof(float), &v, sizeof v);
    }
    return out;
}

/// Pools keyed by (type, stddev bits), each sized for the largest tensor that draws from it.
class pool_set {
public:
    explicit pool_set(std::uint64_t seed) : seed_(seed) {}

    static std::pair<quant_type, std::uint32_t> key_of(const planned_tensor& t) {
        return {t.type, std::bit_cast<std::uint32_t>(weight_stddev(t.spec.role, t.spec.ne[0]))};
    }
    void reserve(const planned_tensor& t, std::uint64_t bytes) {
        auto& want = sizes_[key_of(t)];
        want = std::max(want, bytes);
    }
    const block_pool& get(const planned_tensor& t) {
        const auto key = key_of(t);
        auto& pool = pools_[key];
        if (!pool) {
            const std::string label =
                "pool/" + std::to_string(static_cast<std::uint32_t>(key.first)) + "/" + std::to_string(key.second);
            pool = std::make_unique<block_pool>(key.first, std::bit_cast<float>(key.second), sizes_[key],
                                                derive_seed(seed_, label));
        }
        return *pool;
    }

private:
    std::uint64_t seed_;
    std::map<std::pair<quant_type, std::uint32_t>, std::uint64_t> sizes_;
    std::map<std::pair<quant_type, std::uint32_t>, std::unique_ptr<block_pool>> pools_;
};

/// Declares every tensor, then writes their data in order.
result<void> write_tensors(const random_model_plan& plan, gguf::writer& w, const write_options& options) {
    for (const auto& t : plan.tensors) {
        if (auto r = w.add_tensor(t.spec.name, t.type, t.spec.ne); !r) {
            return r;
        }
    }
    pool_set pools(plan.seed);
    for (std::size_t i = 0; i < plan.tensors.size(); ++i) {
        if (!is_float_role(plan.tensors[i].spec.role)) {
            pools.reserve(plan.tensors[i], w.tensors()[i].bytes);
        }
    }
    const std::uint64_t total = plan.data_bytes();
    std::uint64_t done = 0;
    for (std::size_t i = 0; i < plan.tensors.size(); ++i) {
        const planned_tensor& t = plan.tensors[i];
        const gguf::tensor_info& info = w.tensors()[i];
        if (is_float_role(t.spec.role)) {
            if (auto r = w.write_tensor(float_tensor(t, info.n_elements, plan.seed)); !r) {
                return r;
            }
        } else {
            block_stream stream(pools.get(t), derive_seed(plan.seed, t.spec.name));
            auto fill = [&stream](std::uint64_t, std::span<std::byte> chunk) -> result<void> {
                stream.fill(chunk);
                return {};
            };
            if (auto r = w.write_tensor(fill); !r) {
                return r;
            }
        }
        done += info.bytes;
        if (options.progress) {
            options.progress(done, total);
        }
    }
    return {};
}

/// The final name of part `index` of `count` for output `out`.
std::filesystem::path final_path(const std::filesystem::path& out, std::size_t index, std::size_t count) {
    if (count == 1) {
        return out;
    }
    std::string prefix = out.string();
    if (prefix.ends_with(".gguf")) {
        prefix.resize(prefix.size() - 5);
    }
    return gguf::split_path(prefix, static_cast<std::uint32_t>(index + 1), static_cast<std::uint32_t>(count));
}

void remove_all(std::span<const std::filesystem::path> paths) {
    for (const auto& p : paths) {
        std::error_code ec;
        std::filesystem::remove(p, ec);
    }
}

} // namespace

std::uint64_t random_model_plan::data_bytes() const {
    std::uint64_t total = 0;
    for (const auto& t : tensors) {
        std::uint64_t rows = 1;
        for (std::size_t d = 1; d < t.spec.ne.size(); ++d) {
            rows *= t.spec.ne[d];
        }
        total += rows * kernels::row_bytes(t.type, t.spec.ne[0]).value_or(0);
    }
    return total;
}

result<random_model_plan> plan_random_model(const random_model_spec& spec) {
    for (const quant_type t : {spec.type, spec.expert_type.value_or(spec.type)}) {
        if (!kernels::can_quantize(t) && !kernels::can_scale_random_blocks(t)) {
            return make_error(std::errc::not_supported, "type " + std::string(kernels::traits_of(t).name) +
                                                            " cannot be generated (no quantizer)");
        }
    }
    random_model_plan plan;
    plan.seed = spec.seed;
    models::write_hparams(spec.hparams, plan.kv);
    set_general_keys(spec, plan.kv);
    // Read the keys back the way the loader does, so the plan sees exactly what a reader will.
    auto hp = models::load_hparams(plan.kv, plan.arch);
    if (!hp) {
        return hp.error();
    }
    plan.hparams = std::move(*hp);
    for (auto& t : plan.arch->tensors(plan.hparams)) {
        // Optional tensors are left out (llama.cpp's files have none of them) except the untied output head.
        if (t.optional && (spec.tied || t.name != models::tensor_name(models::tensor_kind::output))) {
            continue;
        }
        const quant_type type = is_float_role(t.role)                                ? quant_type::f32
                                : t.role == tensor_role::experts && spec.expert_type ? *spec.expert_type
                                                                                     : spec.type;
        if (t.ne.empty() || t.ne[0] % kernels::traits_of(type).block_elems != 0) {
            return row_error(t, type);
        }
        plan.tensors.push_back({std::move(t), type});
    }
    return plan;
}

result<std::vector<std::filesystem::path>>
write_random_model(const random_model_plan& plan, const std::filesystem::path& out, const write_options& options) {
    gguf::writer w(out.string() + ".tmp", {.max_part_bytes = options.split_bytes});
    w.kv() = plan.kv;
    if (auto r = write_tensors(plan, w, options); !r) {
        remove_all(w.paths());
        return r.error();
    }
    auto written = w.finish();
    if (!written) {
        remove_all(w.paths());
        return written.error();
    }
    std::vector<std::filesystem::path> paths;
    for (std::size_t i = 0; i < written->size(); ++i) {
        paths.push_back(final_path(out, i, written->size()));
        std::error_code ec;
        std::filesystem::rename((*written)[i], paths.back(), ec);
        if (ec) {
            remove_all(*written);
            remove_all(std::span(paths).first(i));
            return make_error(std::errc::io_error, "cannot rename " + (*written)[i].string() + " to " +
                                                       paths.back().string() + ": " + ec.message());
        }
    }
    return paths;
}

} // namespace sluice::mkmodel
