// Helpers shared by the grammar tests: parse or fail the test, and match a whole string.
#pragma once

#include "runtime/grammar/grammar.hpp"
#include "runtime/grammar/matcher.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string_view>

namespace sluice::grammar::test {

inline std::shared_ptr<const grammar> parse_or_fail(std::string_view text) {
    auto g = parse_gbnf(text);
    EXPECT_TRUE(g) << (g ? "" : g.error().message) << "\n" << text;
    return g ? *g : nullptr;
}

/// Whether `text` is a complete document of `g`.
inline bool matches(const std::shared_ptr<const grammar>& g, std::string_view text) {
    if (!g) {
        return false;
    }
    matcher m(g);
    return m.current() != matcher::dead && m.accept(text) && m.is_complete();
}

/// Whether `text` can start a document of `g` (every byte accepted).
inline bool is_prefix(const std::shared_ptr<const grammar>& g, std::string_view text) {
    matcher m(g);
    return m.current() != matcher::dead && m.accept(text);
}

} // namespace sluice::grammar::test
