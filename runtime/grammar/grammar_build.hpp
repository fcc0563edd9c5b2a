// Internal to runtime/grammar: the checks parse_gbnf runs on a grammar once its rules are flattened.
#pragma once

#include "runtime/grammar/grammar.hpp"

namespace sluice::grammar {

/// Fails, naming a rule on the cycle, when some rule can reach itself without consuming a code point.
[[nodiscard]] result<void> check_left_recursion(const grammar& g);

} // namespace sluice::grammar
