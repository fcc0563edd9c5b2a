// Streaming benchmark: sampled decode of a MoE model under a memory budget, with what the expert cache did
// during the timed tokens (bytes read, read throughput while reads ran and over the wall clock, hit rate,
// prefetch accuracy), the process's peak RSS and swap, and how much of the model file the page cache gained. One JSON
// object on stdout; bench/streaming/streaming_vs_fio.sh runs it next to fio on the same file. Usage: stream_bench
// MODEL.gguf BUDGET [tokens=32] [warmup=8] [threads=0] [prefetch=1] [policy=lru-2] [--routing FILE]. The context
// is 512 positions, or the smallest power of two above that holds 8 prompt + warm-up + timed tokens. prefetch: 0
// off, 1 the next layer's predicted experts, 2 also the layer after's (model_options::prefetch_depth).
// (policy: lru, lfu, lru-2, layer-quota, pin-hot[:PERCENT]; docs/STREAMING.md, "Replacement").
// --routing replays a routing recording (sluice run --record-routing) instead of the file's own router: the
// compute is the same, the experts read follow the recording (docs/ROUTING.md). --read-order fifo|priority and
// --read-window N choose how the cache orders its reads (docs/STREAMING.md, "Read order"; default priority, 8).
#include "bench/bench_main.hpp"
#include "runtime/engine/batch_engine.hpp"
#include "runtime/engine/memory_plan.hpp"
#include "runtime/engine/session.hpp"
#include "runtime/experts/read_scheduler.hpp"
#include "runtime/experts/replacement_policy.hpp"
#include "runtime/experts/routing_log.hpp"

#include <boost/json.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <string_view>

namespace {

using namespace sluice;
namespace json = boost::json;

using bench::run;

// A "Key:   123 kB" line of a /proc file, in bytes (0 when absent).
std::uint64_t proc_kb(const char* path, const std::string& key) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind(key + ":", 0) == 0) {
            return std::stoull(line.substr(key.size() + 1)) * 1024;
        }
    }
    return 0;
}

// A "name value" line of /proc/vmstat.
std::uint64_t vmstat(const std::string& key) {
    std::ifstream in("/proc/vmstat");
    std::string name;
    std::uint64_t value = 0;
    while (in >> name >> value) {
        if (name == key) {
            return value;
        }
    }
    return 0;
}

// Bytes of `path` in the page cache now (mincore over a mapping that is never touched).
std::uint64_t page_cached_bytes(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return 0;
    }
    struct stat st {};
    std::uint64_t cached = 0;
    if (::fstat(fd, &st) == 0 && st.st_size > 0) {
        const auto size = static_cast<std::size_t>(st.st_size);
        void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
        if (map != MAP_FAILED) {
            const long page = ::sysconf(_SC_PAGESIZE);
            std::vector<unsigned char> in_core((size + static_cast<std::size_t>(page) - 1) /
                                               static_cast<std::size_t>(page));
            if (::mincore(map, size, in_core.data()) == 0) {
                for (const auto c : in_core) {
                    cached += (c & 1) ? static_cast<std::uint64_t>(page) : 0;
                }
            }
            ::munmap(map, size);
        }
    }
    ::close(fd);
    return cached;
}

