// A tiny random-weight MoE model written once per test process with `sluice mkmodel`, for CLI tests.
#pragma once

#include "../cli/process.hpp"
#include "../cli/scratch.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace sluice::test {

/// Path of the `sluice` executable under test.
inline const std::string& sluice_exe() {
    static const std::string exe = SLUICE_EXE;
    return exe;
}

/// A tiny-qwen3moe model with q8_0 weights and the synthetic ChatML tokenizer, made once per process.
inline std::filesystem::path tiny_moe_model() {
    static const std::filesystem::path path = [] {
        auto p = scratch_dir() / "tiny-qwen3moe.gguf";
        const auto r = run_process(sluice_exe() + " mkmodel -q -o " + shell_quote(p.string()) +
                                   " --preset tiny-qwen3moe --type q8_0 --seed 1");
        EXPECT_EQ(r.status, 0) << r.err;
        return p;
    }();
    return path;
}

} // namespace sluice::test
