// Run-time ISA detection: cpuid feature bits plus XGETBV for the OS-enabled register state.
#include "kernels/isa.hpp"

#include <cpuid.h>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace sluice::kernels {
namespace {

std::uint64_t read_xcr0() noexcept {
    std::uint32_t lo = 0;
    std::uint32_t hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (static_cast<std::uint64_t>(hi) << 32) | lo;
}

isa_level parse_level(const char* s, isa_level fallback) noexcept {
    if (s == nullptr) {
        return fallback;
    }
    if (std::strcmp(s, "scalar") == 0) {
        return isa_level::scalar;
    }
    if (std::strcmp(s, "avx2") == 0) {
        return isa_level::avx2;
    }
    if (std::strcmp(s, "avx512") == 0) {
        return isa_level::avx512;
    }
    return fallback;
}

isa_level probe_isa() noexcept {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid(1, &a, &b, &c, &d) == 0) {
        return isa_level::scalar;
    }
    const bool osxsave = (c >> 27) & 1;
    const bool fma = (c >> 12) & 1;
    const bool f16c = (c >> 29) & 1;
    if (!osxsave) {
        return isa_level::scalar;
    }
    const std::uint64_t xcr0 = read_xcr0();
    const bool ymm_state = (xcr0 & 0x6) == 0x6;
    const bool zmm_state = (xcr0 & 0xe6) == 0xe6;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) {
        return isa_level::scalar;
    }
    const bool avx2 = (b >> 5) & 1;
    // AVX-512 F, DQ, BW, VL and VNNI, plus BMI2 (the IQ1 kernels' pdep; every such CPU has it).
    const bool avx512 =
        ((b >> 16) & 1) && ((b >> 17) & 1) && ((b >> 30) & 1) && ((b >> 31) & 1) && ((c >> 11) & 1) && ((b >> 8) & 1);
    if (!(ymm_state && avx2 && fma && f16c)) {
        return isa_level::scalar;
    }
    return (zmm_state && avx512) ? isa_level::avx512 : isa_level::avx2;
}

} // namespace

isa_level detect_isa() noexcept {
    static const isa_level level = probe_isa(); // cpuid traps to the hypervisor in VMs: probe once
    return level;
}

isa_level active_isa() noexcept {
    static const isa_level level = [] {
        const isa_level best = detect_isa();
        const isa_level wanted = parse_level(std::getenv("SLUICE_ISA"), best);
        return wanted < best ? wanted : best;
    }();
    return level;
}

std::vector<isa_level> supported_isas() {
    std::vector<isa_level> out;
    for (int i = 0; i <= static_cast<int>(detect_isa()); ++i) {
        out.push_back(static_cast<isa_level>(i));
    }
    return out;
}

std::string_view isa_name(isa_level isa) noexcept {
    switch (isa) {
    case isa_level::scalar: return "scalar";
    case isa_level::avx2: return "avx2";
    case isa_level::avx512: return "avx512";
    }
    return "unknown";
}

} // namespace sluice::kernels