json::object cache_json(const experts::expert_cache_counters& a, const experts::expert_cache_counters& b, double wall_s,
                        std::uint64_t tokens) {
    const auto bytes = b.bytes_read - a.bytes_read;
    const double busy = b.busy_s - a.busy_s;
    const auto hits = b.hits - a.hits, misses = b.misses - a.misses;
    const auto used = b.prefetch_used - a.prefetch_used, wasted = b.prefetch_wasted - a.prefetch_wasted;
    const auto used2 = b.prefetch2_used - a.prefetch2_used, wasted2 = b.prefetch2_wasted - a.prefetch2_wasted;
    const auto share = [](std::uint64_t u, std::uint64_t w) {
        return u + w ? static_cast<double>(u) / static_cast<double>(u + w) : 0.0;
    };
    const auto reads = b.reads - a.reads;
    return json::object{
        {"bytes_read", bytes},
        {"reads", reads},
        {"read_failures", b.read_failures - a.read_failures},
        {"mean_read_bytes", reads ? static_cast<double>(bytes) / static_cast<double>(reads) : 0.0},
        {"mean_read_latency_ms", reads ? (b.latency_sum_s - a.latency_sum_s) * 1e3 / static_cast<double>(reads) : 0.0},
        {"busy_s", busy},
        {"read_gbps_busy", busy > 0 ? static_cast<double>(bytes) / busy / 1e9 : 0.0},
        {"read_gbps_wall", wall_s > 0 ? static_cast<double>(bytes) / wall_s / 1e9 : 0.0},
        {"bytes_per_token", tokens ? static_cast<double>(bytes) / static_cast<double>(tokens) : 0.0},
        {"hits", hits},
        {"misses", misses},
        {"hit_rate", hits + misses ? static_cast<double>(hits) / static_cast<double>(hits + misses) : 0.0},
        {"evictions", b.evictions - a.evictions},
        {"prefetch_issued", b.prefetch_issued - a.prefetch_issued},
        {"prefetch_used", used},
        {"prefetch_wasted", wasted},
        {"prefetch_accuracy", used + wasted ? static_cast<double>(used) / static_cast<double>(used + wasted) : 0.0},
        {"prefetch1_accuracy", share(used - used2, wasted - wasted2)},
        {"prefetch2_issued", b.prefetch2_issued - a.prefetch2_issued},
        {"prefetch2_used", used2},
        {"prefetch2_wasted", wasted2},
        {"prefetch2_accuracy", share(used2, wasted2)},
        {"prefetch_dropped", b.prefetch_dropped - a.prefetch_dropped},
        {"prefetch2_dropped", b.prefetch2_dropped - a.prefetch2_dropped},
        {"prefetch_promoted", b.prefetch_promoted - a.prefetch_promoted},
        {"reads_deferred", b.reads_deferred - a.reads_deferred},
        {"reads_dropped", b.reads_dropped - a.reads_dropped},
        {"demand_reads", b.demand_reads - a.demand_reads},
        {"demand_mean_queued_behind", b.demand_reads > a.demand_reads
                                          ? static_cast<double>(b.demand_queued_behind - a.demand_queued_behind) /
                                                static_cast<double>(b.demand_reads - a.demand_reads)
                                          : 0.0},
        {"demand_mean_latency_ms",
         b.demand_reads > a.demand_reads
             ? (b.demand_latency_s - a.demand_latency_s) * 1e3 / static_cast<double>(b.demand_reads - a.demand_reads)
             : 0.0},
        {"prefetch_wasted_bytes_per_token",
         tokens ? static_cast<double>(wasted * b.slot_bytes) / static_cast<double>(tokens) : 0.0},
        {"prefetch2_wasted_bytes_per_token",
         tokens ? static_cast<double>(wasted2 * b.slot_bytes) / static_cast<double>(tokens) : 0.0},
        {"slots", b.slots},
        {"slot_bytes", b.slot_bytes}};
}

} // namespace

// Takes "NAME VALUE" out of argv (anywhere after the program name); the rest stay positional.
std::string take_flag(int& argc, char** argv, std::string_view name) {
    std::string path;
    int out = 1;
    for (int i = 1; i < argc; ++i) {
        if (std::string_view(argv[i]) == name && i + 1 < argc) {
            path = argv[++i];
        } else {
            argv[out++] = argv[i];
        }
    }
    argc = out;
    return path;
}

