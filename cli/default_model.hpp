// The bundled model (models/sluice-tiny-moe.gguf): what `sluice serve` and `sluice run` use when no --model
// is given.
#pragma once

#include <filesystem>
#include <optional>
#include <vector>

namespace sluice::cli {

/// Where the bundled model is looked for, in order: installed beside the executable
/// (<prefix>/share/sluice/models/), then the source tree this executable was built from.
std::vector<std::filesystem::path> bundled_model_candidates();

/// The first candidate that exists.
std::optional<std::filesystem::path> bundled_model();

} // namespace sluice::cli
