// Checks that the streaming detokenizer never splits a UTF-8 character and reproduces the full decode.
#include "runtime/tokenizer/loaders.hpp"
#include "runtime/tokenizer/stream_decoder.hpp"

#include <gtest/gtest.h>

#include <filesystem>

namespace {

namespace tk = sluice::tokenizer;
const std::filesystem::path vocab_dir = std::filesystem::path(SLUICE_SHARED_DIR) / "fixtures" / "vocab";

/// True when `s` holds only complete UTF-8 sequences.
bool complete_utf8(std::string_view s) {
    for (std::size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        const std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (n == 0 || i + n > s.size())
            return false;
        i += n;
    }
    return true;
}

void check_stream(const tk::tokenizer& tok, std::string_view text) {
    const auto ids = tok.encode(text);
    tk::stream_decoder dec(tok);
    std::string streamed;
    int byte_pieces = 0;
    for (const auto id : ids) {
        const std::string part = dec.push(id);
        EXPECT_TRUE(complete_utf8(part)) << "token " << id << " emitted a partial character";
        if (!complete_utf8(tok.piece(id)))
            ++byte_pieces;
        streamed += part;
    }
    streamed += dec.flush();
    EXPECT_EQ(streamed, tok.decode(ids));
    EXPECT_EQ(streamed, text);
    EXPECT_GT(byte_pieces, 0) << "the text should need tokens that are partial characters";
}

TEST(stream_decoder, byte_level_bpe_emits_only_whole_characters) {
    auto tok = tk::load_tokenizer(vocab_dir / "ggml-vocab-gpt-2.gguf");
    ASSERT_TRUE(tok) << tok.error().message;
    check_stream(*tok, "llamas 🦙🦙 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ǅ 中文字符 ok");
}

TEST(stream_decoder, sentencepiece_byte_fallback_emits_only_whole_characters) {
    auto tok = tk::load_tokenizer(vocab_dir / "ggml-vocab-llama-spm.gguf");
    ASSERT_TRUE(tok) << tok.error().message;
    check_stream(*tok, "Hello 🦙 world 𓀀 end");
}

TEST(stream_decoder, flush_replaces_an_unfinished_character) {
    auto tok = tk::load_tokenizer(vocab_dir / "ggml-vocab-gpt-2.gguf");
    ASSERT_TRUE(tok) << tok.error().message;
    const auto ids = tok->encode("🦙");
    ASSERT_GT(ids.size(), 1u);
    tk::stream_decoder dec(*tok);
    EXPECT_EQ(dec.push(ids[0]), "");
    EXPECT_EQ(dec.flush().substr(0, 3), "\xEF\xBF\xBD");
}

TEST(stream_decoder, invalid_bytes_become_replacement_characters) {
    auto tok = tk::load_tokenizer(vocab_dir / "ggml-vocab-gpt-2.gguf");
    ASSERT_TRUE(tok) << tok.error().message;
    // Byte tokens of a lead byte without its continuation, then ASCII: the lead byte alone is invalid.
    const auto lead = tok->encode("\xD2");
    const auto ascii = tok->encode("\x02a");
    tk::stream_decoder dec(*tok);
    std::string out;
    for (const auto id : lead) {
        out += dec.push(id);
    }
    for (const auto id : ascii) {
        out += dec.push(id);
    }
    out += dec.flush();
    EXPECT_EQ(out, "\xEF\xBF\xBD\x02a");
}

} // namespace
