// `sluice mkmodel -o OUT.gguf --preset NAME [...]`: a random-weight model of a preset geometry, with overrides,
// any weight type and a synthetic, copied or converted tokenizer. `--list-presets` prints the presets.
#include "cli/mkmodel_command.hpp"

#include "kernels/quant.hpp"
#include "runtime/mkmodel/presets.hpp"
#include "runtime/mkmodel/random_model.hpp"
#include "runtime/mkmodel/tokenizer_keys.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <string>

namespace sluice::cli {
namespace {

using mkmodel::model_preset;

error usage(std::string message) {
    return make_error(std::errc::invalid_argument, std::move(message));
}

/// "17.21 GiB", "3.4 MiB".
std::string gib(std::uint64_t bytes) {
    char buf[32];
    const double v = static_cast<double>(bytes);
    if (bytes >= (std::uint64_t{1} << 30)) {
        std::snprintf(buf, sizeof buf, "%.2f GiB", v / (1024.0 * 1024.0 * 1024.0));
    } else {
        std::snprintf(buf, sizeof buf, "%.1f MiB", v / (1024.0 * 1024.0));
    }
    return buf;
}

void print_presets(std::ostream& out) {
    char line[256];
    std::snprintf(line, sizeof line, "%-16s %-9s %6s %5s %-10s %-14s %7s %6s %-5s %10s\n", "preset", "arch", "layers",
                  "embd", "heads", "experts", "vocab", "ctx", "type", "weights");
    out << line;
    for (const model_preset& p : mkmodel::model_presets()) {
        const auto& hp = p.hparams;
        const std::string heads =
            std::to_string(hp.n_head) + "/" + std::to_string(hp.n_head_kv) + "x" + std::to_string(hp.head_dim);
        const std::string experts = hp.n_expert ? std::to_string(hp.n_expert) + "/" + std::to_string(hp.n_expert_used) +
                                                      " ff " + std::to_string(hp.n_ff_exp)
                                                : "dense ff " + std::to_string(hp.n_ff);
        auto plan = mkmodel::plan_random_model({.hparams = hp, .type = p.default_type, .tied = p.tied});
        std::snprintf(
            line, sizeof line, "%-16s %-9s %6u %5u %-10s %-14s %7u %6u %-5s %10s\n", std::string(p.name).c_str(),
            hp.arch.c_str(), hp.n_layer, hp.n_embd, heads.c_str(), experts.c_str(), hp.n_vocab, hp.n_ctx_train,
            std::string(kernels::traits_of(p.default_type).name).c_str(), plan ? gib(plan->data_bytes()).c_str() : "?");
        out << line;
    }
}

/// The preset's hyperparameters with the command-line overrides applied and checked.
result<models::model_hparams> resolve_hparams(const mkmodel_options& o, const model_preset& p) {
    models::model_hparams hp = p.hparams;
    if ((o.experts || o.experts_used) && !hp.is_moe()) {
        return usage("preset " + o.preset + " is a dense model; --experts and --experts-used need a MoE preset");
    }
    if (o.experts) {
        hp.n_expert = *o.experts;
    }
    if (o.experts_used) {
        hp.n_expert_used = *o.experts_used;
    }
    if (hp.is_moe() && hp.n_expert_used > hp.n_expert) {
        return usage("--experts-used " + std::to_string(hp.n_expert_used) + " exceeds the " +
                     std::to_string(hp.n_expert) + " experts");
    }
    hp.n_layer = o.layers.value_or(hp.n_layer);
    hp.n_embd = o.embd.value_or(hp.n_embd);
    hp.n_vocab = o.vocab.value_or(hp.n_vocab);
    hp.n_ctx_train = o.ctx.value_or(hp.n_ctx_train);
    return hp;
}

/// Tokenizer keys for the model; may raise hp.n_vocab to the tokenizer's size when --vocab was not given.
result<gguf::metadata> resolve_tokenizer(const mkmodel_options& o, models::model_hparams& hp) {
    if (!o.tokenizer_from) {
        return mkmodel::synthetic_tokenizer(hp.n_vocab);
    }
    auto kv = mkmodel::tokenizer_from(*o.tokenizer_from, hp.n_vocab);
    if (!kv && !o.vocab) {
        // A Hugging Face tokenizer larger than the preset's vocabulary: convert it unpadded and grow to fit.
        if (auto unpadded = mkmodel::tokenizer_from(*o.tokenizer_from, 0)) {
            kv = std::move(unpadded);
        }
    }
    if (!kv) {
        return kv.error().with_context("--tokenizer-from");
    }
    auto n = mkmodel::token_count(*kv);
    if (!n) {
        return n.error().with_context("--tokenizer-from " + *o.tokenizer_from);
    }
    if (*n > hp.n_vocab) {
        if (o.vocab) {
            return usage("--vocab " + std::to_string(hp.n_vocab) + " is smaller than the " + std::to_string(*n) +
                         " tokens of " + *o.tokenizer_from);
        }
        hp.n_vocab = *n;
    }
    return kv;
}

/// Checks the options and builds the plan; writes nothing.
result<mkmodel::random_model_plan> make_plan(const mkmodel_options& o) {
    if (o.output.empty()) {
        return usage("-o OUT.gguf is required");
    }
    if (o.preset.empty()) {
        return usage("--preset NAME is required (see --list-presets)");
    }
    const model_preset* p = mkmodel::find_preset(o.preset);
    if (p == nullptr) {
        return usage("unknown preset '" + o.preset + "' (see --list-presets)");
    }
    kernels::quant_type type = p->default_type;
    if (o.type) {
        const auto t = kernels::parse_quant_type(*o.type);
        if (!t || !(kernels::can_quantize(*t) || kernels::can_scale_random_blocks(*t))) {
            return usage("--type " + *o.type +
                         " is not supported (q2_k, q3_k, q4_k, q5_k, q6_k, q8_0, q4_0, mxfp4, f16, bf16, f32, or "
                         "random valid blocks of iq1_s, iq1_m, iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s, tq1_0, tq2_0)");
        }
        type = *t;
    }
    auto hp = resolve_hparams(o, *p);
    if (!hp) {
        return hp.error();
    }
    auto tok = resolve_tokenizer(o, *hp);
    if (!tok) {
        return tok.error();
    }
    if (auto r = mkmodel::check_tokenizer(*tok); !r) {
        return r.error();
    }
    auto plan = mkmodel::plan_random_model({.hparams = *hp,
                                            .type = type,
                                            .tied = o.tied || p->tied,
                                            .name = "sluice mkmodel " + o.preset,
                                            .seed = o.seed});
    if (!plan) {
        return plan.error();
    }
    for (const auto& e : tok->entries()) {
        plan->kv.set(e.key, e.value);
    }
    return plan;
}

/// Prints a line per tenth of the data for big models.
std::function<void(std::uint64_t, std::uint64_t)> progress_printer(bool quiet) {
    if (quiet) {
        return {};
    }
    auto last = std::make_shared<std::uint64_t>(0);
    const auto start = std::chrono::steady_clock::now();
    return [last, start](std::uint64_t done, std::uint64_t total) {
        if (total < (std::uint64_t{1} << 30) || (done * 10 / total) == *last) {
            return;
        }
        *last = done * 10 / total;
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        char rate[32];
        std::snprintf(rate, sizeof rate, "%.2f GB/s", static_cast<double>(done) / 1e9 / std::max(s, 1e-9));
        std::cerr << "  " << gib(done) << " of " << gib(total) << " (" << rate << ")\n";
    };
}

} // namespace

int run_mkmodel(const mkmodel_options& o) {
    if (o.list_presets) {
        print_presets(std::cout);
        return 0;
    }
    auto plan = make_plan(o);
    if (!plan) {
        std::cerr << "sluice mkmodel: " << plan.error().message << "\n";
        return 1;
    }
    const auto start = std::chrono::steady_clock::now();
    auto paths = mkmodel::write_random_model(*plan, o.output,
                                             {.split_bytes = o.split_bytes, .progress = progress_printer(o.quiet)});
    if (!paths) {
        std::cerr << "sluice mkmodel: " << paths.error().message << "\n";
        return 1;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!o.quiet) {
        const std::uint64_t bytes = plan->data_bytes();
        char rate[64];
        std::snprintf(rate, sizeof rate, "%.1f s, %.2f GB/s", seconds, static_cast<double>(bytes) / 1e9 / seconds);
        for (const auto& p : *paths) {
            std::cerr << "wrote " << p.string() << "\n";
        }
        std::cerr << plan->hparams.arch << ", " << plan->tensors.size() << " tensors, " << gib(bytes) << " of "
                  << kernels::traits_of(plan->tensors.front().type).name << " weights in " << rate << "\n";
    }
    return 0;
}

void add_mkmodel_command(CLI::App& app) {
    auto o = std::make_shared<mkmodel_options>();
    auto* cmd = app.add_subcommand("mkmodel", "Write a random-weight GGUF model of a preset geometry");
    cmd->add_option("-o,--output", o->output, "Output GGUF file");
    cmd->add_option("--preset", o->preset, "Model geometry (see --list-presets)");
    cmd->add_option("--type", o->type,
                    "Weight type: q2_k, q3_k, q4_k, q5_k, q6_k, q8_0, q4_0, mxfp4, f16, bf16, f32 (default: the "
                    "preset's). iq1_s, iq1_m, iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s, tq1_0, tq2_0 are written as "
                    "random valid blocks (random grid indices and signs, scaled): quantizing to them needs an "
                    "importance matrix, which Sluice does not make");
    cmd->add_option("--layers", o->layers, "Number of layers");
    cmd->add_option("--experts", o->experts, "Routed experts per layer (MoE presets)");
    cmd->add_option("--experts-used", o->experts_used, "Experts used per token (MoE presets)");
    cmd->add_option("--embd", o->embd, "Embedding width");
    cmd->add_option("--vocab", o->vocab, "Vocabulary size (rows of token_embd)");
    cmd->add_option("--ctx", o->ctx, "Training context length recorded in the metadata");
    cmd->add_option("--seed", o->seed, "Random seed (same seed, same bytes)");
    cmd->add_flag("--tied", o->tied, "Leave out output.weight (the embedding is the output projection)");
    cmd->add_option("--tokenizer-from", o->tokenizer_from,
                    "GGUF file to copy tokenizer.* keys from, or a folder with a Hugging Face tokenizer.json");
    cmd->add_option("--split-bytes", o->split_bytes, "Split into parts of at most this much tensor data (e.g. 4GiB)")
        ->transform(CLI::AsSizeValue(false));
    cmd->add_flag("--list-presets", o->list_presets, "Print the presets and exit");
    cmd->add_flag("-q,--quiet", o->quiet, "Print nothing on success");
    cmd->callback([o] {
        if (const int rc = run_mkmodel(*o); rc != 0) {
            throw CLI::RuntimeError(rc);
        }
    });
}

} // namespace sluice::cli
