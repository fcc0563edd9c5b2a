// Seeded random numbers for generated weights: xoshiro256** streams derived from a seed and a label, and
// normal samples. The same seed gives the same numbers on every run of the same build.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>
#include <string_view>

namespace sluice::mkmodel {

/// One step of splitmix64: a good 64-bit mixer, used to seed streams.
constexpr std::uint64_t splitmix64(std::uint64_t& state) noexcept {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/// A seed for the stream called `label` under `seed` (e.g. one per tensor name).
constexpr std::uint64_t derive_seed(std::uint64_t seed, std::string_view label) noexcept {
    std::uint64_t h = 0xCBF29CE484222325ULL; // FNV-1a
    for (const char c : label) {
        h = (h ^ static_cast<unsigned char>(c)) * 0x100000001B3ULL;
    }
    std::uint64_t s = seed ^ h;
    return splitmix64(s);
}

/// xoshiro256**: fast, small state, good statistical quality. Not thread-safe; one per stream.
class random_stream {
public:
    explicit random_stream(std::uint64_t seed) noexcept {
        for (auto& s : s_) {
            s = splitmix64(seed);
        }
    }

    std::uint64_t next() noexcept {
        const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
        const std::uint64_t t = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = rotl(s_[3], 45);
        return result;
    }

    /// Uniform in [0, n) for 0 < n < 2^32, by multiply-shift of the high 32 bits.
    std::uint64_t below(std::uint64_t n) noexcept { return ((next() >> 32) * n) >> 32; }

    /// Uniform in (0, 1].
    double unit() noexcept { return (static_cast<double>(next() >> 11) + 1.0) * 0x1.0p-53; }

    /// Standard normal sample (Box-Muller; the second value of each pair is kept for the next call).
    float normal() noexcept {
        if (has_spare_) {
            has_spare_ = false;
            return spare_;
        }
        const double r = std::sqrt(-2.0 * std::log(unit()));
        const double theta = 2.0 * std::numbers::pi * unit();
        spare_ = static_cast<float>(r * std::sin(theta));
        has_spare_ = true;
        return static_cast<float>(r * std::cos(theta));
    }

private:
    static constexpr std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }

    std::uint64_t s_[4]{};
    float spare_ = 0.0f;
    bool has_spare_ = false;
};

} // namespace sluice::mkmodel
