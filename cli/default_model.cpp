// Finding the bundled model: next to an installed executable, or in the source tree of a build.
#include "cli/default_model.hpp"

#include <iostream>
#include <system_error>

namespace sluice::cli {

namespace {
constexpr const char* bundled_name = "sluice-tiny-moe.gguf";
} // namespace

std::vector<std::filesystem::path> bundled_model_candidates() {
    std::vector<std::filesystem::path> out;
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        out.push_back(exe.parent_path().parent_path() / "share" / "sluice" / "models" / bundled_name);
    }
#ifdef SLUICE_SOURCE_DIR
    out.push_back(std::filesystem::path(SLUICE_SOURCE_DIR) / "models" / bundled_name);
#endif
    return out;
}

std::optional<std::filesystem::path> bundled_model() {
    for (const auto& p : bundled_model_candidates()) {
        std::error_code ec;
        if (std::filesystem::is_regular_file(p, ec)) {
            return p;
        }
    }
    return std::nullopt;
}

std::optional<std::string> model_or_bundled(const std::string& given, const char* command) {
    if (!given.empty()) {
        return given;
    }
    if (const auto bundled = bundled_model()) {
        return bundled->string();
    }
    std::cerr << "sluice " << command << ": no --model given and the bundled model is not at";
    for (const auto& p : bundled_model_candidates()) {
        std::cerr << " " << p.string();
    }
    std::cerr << "\n";
    return std::nullopt;
}

} // namespace sluice::cli
