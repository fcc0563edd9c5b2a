// The listener, the model-loading coroutine, signals and the two-step shutdown.
#include "server/server.hpp"

#include "server/http_session.hpp"
#include "server/server_state.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <exception>
#include <list>
#include <utility>

namespace sluice::server {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

/// An open connection: cancellable at shutdown, and what it is doing.
struct connection {
    asio::cancellation_signal signal;
    connection_status status;
};
using connection_list = std::list<connection>;

asio::awaitable<void> accept_loop(tcp::acceptor& acceptor, server_state& st, connection_list& connections) {
    const auto ex = co_await asio::this_coro::executor;
    while (acceptor.is_open()) {
        auto [ec, socket] = co_await acceptor.async_accept(asio::as_tuple(asio::use_awaitable));
        if (ec) {
            if (!acceptor.is_open()) {
                co_return;
            }
            // Out of descriptors or a transient error: back off instead of spinning.
            asio::steady_timer pause(ex, std::chrono::milliseconds(50));
            co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
            continue;
        }
        boost::system::error_code opt_ec;
        socket.set_option(tcp::no_delay(true), opt_ec); // SSE events go out as they come
        auto it = connections.emplace(connections.end());
        asio::co_spawn(ex, do_session(beast::tcp_stream(std::move(socket)), st, it->status),
                       asio::bind_cancellation_slot(it->signal.slot(), [&connections, it, ex](const std::exception_ptr&) {
                           asio::post(ex, [&connections, it] { connections.erase(it); });
                       }));
    }
}

double mib(std::uint64_t bytes) {
    return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

/// The memory plan on one stderr line (GET /health has it as JSON).
void log_memory_plan(const memory_plan& p) {
    std::fprintf(stderr,
                 "sluice serve: memory plan: %s, %.1f of %.1f MiB: resident weights %.1f MiB, KV cache %.1f MiB, "
                 "buffers %.1f MiB",
                 p.streams() ? "experts stream from disk" : "everything resident", mib(p.planned_bytes()),
                 mib(p.budget), mib(p.resident_bytes), mib(p.kv_bytes), mib(p.compute_bytes));
    if (p.streams()) {
        std::fprintf(stderr, ", expert cache %.1f MiB (%llu of %llu experts), %.1f MiB read per token expected",
                     mib(p.cache_bytes), static_cast<unsigned long long>(p.cache_slots),
                     static_cast<unsigned long long>(p.total_experts), mib(p.read_bytes_per_token));
    }
    if (p.draft_bytes > 0) {
        std::fprintf(stderr, ", draft model %.1f MiB", mib(p.draft_bytes));
    }
    if (p.mtp_bytes > 0) {
        std::fprintf(stderr, ", MTP block %.1f MiB", mib(p.mtp_bytes));
    }
    std::fputs("\n", stderr);
}

asio::awaitable<bool> load_model(server_state& st) {
    const auto t0 = std::chrono::steady_clock::now();
    model_options opts;
    opts.n_ctx = st.options.ctx;
    opts.n_threads = st.options.threads;
    opts.n_seq = static_cast<std::uint32_t>(st.options.parallel); // one KV cache per parallel slot
    opts.memory_budget = st.options.memory_budget;
    opts.disk_bandwidth = st.options.disk_bandwidth;
    opts.prefetch = st.options.prefetch;
    opts.prefetch_depth = st.options.prefetch_depth;
    opts.cache_policy = st.options.cache_policy;
    opts.cache_pin_percent = st.options.cache_pin_percent;
    opts.read_order = st.options.read_order;
    opts.read_window = st.options.read_window;
    opts.template_limits = st.options.template_limits;
    opts.special_tokens_in_content = st.options.special_tokens_in_content;
    opts.draft_model = st.options.draft;
    opts.draft_max = st.options.draft_max;
    opts.draft_optional = st.options.draft_optional;
    opts.draft_adaptive = !st.options.draft_fixed;
    opts.mtp = st.options.mtp;
    opts.draft_prefetch = st.options.draft_prefetch;
    opts.speculative = !st.options.draft.empty() ? speculative_mode::draft
                       : st.options.mtp          ? speculative_mode::mtp
                       : st.options.lookup       ? speculative_mode::lookup
                                                 : speculative_mode::off;
    std::fprintf(stderr, "sluice serve: loading %s\n", st.options.model.c_str());
    // One line per quarter: readable in a terminal and in a log file alike.
    auto progress = [quarter = 0](std::uint64_t done, std::uint64_t total) mutable {
        const int q = total > 0 ? static_cast<int>(done * 4 / total) : 4;
        for (; quarter < q; ++quarter) {
            std::fprintf(stderr, "sluice serve: loading %3d%% of %.1f MiB\n", (quarter + 1) * 25,
                         static_cast<double>(total) / (1024.0 * 1024.0));
        }
    };
    auto loaded = co_await model::load(st.options.model, opts, progress);
    if (!loaded) {
        std::fprintf(stderr, "sluice serve: %s\n", loaded.error().message.c_str());
        co_return false;
    }
    if (auto r = (*loaded)->set_routing(st.options.record_routing, {}); !r) {
        std::fprintf(stderr, "sluice serve: %s\n", r.error().message.c_str());
        co_return false;
    }
    const auto trained = (*loaded)->hparams().n_ctx_train;
    if (trained != 0 && st.options.ctx > trained) {
        std::fprintf(stderr,
                     "sluice serve: warning: --ctx %u is larger than the model's training context (%u); output past "
                     "%u tokens is unlikely to make sense\n",
                     st.options.ctx, trained, trained);
    }
    log_memory_plan((*loaded)->plan());
    st.loaded = std::move(*loaded);
    st.model_name = st.loaded->path().stem().string();
    st.created =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    st.slots.start(st.loaded, st.options.ctx);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "sluice serve: model %s loaded in %.0f ms; %zu slot(s) of %u tokens, queue %zu\n",
                 st.model_name.c_str(), ms, st.slots.parallel(), st.slots.any_session().context_size(),
                 st.options.queue);
    co_return true;
}

/// Waits until no connection is left (and the loader is done) or `until`; true when none is left.
asio::awaitable<bool> wait_for_connections(const connection_list& connections, const bool& loading,
                                           std::chrono::steady_clock::time_point until) {
    const auto ex = co_await asio::this_coro::executor;
    asio::steady_timer tick(ex);
    while ((!connections.empty() || loading) && std::chrono::steady_clock::now() < until) {
        tick.expires_after(std::chrono::milliseconds(20));
        co_await tick.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    co_return connections.empty() && !loading;
}

/// How long, after the grace period, the connections get to deliver their final events and close.
constexpr auto final_events_time = std::chrono::seconds(2);

/// Shutdown, step two: running generations go on until st.stop_deadline; then the HTTP ones are cancelled (each
/// ends with its final event; WebSocket sessions end theirs on their own at the deadline); whatever is still
/// open after final_events_time is cancelled outright, and the io_context stopped if even that does not end it.
asio::awaitable<void> drain(connection_list& connections, const bool& loading, server_state& st,
                            asio::io_context& ioc) {
    const auto until_grace = st.stop_deadline;
    const auto until_final = until_grace + final_events_time;
    const auto until_forced = until_final + final_events_time;
    const bool finished = co_await wait_for_connections(connections, loading, until_grace);
    if (finished) {
        co_return;
    }
    for (auto& c : connections) {
        if (!c.status.websocket) {
            c.signal.emit(asio::cancellation_type::terminal);
        }
    }
    const bool ended = co_await wait_for_connections(connections, loading, until_final);
    if (ended) {
        co_return;
    }
    for (auto& c : connections) {
        c.signal.emit(asio::cancellation_type::terminal);
    }
    const bool closed = co_await wait_for_connections(connections, loading, until_forced);
    if (!closed) {
        ioc.stop();
    }
}

std::string url_host(const tcp::endpoint& ep) {
    const auto a = ep.address();
    if (!a.is_v6()) {
        return a.to_string();
    }
    // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on "[" + std::string&&.
    std::string out(1, '[');
    out += a.to_string();
    out += ']';
    return out;
}

} // namespace

int run_server(const server_options& options) {
    // A log pipe whose reader left (`sluice serve 2>&1 | tee log`, a closed terminal) must not kill the server
    // at its next log line: writes to it fail instead (sockets never raise SIGPIPE: asio sends with MSG_NOSIGNAL).
    std::signal(SIGPIPE, SIG_IGN);
    asio::io_context ioc{1};
    server_state st(options, ioc.get_executor());

    boost::system::error_code ec;
    const auto address = asio::ip::make_address(options.host, ec);
    if (ec) {
        std::fprintf(stderr, "sluice serve: invalid --host '%s': %s\n", options.host.c_str(), ec.message().c_str());
        return 1;
    }
    tcp::acceptor acceptor(ioc);
    const tcp::endpoint endpoint{address, options.port};
    if (acceptor.open(endpoint.protocol(), ec); !ec) {
        acceptor.set_option(asio::socket_base::reuse_address(true), ec);
        acceptor.bind(endpoint, ec);
    }
    if (!ec) {
        acceptor.listen(asio::socket_base::max_listen_connections, ec);
    }
    if (ec) {
        std::fprintf(stderr, "sluice serve: cannot listen on %s:%u: %s\n", options.host.c_str(), options.port,
                     ec.message().c_str());
        return 1;
    }
    const auto bound = acceptor.local_endpoint();
    std::fprintf(stderr, "sluice serve: listening on http://%s:%u\n", url_host(bound).c_str(), bound.port());
    std::fflush(stderr);

    connection_list connections;
    asio::signal_set signals(ioc, SIGINT, SIGTERM);
    int status = 0;
    bool loading = true;
    bool stopping = false;
    // Shutdown, step one: stop accepting, close the idle connections, tell the WebSocket sessions; step two:
    // drain() lets running generations finish within --shutdown-grace, then ends them with a final event.
    auto shutdown = [&](std::chrono::milliseconds grace) {
        if (std::exchange(stopping, true)) {
            return;
        }
        signals.cancel();
        acceptor.close(ec);
        st.stopping = true;
        st.stop_deadline = std::chrono::steady_clock::now() + grace;
        st.stop_requested.set();
        for (auto& c : connections) {
            if (c.status.idle) {
                c.signal.emit(asio::cancellation_type::terminal);
            }
        }
        asio::co_spawn(ioc, drain(connections, loading, st, ioc), asio::detached);
    };
    signals.async_wait([&](const boost::system::error_code& e, int) {
        if (!e) {
            std::fprintf(stderr, "sluice serve: shutting down (running generations get %.1f s to finish)\n",
                         std::chrono::duration<double>(options.shutdown_grace).count());
            shutdown(options.shutdown_grace);
        }
    });
    asio::co_spawn(ioc, accept_loop(acceptor, st, connections), [](const std::exception_ptr& e) {
        if (e) { // never expected: the loop's own operations report errors as values; a silent end would hide it
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& ex) {
                std::fprintf(stderr, "sluice serve: stopped accepting connections: %s\n", ex.what());
            } catch (...) {
                std::fprintf(stderr, "sluice serve: stopped accepting connections\n");
            }
        }
    });
    asio::co_spawn(ioc, load_model(st), [&](const std::exception_ptr& e, bool ok) {
        loading = false;
        if (e || !ok) {
            status = 1;
            shutdown(std::chrono::milliseconds(0));
        }
    });
    ioc.run();
    return status;
}

} // namespace sluice::server
