// The bundled model (models/sluice-tiny-moe.gguf): what `sluice serve` and `sluice run` use when no --model
// is given.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace sluice::cli {

/// Where the bundled model is looked for, in order: installed beside the executable
/// (<prefix>/share/sluice/models/), then the source tree this executable was built from.
std::vector<std::filesystem::path> bundled_model_candidates();

/// The first candidate that exists.
std::optional<std::filesystem::path> bundled_model();

/// `given` when not empty, else the bundled model; nullopt (after telling stderr, prefixed with `command`, where
/// it looked) when there is none.
std::optional<std::string> model_or_bundled(const std::string& given, const char* command);

} // namespace sluice::cli
