// Stop strings: holds back streamed text that may begin a stop string and cuts the output where one appears.
#pragma once

#include "sluice/error.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace sluice::runtime {

/// Checks a request's stop list: every entry must be non-empty. The error (std::errc::invalid_argument)
/// names the entry, e.g. "stop[1] must not be empty".
[[nodiscard]] result<void> validate_stops(const std::vector<std::string>& stops);

/// Cuts generated text at the first stop string, streaming. Matching is on bytes, so any UTF-8 works;
/// when the pieces are whole characters, so is everything emitted (a held-back suffix starts where a stop
/// string starts). The output is exactly the text before the earliest-starting occurrence of any stop
/// string (the stop string itself is never emitted, as in OpenAI's API), or the whole text if none occurs.
/// Not thread-safe: one per generation stream.
class stop_matcher {
public:
    /// Empty strings in `stops` are ignored (validate_stops() rejects them at the API boundary).
    /// With no stop strings every piece is passed through at once.
    explicit stop_matcher(std::vector<std::string> stops);

    /// What one push releases.
    struct step {
        std::string emit; ///< text now safe to show (may be empty)
        bool stopped;     ///< a stop string completed; `emit` ends right before it and generation should end
    };

    /// Adds the next piece of text. Text that cannot be part of a stop string is released at once; a suffix
    /// that is a prefix of some stop string is held back. After a stop, further pushes emit nothing and
    /// report stopped.
    step push(std::string_view piece);

    /// Ends the text: returns what is still held back. If the held text contains a complete stop string
    /// (one that was waiting for an earlier-starting, longer stop string to resolve), only the text before
    /// it is returned and stopped() becomes true. Returns "" after a stop.
    std::string flush();

    /// True once a stop string has been found (by push or flush).
    bool stopped() const { return stopped_; }
    /// The stop string that was found ("" before a stop).
    const std::string& matched() const { return matched_; }

private:
    std::size_t first_full_match() const;
    std::size_t first_partial_match() const;
    /// Stops at `at`, where a stop string starts in held_ (the first of them in the list).
    void stop_at(std::size_t at);

    std::vector<std::string> stops_;
    std::size_t longest_ = 0; ///< length of the longest stop string
    std::string held_;        ///< text received but not emitted yet
    bool stopped_ = false;
    std::string matched_;
};

} // namespace sluice::runtime
