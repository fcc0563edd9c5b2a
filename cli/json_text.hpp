// JSON text for people and programs: like boost::json::serialize, but numbers in plain decimal form
// (26.617632, not Boost's 2.6617632E1).
#pragma once

#include <boost/json/value.hpp>

#include <string>

namespace sluice::cli {

/// Serializes `v` compactly; a double is written as its shortest round-trip decimal ("0.1", "3", "1e-07").
/// NaN and infinities, which JSON cannot hold, are written as null.
std::string json_text(const boost::json::value& v);

} // namespace sluice::cli
