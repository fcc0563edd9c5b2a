// GGUF metadata values as JSON (for `sluice inspect --json` and other machine-readable reports).
#pragma once

#include "runtime/gguf/metadata.hpp"
#include "runtime/gguf/value.hpp"

#include <boost/json/value.hpp>

#include <cstddef>

namespace sluice::gguf {

/// Converts a value: integers, floats (NaN/inf become strings), bools and strings as themselves; arrays as
/// JSON arrays of at most `max_items` elements (0 = all). Truncated arrays become
/// {"type": "array[string]", "count": N, "head": [...]} so readers can tell.
boost::json::value to_json(const metadata_value& value, std::size_t max_items = 0);

/// All entries as a JSON object in file order, arrays truncated as in `to_json`.
boost::json::object to_json(const metadata& kv, std::size_t max_items = 0);

} // namespace sluice::gguf
