// Test helpers for generated models: writing a preset to a scratch file and reading tensor values back.
#pragma once

#include "kernels/quant.hpp"
#include "runtime/gguf/model_files.hpp"
#include "runtime/mkmodel/presets.hpp"
#include "runtime/mkmodel/random_model.hpp"
#include "runtime/mkmodel/tokenizer_keys.hpp"
#include "tests/cli/scratch.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace sluice::test {

/// The plan of preset `name` with `type` (the preset's default when nullopt) and the synthetic tokenizer.
inline mkmodel::random_model_plan preset_plan(std::string_view name, std::optional<kernels::quant_type> type = {},
                                              std::uint64_t seed = 7) {
    const auto* p = mkmodel::find_preset(name);
    EXPECT_NE(p, nullptr) << name;
    auto plan = mkmodel::plan_random_model(
        {.hparams = p->hparams, .type = type.value_or(p->default_type), .tied = p->tied, .seed = seed});
    EXPECT_TRUE(plan) << (plan ? "" : plan.error().message);
    auto tok = mkmodel::synthetic_tokenizer(p->hparams.n_vocab);
    EXPECT_TRUE(tok);
    for (const auto& e : tok->entries()) {
        plan->kv.set(e.key, e.value);
    }
    return std::move(*plan);
}

/// Writes `plan` to scratch file `file_name` and returns its path.
inline std::filesystem::path write_plan(const mkmodel::random_model_plan& plan, const std::string& file_name,
                                        std::uint64_t split_bytes = 0) {
    const auto path = scratch_dir() / file_name;
    auto written = mkmodel::write_random_model(plan, path, {.split_bytes = split_bytes});
    EXPECT_TRUE(written) << (written ? "" : written.error().message);
    return written ? written->front() : path;
}

inline std::string read_bytes(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Dequantized values of the first `rows` rows of tensor `name` (all rows when 0).
inline std::vector<float> tensor_values(const gguf::model_files& model, std::string_view name, std::uint64_t rows = 0) {
    const auto* t = model.find_tensor(name);
    EXPECT_NE(t, nullptr) << name;
    if (t == nullptr) {
        return {};
    }
    const std::uint64_t n_rows = rows == 0 ? t->n_elements / t->ne[0] : std::min(rows, t->n_elements / t->ne[0]);
    std::string bytes(n_rows * t->row_bytes(), '\0');
    std::ifstream in(model.parts()[t->split].path, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(t->offset));
    in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    EXPECT_TRUE(in) << name;
    std::vector<float> out(n_rows * t->ne[0]);
    for (std::uint64_t r = 0; r < n_rows; ++r) {
        kernels::dequantize_row(t->type, bytes.data() + r * t->row_bytes(), out.data() + r * t->ne[0], t->ne[0]);
    }
    return out;
}

struct moments {
    double mean = 0;
    double stddev = 0;
    bool finite = true;
};

inline moments moments_of(const std::vector<float>& v) {
    moments m;
    double sum = 0;
    double sq = 0;
    for (const float x : v) {
        m.finite = m.finite && std::isfinite(x);
        sum += x;
        sq += static_cast<double>(x) * x;
    }
    const double n = static_cast<double>(std::max<std::size_t>(v.size(), 1));
    m.mean = sum / n;
    m.stddev = std::sqrt(std::max(0.0, sq / n - m.mean * m.mean));
    return m;
}

} // namespace sluice::test
