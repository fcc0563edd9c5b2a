// Streaming detokenizer: turns generated tokens into text pieces that never split a UTF-8 character.
#pragma once

#include "runtime/tokenizer/tokenizer.hpp"

#include <string>

namespace sluice::tokenizer {

/// Per-sequence decoding state. Not thread-safe; one per generation stream. The tokenizer must outlive it.
class stream_decoder {
public:
    explicit stream_decoder(const tokenizer& tok, decode_options opts = {});

    /// Adds one token and returns the text that is now complete (possibly empty). Bytes of a UTF-8
    /// character that is not finished yet are held back until a later token completes it.
    std::string push(token_id id);

    /// Returns whatever is held back (an incomplete sequence becomes U+FFFD each byte) and resets.
    std::string flush();

private:
    const tokenizer* tok_;
    decode_options opts_;
    std::string pending_;
    bool first_ = true;
};

} // namespace sluice::tokenizer
