// Checks the generated Unicode tables and the UTF-8 helpers on known code points.
#include "runtime/tokenizer/byte_level.hpp"
#include "runtime/tokenizer/unicode.hpp"

#include <gtest/gtest.h>

namespace {

namespace tk = sluice::tokenizer;
using enum tk::general_category;

TEST(unicode, categories_of_known_code_points) {
    EXPECT_EQ(tk::category_of('A'), Lu);
    EXPECT_EQ(tk::category_of('a'), Ll);
    EXPECT_EQ(tk::category_of('5'), Nd);
    EXPECT_EQ(tk::category_of(0x00BD), No);  // ½
    EXPECT_EQ(tk::category_of(0x0301), Mn);  // combining acute
    EXPECT_EQ(tk::category_of(0x4E2D), Lo);  // 中 (inside a First/Last range)
    EXPECT_EQ(tk::category_of(0xAC00), Lo);  // 가
    EXPECT_EQ(tk::category_of(0x1F999), So); // 🦙
    EXPECT_EQ(tk::category_of(0x01C5), Lt);  // ǅ
    EXPECT_EQ(tk::category_of(0x02B0), Lm);  // ʰ
    EXPECT_EQ(tk::category_of(0x10FFFF), Cn);
    EXPECT_EQ(tk::category_of(0x110000), Cn);
}

TEST(unicode, white_space_follows_the_white_space_property) {
    for (std::uint32_t cp : {0x20u, 0x09u, 0x0Au, 0x0Bu, 0x0Cu, 0x0Du, 0x85u, 0xA0u, 0x2003u, 0x3000u}) {
        EXPECT_TRUE(tk::flags_of(cp) & tk::cp_flag::space) << std::hex << cp;
    }
    for (std::uint32_t cp : {0x41u, 0x200Bu, 0xFEFFu})
        EXPECT_FALSE(tk::flags_of(cp) & tk::cp_flag::space) << cp;
}

TEST(unicode, decode_replaces_invalid_bytes_one_at_a_time) {
    std::size_t len = 0;
    EXPECT_EQ(tk::decode_utf8("\xE4\xB8\xAD", 0, len), 0x4E2Du);
    EXPECT_EQ(len, 3u);
    EXPECT_EQ(tk::decode_utf8("\xE4\xB8", 0, len), 0xFFFDu); // truncated
    EXPECT_EQ(len, 1u);
    EXPECT_EQ(tk::decode_utf8("\xC0\x80", 0, len), 0xFFFDu); // overlong
    EXPECT_EQ(len, 1u);
    EXPECT_EQ(tk::decode_utf8("\xED\xA0\x80", 0, len), 0xFFFDu); // surrogate
}

TEST(unicode, byte_level_mapping_round_trips_every_byte) {
    std::string all;
    for (int b = 0; b < 256; ++b)
        all += static_cast<char>(b);
    std::string mapped;
    tk::append_byte_level(mapped, all);
    EXPECT_EQ(tk::decode_byte_level(mapped), all);
    std::string space;
    tk::append_byte_level(space, " ");
    EXPECT_EQ(space, "\xC4\xA0"); // Ġ
    EXPECT_FALSE(tk::decode_byte_level("\xE4\xB8\xAD").has_value());
}

} // namespace