int main(int argc, char** argv) {
    const auto routing = take_flag(argc, argv, "--routing");
    const auto order_name = take_flag(argc, argv, "--read-order");
    const auto window_text = take_flag(argc, argv, "--read-window");
    if (argc < 3) {
        std::fprintf(stderr, "usage: stream_bench MODEL.gguf BUDGET [tokens=32] [warmup=8] [threads=0] [prefetch=1] "
                             "[policy=lru-2] [--routing FILE] [--read-order fifo|priority] [--read-window N]\n"
                             "(prefetch: 0, 1 or 2 layers ahead)\n");
        return 2;
    }
    auto order = experts::parse_read_order(order_name.empty() ? "priority" : order_name);
    if (!order) {
        std::fprintf(stderr, "stream_bench: --read-order: %s\n", order.error().message.c_str());
        return 2;
    }
    std::uint32_t window = experts::default_read_window;
    if (!window_text.empty()) {
        char* end = nullptr;
        const auto w = std::strtoul(window_text.c_str(), &end, 10);
        if (end == window_text.c_str() || *end != '\0' || w == 0 || w > 1024) {
            std::fprintf(stderr, "stream_bench: --read-window must be 1 to 1024, not \"%s\"\n", window_text.c_str());
            return 2;
        }
        window = static_cast<std::uint32_t>(w);
    }
    const std::string path = argv[1];
    auto budget = parse_size(argv[2]);
    if (!budget) {
        std::fprintf(stderr, "stream_bench: %s\n", budget.error().message.c_str());
        return 2;
    }
    auto count = [&](int i, unsigned long fallback) {
        return bench::count_arg("stream_bench", argc, argv, i, fallback);
    };
    const auto tokens = count(3, 32), warmup = count(4, 8), threads = count(5, 0), prefetch = count(6, 1);
    if (!tokens || !warmup || !threads || !prefetch) {
        return 2;
    }
    if (*tokens == 0 || *warmup == 0) {
        std::fprintf(stderr, "stream_bench: tokens and warmup must be at least 1\n");
        return 2;
    }
    // The session holds the prompt, the warm-up and the timed tokens: 512 positions, doubled until they fit.
    std::uint32_t n_ctx = 512;
    while (n_ctx < 8 + *warmup + *tokens) {
        n_ctx *= 2;
    }
    model_options opts;
    opts.memory_budget = *budget;
    opts.n_ctx = n_ctx;
    opts.n_threads = *threads;
    if (*prefetch > 2) {
        std::fprintf(stderr, "stream_bench: prefetch is 0 (off), 1 (the next layer) or 2 (the next two layers)\n");
        return 2;
    }
    opts.prefetch = *prefetch != 0;
    opts.prefetch_depth = *prefetch == 2 ? 2 : 1;
    opts.cache_policy = experts::cache_policy::lru2; // the command line's default, as run, bench and serve
    opts.read_order = *order;
    opts.read_window = window;
    if (argc > 7) {
        auto policy = experts::parse_policy_spec(argv[7]);
        if (!policy) {
            std::fprintf(stderr, "stream_bench: %s\n", policy.error().message.c_str());
            return 2;
        }
        opts.cache_policy = policy->policy;
        opts.cache_pin_percent = policy->pin_percent;
    }

    const auto cached_before = page_cached_bytes(path);
    const auto swap_in_before = vmstat("pswpin"), swap_out_before = vmstat("pswpout");
    auto loaded = run<result<std::shared_ptr<model>>>([&] { return model::load(path, opts); });
    if (!loaded) {
        std::fprintf(stderr, "stream_bench: %s\n", loaded.error().message.c_str());
        return 1;
    }
    const auto m = *loaded;
    if (auto r = m->set_routing({}, routing); !r) {
        std::fprintf(stderr, "stream_bench: %s\n", r.error().message.c_str());
        return 1;
    }

    // Sampled decode (temperature 1, fixed seed) from a short random prompt; the timed window starts after
    // `warmup` tokens. Greedy decoding of random weights falls into a loop of a few tokens whose experts stay
    // cached, which would flatter the cache; sampling keeps the tokens, and so the routing, varied.
    std::mt19937 rng(42);
    generate_request req;
    for (int i = 0; i < 8; ++i) {
        req.prompt_tokens.push_back(static_cast<std::int32_t>(rng() % m->vocab().size()));
    }
    req.sampling.temperature = 1.0f;
    req.sampling.top_k = 0;
    req.sampling.top_p = 1.0f;
    req.sampling.min_p = 0.0f;
    req.sampling.seed = 1;
    req.max_tokens = static_cast<std::uint32_t>(*warmup + *tokens);
    req.ignore_eos = true;
    session s(m, n_ctx);
    using clock = std::chrono::steady_clock;
    experts::expert_cache_counters start_counters;
    batch_engine_counters start_engine;
    clock::time_point start;
    double wall_s = 0;
    std::uint32_t seen = 0;
    std::vector<std::int32_t> generated;
    auto outcome = run<result<void>>([&]() -> boost::asio::awaitable<result<void>> {
        auto stream = s.generate(std::move(req));
        while (true) {
            auto ev = co_await stream.next();
            if (!ev) {
                co_return ev.error();
            }
            if (!*ev) {
                break;
            }
            if ((*ev)->token < 0) {
                continue;
            }
            generated.push_back((*ev)->token);
            if (++seen == *warmup) {
                start_counters = m->expert_counters();
                start_engine = m->batch()->counters();
                start = clock::now();
            }
        }
        wall_s = std::chrono::duration<double>(clock::now() - start).count();
        co_return result<void>{};
    });
    if (!outcome) {
        std::fprintf(stderr, "stream_bench: %s\n", outcome.error().message.c_str());
        return 1;
    }
    if (seen <= *warmup) {
        std::fprintf(stderr, "stream_bench: the decode ended after %u tokens, before the %lu warm-up tokens did\n",
                     seen, *warmup);
        return 1;
    }
    const auto end_counters = m->expert_counters();
    const auto end_engine = m->batch()->counters();
    const std::uint64_t timed = seen - *warmup;
    const auto plan = m->plan();
    json::object out{
        {"model", path},
        {"budget_bytes", *budget},
        {"threads", m->options().n_threads},
        {"n_ctx", n_ctx},
        {"prefetch", opts.prefetch},
        {"prefetch_depth", opts.prefetch ? opts.prefetch_depth : 0},
        {"policy", experts::to_string(experts::policy_spec{opts.cache_policy, opts.cache_pin_percent})},
        {"plan", to_json(plan)},
        {"read_order", std::string(experts::to_string(opts.read_order))},
        {"read_window", opts.read_window},
        {"expert_wait_s_per_token",
         (end_engine.expert_wait_s - start_engine.expert_wait_s) / static_cast<double>(seen - *warmup)},
        {"step_s_per_token", (end_engine.step_s - start_engine.step_s) / static_cast<double>(seen - *warmup)},
        {"routing", routing.empty() ? json::value("router") : json::value(routing)},
        {"routing_tokens_replayed", m->routing() ? m->routing()->replayed() : 0},
        {"tokens", timed},
        {"distinct_tokens",
         [&] {
             std::sort(generated.begin(), generated.end());
             return static_cast<std::uint64_t>(std::unique(generated.begin(), generated.end()) - generated.begin());
         }()},
        {"decode_tokens_per_s", wall_s > 0 ? static_cast<double>(timed) / wall_s : 0.0},
        {"cache", cache_json(start_counters, end_counters, wall_s, timed)},
        {"peak_rss_bytes", proc_kb("/proc/self/status", "VmHWM")},
        {"rss_bytes", proc_kb("/proc/self/status", "VmRSS")},
        {"swap_bytes", proc_kb("/proc/self/status", "VmSwap")},
        {"swap_pages_in", vmstat("pswpin") - swap_in_before},
        {"swap_pages_out", vmstat("pswpout") - swap_out_before},
        {"model_page_cache_bytes_before", cached_before},
        {"model_page_cache_growth_bytes",
         static_cast<std::int64_t>(page_cached_bytes(path)) - static_cast<std::int64_t>(cached_before)}};
    std::cout << json::serialize(out) << "\n";
    return 0;
}
