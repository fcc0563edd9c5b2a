// `sluice inspect FILE [--json]`: what a GGUF model is and how its bytes split into dense and expert parts;
// `sluice inspect FILE --plan [--memory-budget SIZE] [--probe] ...`: how it would be held in memory (JSON);
// `--routing REC` adds what the planned cache does with a recorded workload; `--header-only` reads the header
// alone, so a partial download can be inspected and planned.
#include "cli/inspect_command.hpp"

#include "cli/common_flags.hpp"
#include "cli/json_text.hpp"

#include "io/reader.hpp"
#include "runtime/engine/disk_probe.hpp"
#include "runtime/engine/memory_plan.hpp"
#include "runtime/engine/model.hpp"
#include "runtime/engine/routing_plan.hpp"
#include "runtime/experts/expert_layout.hpp"
#include "runtime/gguf/model_files.hpp"
#include "runtime/gguf/summary.hpp"
#include "runtime/models/architecture.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <thread>

namespace sluice::cli {
namespace {

namespace json = boost::json;

/// Arrays longer than this are summarised (type and count) instead of printed whole in JSON.
constexpr std::size_t max_json_array_items = 64;
/// How long `--probe --routing` replays the cache's reads (probe_read_pattern) for the estimate.
constexpr std::chrono::milliseconds pattern_probe_duration{2000};

/// Per-layer facts about routed experts, derived from the `blk.N.*_exps` tensors.
struct expert_layer {
    int layer = 0;
    std::uint64_t experts = 0;
    std::uint64_t bytes_per_expert = 0; ///< gate + up + down slabs of one expert
    std::uint64_t bytes = 0;
};

std::vector<expert_layer> expert_layers(const gguf::model_files& model) {
    std::map<int, expert_layer> layers;
    for (const auto& t : model.tensors()) {
        if (!t.is_expert() || t.n_dims != 3) {
            continue;
        }
        auto& l = layers[gguf::block_index(t.name)];
        l.layer = gguf::block_index(t.name);
        l.experts = std::max(l.experts, t.expert_count());
        l.bytes_per_expert += t.expert_stride();
        l.bytes += t.bytes;
    }
    std::vector<expert_layer> out;
    for (const auto& [_, l] : layers) {
        out.push_back(l);
    }
    return out;
}

json::value array_to_json(const gguf::metadata_array& a);

json::value value_to_json(const gguf::metadata_value& v) {
    if (const auto* s = v.as_string()) {
        return json::string(*s);
    }
    if (const auto* a = v.as_array()) {
        if (a->size() > max_json_array_items) {
            return json::object{{"type", gguf::type_name(v)}, {"count", a->size()}};
        }
        return array_to_json(*a);
    }
    if (v.type() == gguf::value_type::boolean) {
        return std::get<bool>(v.data);
    }
    if (auto u = v.as_unsigned()) {
        return *u;
    }
    if (auto i = v.as_signed()) {
        return *i;
    }
    return v.as_double().value_or(0.0);
}

json::value array_to_json(const gguf::metadata_array& a) {
    json::array out;
    std::visit(
        [&](const auto& items) {
            for (const auto& item : items) {
                using item_t = std::decay_t<decltype(item)>;
                if constexpr (std::is_same_v<item_t, gguf::metadata_array>) {
                    out.push_back(array_to_json(item));
                } else if constexpr (std::is_same_v<item_t, std::string>) {
                    out.push_back(json::string(item));
                } else {
                    out.push_back(json::value(static_cast<item_t>(item)));
                }
            }
        },
        a.items);
    return out;
}

bool is_tokenizer_key(std::string_view key) {
    return key.starts_with("tokenizer.");
}

json::object tokenizer_json(const gguf::tokenizer_summary& t) {
    json::object o{{"model", t.model},
                   {"pre", t.pre},
                   {"tokens", t.n_tokens},
                   {"merges", t.n_merges},
                   {"has_scores", t.has_scores},
                   {"has_token_types", t.has_token_types},
                   {"has_chat_template", t.has_chat_template}};
    o["bos_id"] = t.bos_id ? json::value(*t.bos_id) : json::value(nullptr);
    o["eos_id"] = t.eos_id ? json::value(*t.eos_id) : json::value(nullptr);
    return o;
}

json::object totals_json(const gguf::tensor_totals& totals, const std::vector<expert_layer>& layers) {
    json::array per_layer;
    for (const auto& l : layers) {
        per_layer.push_back(json::object{
            {"layer", l.layer}, {"experts", l.experts}, {"bytes_per_expert", l.bytes_per_expert}, {"bytes", l.bytes}});
    }
    return json::object{{"tensors", totals.dense_tensors + totals.expert_tensors},
                        {"bytes", totals.dense_bytes + totals.expert_bytes},
                        {"dense_tensors", totals.dense_tensors},
                        {"dense_bytes", totals.dense_bytes},
                        {"expert_tensors", totals.expert_tensors},
                        {"expert_bytes", totals.expert_bytes},
                        {"expert_layers", layers.size()},
                        {"experts_per_layer", totals.max_experts},
                        {"bytes_per_expert", totals.bytes_per_expert},
                        {"per_layer", std::move(per_layer)}};
}

json::object report_json(const gguf::model_files& model, const gguf::tokenizer_summary& tok,
                         const gguf::tensor_totals& totals) {
    json::object o;
    json::array parts;
    for (const auto& p : model.parts()) {
        parts.push_back(json::object{{"path", p.path.string()},
                                     {"version", p.header.version},
                                     {"alignment", p.header.alignment},
                                     {"data_offset", p.header.data_offset},
                                     {"file_size", p.header.file_size}});
    }
    o["files"] = std::move(parts);
    auto arch = model.architecture();
    o["architecture"] = arch ? json::value(json::string(*arch)) : json::value(nullptr);
    json::object hparams;
    json::object other;
    const std::string prefix = arch ? std::string(*arch) + "." : std::string("\x01");
    for (const auto& e : model.kv().entries()) {
        if (e.key.starts_with(prefix)) {
            hparams[e.key.substr(prefix.size())] = value_to_json(e.value);
        } else if (!is_tokenizer_key(e.key)) {
            other[e.key] = value_to_json(e.value);
        }
    }
    o["hyperparameters"] = std::move(hparams);
    o["metadata"] = std::move(other);
    o["tokenizer"] = tokenizer_json(tok);
    json::array tensors;
    for (const auto& t : model.tensors()) {
        json::array shape(t.shape().begin(), t.shape().end());
        tensors.push_back(json::object{{"name", t.name},
                                       {"type", kernels::traits_of(t.type).name},
                                       {"shape", std::move(shape)},
                                       {"bytes", t.bytes},
                                       {"offset", t.offset},
                                       {"split", t.split},
                                       {"expert", t.is_expert()}});
    }
    o["tensors"] = std::move(tensors);
    o["totals"] = totals_json(totals, expert_layers(model));
    return o;
}

std::string human_bytes(std::uint64_t bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = static_cast<double>(bytes);
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        ++u;
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", v, units[u]);
    return buf;
}

void print_text_header(std::ostream& out, const gguf::model_files& model) {
    for (const auto& p : model.parts()) {
        out << "file          " << p.path.string() << " (GGUF v" << p.header.version << ", "
            << human_bytes(p.header.file_size) << ", " << p.header.tensors.size() << " tensors, alignment "
            << p.header.alignment << ")\n";
    }
    auto arch = model.architecture();
    out << "architecture  " << (arch ? std::string(*arch) : std::string("(none)")) << "\n\n";
    const std::string prefix = arch ? std::string(*arch) + "." : std::string("\x01");
    out << "hyperparameters\n";
    for (const auto& e : model.kv().entries()) {
        if (e.key.starts_with(prefix)) {
            out << "  " << e.key.substr(prefix.size()) << " = " << gguf::to_display_string(e.value) << "\n";
        }
    }
    out << "\nmetadata\n";
    for (const auto& e : model.kv().entries()) {
        if (!e.key.starts_with(prefix) && !is_tokenizer_key(e.key)) {
            out << "  " << e.key << " = " << gguf::to_display_string(e.value) << "\n";
        }
    }
}

void print_text_tokenizer(std::ostream& out, const gguf::tokenizer_summary& t) {
    out << "\ntokenizer\n";
    if (t.model.empty() && t.n_tokens == 0) {
        out << "  (none)\n";
        return;
    }
    out << "  model " << t.model << ", pre " << (t.pre.empty() ? "(none)" : t.pre) << ", " << t.n_tokens << " tokens, "
        << t.n_merges << " merges" << (t.has_scores ? ", scores" : "") << (t.has_token_types ? ", token types" : "")
        << "\n";
    out << "  bos " << (t.bos_id ? std::to_string(*t.bos_id) : "-") << ", eos "
        << (t.eos_id ? std::to_string(*t.eos_id) : "-") << ", chat template " << (t.has_chat_template ? "yes" : "no")
        << "\n";
}

void print_text_tensors(std::ostream& out, const gguf::model_files& model) {
    std::size_t width = 4;
    for (const auto& t : model.tensors()) {
        width = std::max(width, t.name.size());
    }
    char line[512];
    std::snprintf(line, sizeof line, "\n%-*s  %-6s  %-22s  %12s  %14s\n", static_cast<int>(width), "name", "type",
                  "shape", "bytes", "offset");
    out << line;
    for (const auto& t : model.tensors()) {
        std::snprintf(line, sizeof line, "%-*s  %-6s  %-22s  %12llu  %14llu\n", static_cast<int>(width), t.name.c_str(),
                      std::string(kernels::traits_of(t.type).name).c_str(), gguf::shape_string(t).c_str(),
                      static_cast<unsigned long long>(t.bytes), static_cast<unsigned long long>(t.offset));
        out << line;
    }
}

void print_text_totals(std::ostream& out, const gguf::tensor_totals& totals, const std::vector<expert_layer>& layers) {
    const auto all = totals.dense_bytes + totals.expert_bytes;
    out << "\ntotals\n";
    out << "  all tensors   " << human_bytes(all) << " in " << totals.dense_tensors + totals.expert_tensors
        << " tensors\n";
    out << "  dense         " << human_bytes(totals.dense_bytes) << " in " << totals.dense_tensors << " tensors\n";
    out << "  experts       " << human_bytes(totals.expert_bytes) << " in " << totals.expert_tensors << " tensors";
    if (all > 0) {
        char pct[32];
        std::snprintf(pct, sizeof pct, " (%.1f%%)", 100.0 * static_cast<double>(totals.expert_bytes) / all);
        out << pct;
    }
    out << "\n";
    if (!layers.empty()) {
        out << "  expert layers " << layers.size() << ", " << totals.max_experts << " experts per layer, "
            << human_bytes(totals.bytes_per_expert) << " per expert (gate+up+down)\n";
    }
}

/// Measures the disk's random-read bandwidth on `files` with a reader of its own io_context.
result<double> probe_bandwidth(const gguf::model_files& files, const experts::expert_layout& layout) {
    boost::asio::io_context ioc;
    auto reader = io::make_reader(ioc.get_executor());
    if (!reader) {
        return reader.error();
    }
    std::optional<result<double>> out;
    boost::asio::co_spawn(ioc, probe_disk_bandwidth(**reader, files, layout),
                          [&](std::exception_ptr e, result<double> r) {
                              if (e) {
                                  std::rethrow_exception(e);
                              }
                              out = std::move(r);
                          });
    ioc.run();
    return std::move(*out);
}

/// Measures the disk at the cache's request pattern: `pattern`'s bursts replayed (probe_read_pattern).
result<pattern_probe_result> probe_pattern(const gguf::model_files& files, const experts::expert_layout& layout,
                                           const read_pattern& pattern) {
    boost::asio::io_context ioc;
    auto reader = io::make_reader(ioc.get_executor());
    if (!reader) {
        return reader.error();
    }
    std::optional<result<pattern_probe_result>> out;
    boost::asio::co_spawn(ioc, probe_read_pattern(**reader, files, layout, pattern, pattern_probe_duration),
                          [&](std::exception_ptr e, result<pattern_probe_result> r) {
                              if (e) {
                                  std::rethrow_exception(e);
                              }
                              out = std::move(r);
                          });
    ioc.run();
    return std::move(*out);
}

/// The plan's inputs as `run` and `serve` would pick them (the context defaults as model::load does).
plan_inputs plan_inputs_for(const inspect_options& opts, const models::model_hparams& hp, const memory_settings& mem) {
    plan_inputs in;
    in.budget = mem.budget;
    in.n_ctx = opts.ctx != 0 ? opts.ctx : std::min<std::uint32_t>(hp.n_ctx_train, 4096);
    in.n_seq = opts.parallel;
    in.n_threads = opts.threads != 0 ? opts.threads : std::max(1u, std::thread::hardware_concurrency());
    in.disk_bandwidth = mem.disk_bandwidth;
    return in;
}

/// `inspect --plan --routing REC`: the recording replayed through the planned cache, as JSON.
result<json::object> routing_json(const inspect_options& opts, const gguf::model_files& files, const memory_plan& plan,
                                  const experts::expert_layout& layout, const models::model_hparams& hp) {
    auto policy = experts::parse_policy_spec(opts.policy);
    if (!policy) {
        return policy.error();
    }
    auto trace = experts::routing_trace::load(opts.routing);
    if (!trace) {
        return trace.error();
    }
    const experts::routing_geometry model{hp.n_layer, hp.n_expert, hp.n_expert_used};
    // The batch engine reads ahead at most eight tokens' worth of a step's predicted experts.
    const auto limit = opts.prediction_limit >= 0 ? static_cast<std::uint32_t>(opts.prediction_limit)
                                                  : 8 * std::max(1u, hp.n_expert_used);
    read_pattern pattern;
    auto e = estimate_routing(plan, layout, *trace, model, *policy,
                              {!opts.memory.no_prefetch, opts.prefetch_width, opts.prefetch_depth}, opts.routing,
                              {opts.streams, limit}, opts.probe ? &pattern : nullptr);
    if (!e) {
        return e.error();
    }
    auto o = to_json(*e);
    double bandwidth = plan.disk_bandwidth;
    if (opts.probe && !pattern.burst_ends.empty()) {
        // The disk at the request pattern this workload gives the cache: the replay's own reads, burst by burst.
        auto probe = probe_pattern(files, layout, pattern);
        if (!probe) {
            return probe.error();
        }
        bandwidth = probe->bytes_per_s;
        o["pattern_probe"] = json::object{{"bytes_per_s", probe->bytes_per_s},
                                          {"bursts", probe->bursts},
                                          {"mean_burst_reads", probe->mean_burst_reads},
                                          {"mean_burst_ms", probe->mean_burst_ms},
                                          {"bytes", probe->bytes},
                                          {"huge_page_share", probe->huge_page_share}};
    }
    if (opts.compute_tokens_per_s > 0) {
        o["tokens_per_s_estimate"] =
            expected_tokens_per_s(opts.compute_tokens_per_s, e->read_bytes_per_token, bandwidth);
    }
    o["recording"] = opts.routing;
    o["recorded_model"] = trace->header().model_name;
    return o;
}

/// `inspect --plan --draft FILE`: the draft model's plan (resident) with the target's context and sequences, as
/// model::load plans it before the target.
result<memory_plan> plan_draft(const std::string& path, plan_inputs in) {
    auto files = gguf::model_files::open(path, gguf::header_mode::header_only);
    if (!files) {
        return files.error().with_context("--draft");
    }
    const models::architecture* arch = nullptr;
    auto hp = models::load_hparams(files->kv(), arch);
    if (!hp) {
        return hp.error().with_context("--draft " + path);
    }
    auto layout = experts::make_expert_layout(*files, *hp);
    if (!layout) {
        return layout.error().with_context("--draft " + path);
    }
    in.cache_layout = models::cache_layout_of(*arch, *hp);
    auto plan = plan_memory(*files, *hp, *layout, in);
    if (!plan) {
        return plan.error().with_context("--draft " + path);
    }
    if (plan->streams()) {
        return make_error(std::errc::not_enough_memory, "--draft " + path + ": does not fit resident in the budget");
    }
    return plan;
}

/// `inspect --plan`: prints the memory plan of `files` as one JSON object; returns the exit status.
int run_plan(const inspect_options& opts, const gguf::model_files& files) {
    auto mem = check_memory_flags(opts.memory);
    if (!mem) {
        std::cerr << "sluice inspect: " << mem.error().message << "\n";
        return 1;
    }
    if (opts.parallel == 0) {
        std::cerr << "sluice inspect: --parallel must be at least 1\n";
        return 1;
    }
    const models::architecture* arch = nullptr;
    auto hp = models::load_hparams(files.kv(), arch);
    if (!hp) {
        std::cerr << "sluice inspect: " << opts.path << ": " << hp.error().message << "\n";
        return 1;
    }
    if (hp->n_vocab == 0) {
        if (const auto* emb = files.find_tensor(models::tensor_name(models::tensor_kind::token_embd))) {
            hp->n_vocab = static_cast<std::uint32_t>(emb->ne[1]);
        }
    }
    auto layout = experts::make_expert_layout(files, *hp);
    if (!layout) {
        std::cerr << "sluice inspect: " << opts.path << ": " << layout.error().message << "\n";
        return 1;
    }
    auto in = plan_inputs_for(opts, *hp, *mem);
    in.cache_layout = models::cache_layout_of(*arch, *hp); // recurrent states and windowed rings count per sequence
    in.state_checkpoints = model_options{}.state_checkpoints;
    std::string source = in.disk_bandwidth > 0 ? "flag" : "none";
    if (opts.probe && in.disk_bandwidth == 0) {
        auto bw = probe_bandwidth(files, *layout);
        if (!bw) {
            std::cerr << "sluice inspect: " << opts.path << ": " << bw.error().message << "\n";
            return 1;
        }
        in.disk_bandwidth = *bw;
        source = "probe";
    }
    std::uint64_t mtp_bytes = 0;
    if (opts.mtp) {
        if (hp->hybrid.nextn_layers == 0) {
            std::cerr << "sluice inspect: " << opts.path << ": --mtp: the file has no multi-token prediction (MTP / "
                      << "NextN) layers\n";
            return 1;
        }
        if (in.budget == 0) {
            in.budget = default_memory_budget();
        }
        mtp_bytes = plan_mtp_bytes(files, *hp, in);
        if (mtp_bytes >= in.budget) {
            std::cerr << "sluice inspect: " << opts.path << ": the budget cannot hold the MTP block's share ("
                      << mtp_bytes << " bytes)\n";
            return 1;
        }
        in.budget -= mtp_bytes;
    }
    std::optional<memory_plan> draft;
    if (!opts.draft.empty()) {
        if (in.budget == 0) {
            in.budget = default_memory_budget();
        }
        auto d = plan_draft(opts.draft, in);
        if (!d) {
            std::cerr << "sluice inspect: " << d.error().message << "\n";
            return 1;
        }
        draft = std::move(*d);
        in.budget -= std::min(in.budget, draft->planned_bytes());
    }
    auto plan = plan_memory(files, *hp, *layout, in);
    if (!plan) {
        std::cerr << "sluice inspect: " << opts.path << ": " << plan.error().message
                  << (draft ? " (after the draft's " + std::to_string(draft->planned_bytes()) + " bytes)" : "") << "\n";
        return 1;
    }
    if (draft) {
        plan->budget += draft->planned_bytes();
        plan->draft_bytes = draft->planned_bytes();
    }
    plan->budget += mtp_bytes;
    plan->mtp_bytes = mtp_bytes;
    auto o = to_json(*plan);
    if (draft) {
        o["draft"] = to_json(*draft);
    }
    if (!opts.routing.empty()) {
        auto routing = routing_json(opts, files, *plan, *layout, *hp);
        if (!routing) {
            std::cerr << "sluice inspect: " << opts.path << ": " << routing.error().message << "\n";
            return 1;
        }
        o["routing"] = std::move(*routing);
    }
    o["n_ctx"] = in.n_ctx;
    o["n_seq"] = in.n_seq;
    o["disk_bandwidth_source"] = source;
    if (opts.compute_tokens_per_s > 0) {
        o["compute_tokens_per_s"] = opts.compute_tokens_per_s;
        o["tokens_per_s_estimate"] =
            expected_tokens_per_s(opts.compute_tokens_per_s, plan->read_bytes_per_token, plan->disk_bandwidth);
    }
    if (plan->streams() && source == "none") {
        o["note"] = "no tokens/s bound: give --disk-bandwidth GBPS or --probe to measure the disk";
    }
    std::cout << json_text(o) << "\n";
    return 0;
}

} // namespace

/// Says why `opts.path` did not open. Read again header-only: a file that holds its whole header but not the data
/// its tensor table describes (a partial download) gets a hint at --header-only; one that ends inside its header
/// (or whose counts run past its end) gets where, and what is missing.
void report_open_error(const inspect_options& opts, const error& e) {
    std::cerr << "sluice inspect: " << e.message << "\n";
    if (opts.header_only) {
        return;
    }
    auto header = gguf::model_files::open(opts.path, gguf::header_mode::header_only);
    if (header) {
        std::cerr << "sluice inspect: the header is whole but the file is shorter than its tensor table says (a "
                     "partial download?): --header-only reads the header alone, and --header-only --plan plans the "
                     "model from it\n";
    } else if (gguf::is_cut_header(header.error())) {
        std::cerr << "sluice inspect: " << header.error().message << "\n";
    }
}

int run_inspect(const inspect_options& opts) {
    if (opts.header_only && opts.probe) {
        std::cerr << "sluice inspect: --probe measures the disk by reading the model's expert data, which "
                     "--header-only never reads (the file may be a partial download); give the disk's speed with "
                     "--disk-bandwidth GBPS instead\n";
        return 1;
    }
    const auto mode = opts.header_only ? gguf::header_mode::header_only : gguf::header_mode::whole_file;
    auto model = gguf::model_files::open(opts.path, mode);
    if (!model) {
        report_open_error(opts, model.error());
        return 1;
    }
    if (opts.plan) {
        return run_plan(opts, *model);
    }
    auto tok = gguf::summarize_tokenizer(model->kv());
    if (!tok) {
        std::cerr << "sluice inspect: " << opts.path << ": " << tok.error().message << "\n";
        return 1;
    }
    const auto totals = gguf::summarize_tensors(*model);
    if (opts.json) {
        std::cout << json_text(report_json(*model, *tok, totals)) << "\n";
        return 0;
    }
    if (opts.header_only) {
        std::cout << "(--header-only: the file size is the bytes present; no tensor data was read)\n";
    }
    print_text_header(std::cout, *model);
    print_text_tokenizer(std::cout, *tok);
    print_text_tensors(std::cout, *model);
    print_text_totals(std::cout, totals, expert_layers(*model));
    return 0;
}

void add_inspect_command(CLI::App& app) {
    auto opts = std::make_shared<inspect_options>();
    auto* cmd =
        app.add_subcommand("inspect", "Describe a GGUF model: metadata, tokenizer, tensors, dense/expert bytes");
    // The file as -m (like every subcommand) or as the positional argument.
    auto* file = cmd->add_option("file", opts->path, "GGUF file (any part of a split model); or -m FILE");
    add_model_option(*cmd, opts->path, "GGUF file (any part of a split model)")->excludes(file);
    cmd->add_flag("--json", opts->json, "Print the report as JSON");
    auto* plan = cmd->add_flag("--plan", opts->plan,
                               "Print the memory plan as JSON: what stays resident, the expert cache, disk reads per "
                               "token and the speed bound");
    add_memory_flags(*cmd, opts->memory, false);
    add_ctx_option(*cmd, opts->ctx, "--plan: context per sequence (0: the model's default)")->needs(plan);
    cmd->add_option("--parallel", opts->parallel,
                    "--plan: sequences generating at once (KV caches): 1 as `run` decodes; `serve --parallel` "
                    "(4 by default) keeps one per slot")
        ->capture_default_str()
        ->needs(plan);
    add_threads_option(*cmd, opts->threads, "--plan: compute threads (0: one per hardware thread)")->needs(plan);
    cmd->add_flag("--probe", opts->probe, "--plan: measure the disk's random-read bandwidth (about 0.3 s)")
        ->needs(plan);
    cmd->add_flag("--header-only", opts->header_only,
                  "Read only the GGUF header (key-values and tensor table), never the tensor data: works on the "
                  "first megabytes of a file, such as a partial download");
    auto* routing = cmd->add_option("--routing", opts->routing,
                                    "--plan: replay this routing recording (sluice run --record-routing) through the "
                                    "planned expert cache: hit rate, bytes per token and speed bound under it")
                        ->needs(plan);
    cmd->add_option("--draft", opts->draft,
                    "--plan: a draft model for speculative decoding, planned resident first (its weights, KV caches "
                    "and buffers); the model gets the rest of the budget")
        ->needs(plan);
    cmd->add_flag("--mtp", opts->mtp,
                  "--plan: drafting with the file's multi-token prediction block (run/serve --mtp): its experts, "
                  "per-sequence cache, hidden states and buffers planned first, shown as mtp_bytes")
        ->needs(plan);
    cmd->add_option("--policy", opts->policy,
                    "--routing: the cache's replacement policy (" + std::string(experts::cache_policy_names) + ")")
        ->capture_default_str()
        ->check(
            [](const std::string& text) {
                auto spec = experts::parse_policy_spec(text);
                return spec ? std::string() : spec.error().message;
            },
            "POLICY")
        ->needs(routing);
    cmd->add_option("--prefetch-width", opts->prefetch_width,
                    "--routing: read ahead only the first N experts of each token's recorded next-layer prediction "
                    "(in the router's order; 0: all top-k)")
        ->needs(routing);
    cmd->add_option("--prefetch-depth", opts->prefetch_depth,
                    "--routing: 1 reads ahead the next layer's recorded prediction, 2 also the prediction two layers "
                    "ahead (version-2 recordings), at most top-k experts per step, as --prefetch-depth 2 streams")
        ->check(CLI::Range(1, 2))
        ->needs(routing);
    cmd->add_option("--streams", opts->streams,
                    "--routing: replay this many sequences at once as the batch engine runs them (serve --parallel): "
                    "each step one token of each, started at evenly spaced records; each layer's distinct experts "
                    "fetched once per step")
        ->check(CLI::Range(1u, 4096u))
        ->needs(routing);
    cmd->add_option("--prediction-limit", opts->prediction_limit,
                    "--routing with --streams: the most predicted experts a step reads ahead per layer, the most "
                    "voted first (default: 8 x top-k, as the batch engine; 0: no limit)")
        ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 20))
        ->needs(routing);
    cmd->add_option("--compute-tokens-per-s", opts->compute_tokens_per_s,
                    "--plan: the model's decode tokens/s with its experts in memory (sluice bench with a budget that "
                    "holds it, or a file of the same geometry and types); adds tokens_per_s_estimate = 1 / (1 / "
                    "compute + disk seconds per token)")
        ->check(
            [](const std::string& text) {
                char* end = nullptr;
                const double v = std::strtod(text.c_str(), &end);
                return end != text.c_str() && *end == '\0' && std::isfinite(v) && v > 0
                           ? std::string()
                           : "must be a positive number of tokens/s, got " + text;
            },
            "TOKENS_PER_S")
        ->needs(plan);
    cmd->add_flag("--no-prefetch", opts->memory.no_prefetch,
                  "--routing: read only the chosen experts, not the recording's next-layer predictions ahead")
        ->needs(routing);
    cmd->callback([opts] {
        if (opts->path.empty())
            throw CLI::RequiredError("inspect: a model file (-m FILE or FILE)");
        if (const int rc = run_inspect(*opts); rc != 0) {
            throw CLI::RuntimeError(rc);
        }
    });
}

} // namespace sluice::cli
