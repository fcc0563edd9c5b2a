// Named model geometries for `sluice mkmodel`: real models' shapes (from their config.json) and tiny ones per
// architecture for tests.
#pragma once

#include "kernels/quant_type.hpp"
#include "runtime/models/hparams.hpp"

#include <optional>
#include <span>
#include <string_view>

namespace sluice::mkmodel {

/// One preset: the generic hyperparameters (arch flags are left to the architecture's configure hook), the
/// weight type used when none is asked for, and whether the output projection is tied to the embedding.
struct model_preset {
    std::string_view name;
    std::string_view description;
    models::model_hparams hparams;
    kernels::quant_type default_type = kernels::quant_type::q4_k;
    bool tied = false;
    /// The routed experts' type whatever the weight type (gpt-oss: MXFP4, as it is published); nullopt: the
    /// weight type.
    std::optional<kernels::quant_type> expert_type;
};

/// Every preset, real geometries first, then `tiny-*` (one or more per supported architecture).
/// Thread-safe (a constant table built on first use).
std::span<const model_preset> model_presets();

/// The preset called `name`, or nullptr.
const model_preset* find_preset(std::string_view name) noexcept;

} // namespace sluice::mkmodel
