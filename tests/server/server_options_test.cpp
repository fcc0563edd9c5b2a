// The command line's size and duration parsers.
#include "server/server_options.hpp"

#include <gtest/gtest.h>

namespace sluice::server {
namespace {

TEST(server_options, sizes_accept_decimal_and_binary_units) {
    EXPECT_EQ(parse_size("1MiB").value(), 1024u * 1024u);
    EXPECT_EQ(parse_size("1mib").value(), 1024u * 1024u);
    EXPECT_EQ(parse_size("2KB").value(), 2000u);
    EXPECT_EQ(parse_size("512").value(), 512u);
    EXPECT_EQ(parse_size("3B").value(), 3u);
    EXPECT_EQ(parse_size("1GiB").value(), 1024u * 1024u * 1024u);
}

TEST(server_options, sizes_reject_junk_units_and_overflow) {
    EXPECT_FALSE(parse_size(""));
    EXPECT_FALSE(parse_size("MiB"));
    EXPECT_FALSE(parse_size("-1"));
    EXPECT_FALSE(parse_size("1 MiB"));
    EXPECT_FALSE(parse_size("1k"));
    EXPECT_FALSE(parse_size("99999999999999999999GiB"));
    EXPECT_FALSE(parse_size("18446744073709551615GiB"));
}

TEST(server_options, durations_accept_ms_s_m_h_and_bare_seconds) {
    EXPECT_EQ(parse_duration("30s").value(), std::chrono::seconds(30));
    EXPECT_EQ(parse_duration("500ms").value(), std::chrono::milliseconds(500));
    EXPECT_EQ(parse_duration("2m").value(), std::chrono::minutes(2));
    EXPECT_EQ(parse_duration("1h").value(), std::chrono::hours(1));
    EXPECT_EQ(parse_duration("7").value(), std::chrono::seconds(7));
}

TEST(server_options, durations_reject_junk_and_overflow) {
    EXPECT_FALSE(parse_duration("soon"));
    EXPECT_FALSE(parse_duration("5d"));
    EXPECT_FALSE(parse_duration("-5s"));
    EXPECT_FALSE(parse_duration("18446744073709551615h"));
}

} // namespace
} // namespace sluice::server
