// Reading a small text file (config.json, tokenizer.json) whole.
#pragma once

#include "sluice/error.hpp"

#include <filesystem>
#include <string>

namespace sluice::convert {

/// The whole content of `path`. Errors name the path ("DIR/config.json: cannot open: ...").
result<std::string> read_text_file(const std::filesystem::path& path);

} // namespace sluice::convert
