// CPU instruction-set levels Sluice has kernels for, detection by cpuid and the SLUICE_ISA override.
#pragma once

#include <string_view>
#include <vector>

namespace sluice::kernels {

/// Kernel levels, ordered: each level's machine can run the levels below it.
enum class isa_level { scalar = 0, avx2 = 1, avx512 = 2 };

/// Highest level this CPU and OS support (AVX2 needs FMA and F16C; AVX-512 needs F, BW, VL, DQ and VNNI).
/// Probed once; thread-safe.
isa_level detect_isa() noexcept;

/// Level the kernels use: SLUICE_ISA=scalar|avx2|avx512 when set (capped at detect_isa()), else detect_isa().
/// Read once on first call; thread-safe.
isa_level active_isa() noexcept;

/// Every level this machine can run, lowest first (for tests that check each one).
std::vector<isa_level> supported_isas();

/// "scalar", "avx2" or "avx512".
std::string_view isa_name(isa_level isa) noexcept;

} // namespace sluice::kernels
