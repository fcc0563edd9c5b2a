// `sluice convert HF_DIR -o OUT.gguf [--type f32|f16|bf16|q8_0|q2_k..q6_k] [--name NAME]`: converts a Hugging Face
// safetensors checkpoint into a GGUF file llama.cpp can read too; progress per tensor, a summary at the end.
#include "cli/convert_command.hpp"

#include "kernels/quant_type.hpp"
#include "runtime/convert/converter.hpp"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <unistd.h>

namespace sluice::cli {
namespace {

struct convert_cli_options {
    std::string dir;
    std::string out;
    std::string type = "f16";
    std::string name;
};

/// Without a terminal, one progress line per this many tensors (and the last).
constexpr std::size_t log_every = 50;

int run_convert(const convert_cli_options& o) {
    const auto type = convert::parse_output_type(o.type);
    if (!type) {
        std::cerr << "sluice convert: --type " << o.type
                  << ": expected f32, f16, bf16, q8_0, q2_k, q3_k, q4_k, q5_k or q6_k (the IQ "
                     "types need an importance matrix: quantize with llama.cpp's llama-quantize --imatrix)\n";
        return 1;
    }
    const bool tty = ::isatty(STDERR_FILENO) != 0;
    convert::convert_options options;
    options.type = *type;
    options.name = o.name;
    options.on_tensor = [tty](const convert::convert_progress& p) {
        if (tty) {
            std::fprintf(stderr, "\r[%zu/%zu] %-40s %-5s %10llu bytes\x1b[K", p.index + 1, p.count,
                         std::string(p.name).c_str(), std::string(kernels::traits_of(p.type).name).c_str(),
                         static_cast<unsigned long long>(p.bytes));
            if (p.index + 1 == p.count) {
                std::fputc('\n', stderr);
            }
        } else if ((p.index + 1) % log_every == 0 || p.index + 1 == p.count) {
            std::fprintf(stderr, "[%zu/%zu] %s\n", p.index + 1, p.count, std::string(p.name).c_str());
        }
    };
    const auto start = std::chrono::steady_clock::now();
    auto summary = convert::convert_checkpoint(o.dir, o.out, options);
    if (!summary) {
        std::cerr << "sluice convert: " << summary.error().message << "\n";
        return 1;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (summary->fallbacks > 0) {
        std::cerr << "sluice convert: " << summary->fallbacks << " tensor(s) with rows not a multiple of the " << o.type
                  << " block size were written as q8_0 or f16\n";
    }
    std::printf("wrote %s: %s, %zu tensors, %llu bytes of tensor data in %.1f s\n", o.out.c_str(),
                summary->arch.c_str(), summary->tensors, static_cast<unsigned long long>(summary->bytes), seconds);
    return 0;
}

} // namespace

void add_convert_command(CLI::App& app) {
    auto opts = std::make_shared<convert_cli_options>();
    auto* cmd = app.add_subcommand("convert", "Convert a Hugging Face safetensors checkpoint folder to GGUF");
    // The folder as -m (like every subcommand) or as the positional argument.
    auto* dir = cmd->add_option("dir", opts->dir, "Checkpoint folder (config.json, tokenizer.json, *.safetensors)");
    cmd->add_option("-m,--model", opts->dir, "The checkpoint folder, as -m")->excludes(dir);
    cmd->add_option("-o,--output", opts->out, "Output GGUF file")->required();
    cmd->add_option("--type", opts->type,
                    "Weight type: f32, f16, bf16, q8_0, q2_k, q3_k, q4_k, q5_k, q6_k (norms and routers stay f32; "
                    "the IQ types need an importance matrix and cannot be written here)")
        ->capture_default_str();
    cmd->add_option("--name", opts->name, "general.name (default: the folder's name)");
    cmd->callback([opts] {
        if (opts->dir.empty())
            throw CLI::RequiredError("convert: a checkpoint folder (-m DIR or DIR)");
        if (const int rc = run_convert(*opts); rc != 0) {
            throw CLI::RuntimeError(rc);
        }
    });
}

} // namespace sluice::cli
