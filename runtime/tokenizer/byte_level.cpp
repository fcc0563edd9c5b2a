// Byte-level (GPT-2) mapping between raw bytes and the printable characters token texts use.
#include "runtime/tokenizer/byte_level.hpp"

#include "runtime/tokenizer/unicode.hpp"

#include <array>

namespace sluice::tokenizer {
namespace {

bool prints_as_itself(unsigned b) {
    return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
}

struct byte_maps {
    std::array<std::uint32_t, 256> to_cp{};
    std::array<std::string, 256> to_text{};
    std::array<std::int16_t, 324> from_cp{}; // code points 0..323 back to bytes, -1 when unmapped
};

const byte_maps& maps() {
    static const byte_maps m = [] {
        byte_maps r;
        r.from_cp.fill(-1);
        std::uint32_t next = 256;
        for (unsigned b = 0; b < 256; ++b) {
            r.to_cp[b] = prints_as_itself(b) ? b : next++;
            append_utf8(r.to_text[b], r.to_cp[b]);
            r.from_cp[r.to_cp[b]] = static_cast<std::int16_t>(b);
        }
        return r;
    }();
    return m;
}

} // namespace

std::uint32_t byte_to_code_point(std::uint8_t b) noexcept {
    return maps().to_cp[b];
}

void append_byte_level(std::string& out, std::string_view bytes) {
    const auto& m = maps();
    for (const char c : bytes)
        out += m.to_text[static_cast<unsigned char>(c)];
}

std::optional<std::string> decode_byte_level(std::string_view text) {
    const auto& m = maps();
    std::string out;
    out.reserve(text.size());
    for (std::size_t pos = 0; pos < text.size();) {
        std::size_t len = 1;
        const std::uint32_t cp = decode_utf8(text, pos, len);
        if (cp >= m.from_cp.size() || m.from_cp[cp] < 0)
            return std::nullopt;
        out += static_cast<char>(m.from_cp[cp]);
        pos += len;
    }
    return out;
}

} // namespace sluice::tokenizer
