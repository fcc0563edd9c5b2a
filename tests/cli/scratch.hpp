// A scratch folder for CLI tests under the build tree, one per process (ctest runs tests as parallel
// processes), removed when the process exits.
#pragma once

#include <filesystem>
#include <string>
#include <system_error>

#include <unistd.h>

namespace sluice::test {

inline std::filesystem::path scratch_dir() {
    struct process_dir {
        std::filesystem::path path = std::filesystem::path(SLUICE_BINARY_DIR) / "tests" / "cli-scratch" /
                                     std::to_string(::getpid());
        process_dir() { std::filesystem::create_directories(path); }
        ~process_dir() {
            std::error_code ec;
            std::filesystem::remove_all(path, ec);
        }
    };
    static const process_dir dir;
    return dir.path;
}

} // namespace sluice::test
