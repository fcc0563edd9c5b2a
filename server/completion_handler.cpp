// Chat and text completions: prompt checks, slot scheduling, non-streamed and SSE answers, disconnects.
#include "server/completion_handler.hpp"

#include "base/async_event.hpp"
#include "server/choice_output.hpp"
#include "server/openai_response.hpp"
#include "server/prompt.hpp"
#include "server/sse.hpp"
#include "server/stream_step.hpp"
#include "server/structured_output.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/json/serialize.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace sluice::server {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using tcp = asio::ip::tcp;

using http_request = http::request<http::string_body>;

/// One line per generation on stderr: id, endpoint, how it ended and the token counts.
void log_generation(const response_meta& meta, std::string_view how, const generation_summary& s) {
    std::fprintf(stderr, "sluice serve: %s %s finish=%.*s prompt=%u cached=%u completion=%u\n", meta.id.c_str(),
                 meta.kind == completion_kind::chat ? "chat" : "completion", static_cast<int>(how.size()), how.data(),
                 s.prompt_tokens, s.cached_tokens, s.completion_tokens);
}

http::response<http::string_body> json_response(const json::object& body, unsigned version, bool keep_alive) {
    http::response<http::string_body> res{http::status::ok, version};
    res.set(http::field::server, "sluice");
    res.set(http::field::content_type, "application/json");
    res.keep_alive(keep_alive);
    res.body() = json::serialize(body);
    res.prepare_payload();
    return res;
}

} // namespace

/// Completes when the peer closes its side (EOF or reset). Bytes of a pipelined next request are not a
/// disconnect: then it waits until cancelled. Completing cancels the generation it races with.
asio::awaitable<void> watch_disconnect(tcp::socket& socket) {
    for (;;) {
        auto [ec] = co_await socket.async_wait(tcp::socket::wait_read, asio::as_tuple(asio::use_awaitable));
        if (ec) {
            co_return; // cancelled (the generation ended first) or a broken socket
        }
        char byte = 0;
        boost::system::error_code peek_ec;
        boost::system::error_code mode_ec;
        socket.non_blocking(true, mode_ec);
        const std::size_t n = socket.receive(asio::buffer(&byte, 1), tcp::socket::message_peek, peek_ec);
        socket.non_blocking(false, mode_ec);
        if (peek_ec == asio::error::would_block || peek_ec == asio::error::try_again) {
            continue; // a spurious wake-up
        }
        if (peek_ec || n == 0) {
            co_return; // end of stream, or an error such as a reset
        }
        break; // bytes of a pipelined request
    }
    const auto executor = co_await asio::this_coro::executor;
    async_event never(executor); // nobody sets it: only the race's cancellation ends this wait
    co_await never.async_wait(asio::as_tuple(asio::use_awaitable));
}

namespace {

/// Choice `index` of `creq`: its own seed (seed + index), so choices differ and each stays reproducible.
generate_request choice_request(const completion_request& creq, std::uint32_t index) {
    generate_request g = creq.generate;
    g.sampling.seed += index;
    return g;
}

/// Generates every choice one after another on the slot's session (each reuses the prompt's cache) and answers
/// one JSON object.
asio::awaitable<bool> answer_whole(beast::tcp_stream& stream, const http_request& req, server_state& st, session& sess,
                                   const completion_request& creq, const response_meta& meta,
                                   const output_reading& reading, token_clock& clock, generation_summary& total) {
    std::vector<choice_output> outputs;
    std::vector<finished_choice> finished;
    outputs.reserve(creq.n);
    for (std::uint32_t i = 0; i < creq.n; ++i) {
        auto tokens = sess.generate(choice_request(creq, i));
        auto& out = outputs.emplace_back(creq, reading, sess.owner().vocab());
        for (;;) {
            auto ev = co_await tokens.next();
            if (!ev) {
                log_generation(meta, "error", tokens.summary());
                const api_error e{http::status::internal_server_error, ev.error().message, "server_error"};
                auto res = error_response(e, req.version(), req.keep_alive());
                co_return co_await write_response(stream, std::move(res), st.options.timeout);
            }
            if (!*ev) {
                break;
            }
            if ((*ev)->token >= 0) {
                clock.on_token();
            }
            out.on_event(**ev);
        }
        out.finish();
        const auto& s = tokens.summary();
        if (i == 0) {
            total = s;
        } else {
            add_choice_summary(total, s);
        }
        if (s.reason == finish_reason::cancelled && st.stopping) {
            log_generation(meta, "shutdown", total);
            auto res = error_response(shutdown_error(), req.version(), false);
            co_return co_await write_response(stream, std::move(res), st.options.timeout);
        }
        if (s.reason == finish_reason::cancelled) {
            log_generation(meta, "cancelled", total);
            co_return false;
        }
        finished.push_back(finished_choice{&out, std::string(choice_finish_reason(s, out))});
    }
    log_generation(meta, finish_reason_name(total.reason), total);
    auto res = json_response(full_response(meta, finished, total), req.version(), req.keep_alive());
    co_return co_await write_response(stream, std::move(res), st.options.timeout);
}

/// The SSE events of `d` for choice `index`, concatenated (empty when it carries nothing).
std::string delta_events(const response_meta& meta, std::size_t index, const choice_delta& d) {
    std::string events;
    for (const auto& c : delta_chunks(meta, index, d)) {
        events += sse_event(c);
    }
    return events;
}

/// Streams choice `index`. Each token's events are written while the next token is computed: the write (a
/// loopback send alone costs tens of microseconds, more with caches cold after a decode step) overlaps the
/// compute instead of adding to every token's latency. A failed write stops pulling tokens after the step in
/// flight, which stops the compute. False when the stream must end (error, failed write, cancellation).
asio::awaitable<bool> stream_choice(sse_writer& out, token_stream& tokens, choice_output& output,
                                    const response_meta& meta, std::size_t index, token_clock& clock) {
    if (meta.kind == completion_kind::chat) {
        const std::string role = sse_event(role_chunk(meta, index)); // OpenAI's first delta: the role
        co_await out.send(role);
    }
    std::string pending; // the previous token's events, written while the next token is computed
    while (out.ok()) {
        auto ev = co_await next_while_sending(out, tokens, pending);
        if (!ev) {
            log_generation(meta, "error", tokens.summary());
            const api_error e{http::status::internal_server_error, ev.error().message, "server_error"};
            const std::string event = sse_event(error_body(e));
            co_await out.send(event);
            co_await out.finish();
            co_return false;
        }
        if (!*ev) {
            break;
        }
        if ((*ev)->token >= 0) {
            clock.on_token();
        }
        pending = delta_events(meta, index, output.on_event(**ev));
    }
    pending += delta_events(meta, index, output.finish());
    if (!pending.empty()) {
        co_await out.send(pending);
    }
    co_return true;
}

/// Streams every choice, one after another, then the usage chunk and [DONE].
asio::awaitable<bool> answer_streamed(beast::tcp_stream& stream, const http_request& req, server_state& st,
                                      session& sess, const completion_request& creq, const response_meta& meta,
                                      const output_reading& reading, token_clock& clock, generation_summary& total) {
    sse_writer out(stream, st.options.timeout, req.version(), req.keep_alive());
    if (!co_await out.start()) {
        co_return false;
    }
    for (std::uint32_t i = 0; i < creq.n; ++i) {
        auto tokens = sess.generate(choice_request(creq, i));
        choice_output output(creq, reading, sess.owner().vocab());
        const bool streamed = co_await stream_choice(out, tokens, output, meta, i, clock);
        const auto& s = tokens.summary();
        if (i == 0) {
            total = s;
        } else {
            add_choice_summary(total, s);
        }
        if (!streamed) {
            co_return false;
        }
        if (out.ok() && s.reason == finish_reason::cancelled && st.stopping) {
            // Stopped by the shutdown: the client gets an error event and [DONE], not a cut stream.
            log_generation(meta, "shutdown", total);
            const std::string event = sse_event(error_body(shutdown_error()));
            co_await out.send(event);
            co_await out.send(sse_done);
            co_await out.finish();
            co_return false;
        }
        if (!out.ok() || s.reason == finish_reason::cancelled) {
            log_generation(meta, "disconnected", total);
            co_return false;
        }
        const std::string last = sse_event(final_chunk(meta, i, choice_finish_reason(s, output), s));
        co_await out.send(last);
    }
    log_generation(meta, finish_reason_name(total.reason), total);
    if (creq.include_usage) {
        const std::string usage = sse_event(usage_chunk(meta, total));
        co_await out.send(usage);
    }
    co_await out.send(sse_done);
    co_await out.finish();
    co_return out.keep_alive();
}

/// Waits for a slot, then generates and answers. Runs raced against watch_disconnect: cancellation (the
/// client left) ends the queue wait or the token stream after the current step.
asio::awaitable<bool> generate_and_answer(beast::tcp_stream& stream, const http_request& req, server_state& st,
                                          completion_request creq, response_meta meta, output_reading reading) {
    co_await asio::this_coro::throw_if_cancelled(false);
    token_clock clock(st.metrics, token_clock::clock::now());
    auto acquired = co_await st.slots.acquire();
    if (acquired.queue_full) {
        const std::string msg = "all " + std::to_string(st.slots.parallel()) +
                                " generation slots are busy and the queue is full; retry later";
        const api_error e{http::status::service_unavailable, msg, "unavailable_error", std::nullopt, "server_busy"};
        auto res = error_response(e, req.version(), req.keep_alive());
        co_return co_await write_response(stream, std::move(res), st.options.timeout);
    }
    if (!acquired.lease) {
        if (!st.stopping) {
            co_return false; // the client left while queued
        }
        auto res = error_response(shutdown_error(), req.version(), false);
        co_return co_await write_response(stream, std::move(res), st.options.timeout);
    }
    session& sess = acquired.lease->sess();
    generation_summary total;
    bool keep = false;
    if (creq.stream) {
        keep = co_await answer_streamed(stream, req, st, sess, creq, meta, reading, clock, total);
    } else {
        keep = co_await answer_whole(stream, req, st, sess, creq, meta, reading, clock, total);
    }
    st.metrics.prompt_tokens += total.prompt_tokens;
    st.metrics.generated_tokens += total.completion_tokens;
    co_return keep;
}

} // namespace

asio::awaitable<bool> write_response(beast::tcp_stream& stream, http::response<http::string_body> res,
                                     std::chrono::milliseconds timeout) {
    note_response_status(&stream, static_cast<unsigned>(res.result_int()));
    stream.expires_after(timeout);
    auto [ec, n] = co_await http::async_write(stream, res, asio::as_tuple(asio::use_awaitable));
    co_return !ec && res.keep_alive();
}

asio::awaitable<bool> handle_completion(beast::tcp_stream& stream, const http_request& req, server_state& st,
                                        completion_kind kind) {
    const auto version = req.version();
    const bool keep_alive = req.keep_alive();
    auto parsed = parse_completion_request(req.body(), kind, st.seeds());
    if (!parsed) {
        auto res = error_response(parsed.error(), version, keep_alive);
        co_return co_await write_response(stream, std::move(res), st.options.timeout);
    }
    if (parsed->generate.speculative.mode == speculative_mode::draft && !st.loaded->draft()) {
        const auto e = bad_request("speculative.mode \"draft\": the server runs without a draft model (--draft)",
                                   "speculative.mode", "invalid_value");
        co_return co_await write_response(stream, error_response(e, version, keep_alive), st.options.timeout);
    }
    if (parsed->generate.speculative.mode == speculative_mode::mtp && st.loaded->mtp() == nullptr) {
        const auto e = bad_request("speculative.mode \"mtp\": the server runs without the model's multi-token "
                                   "prediction block (--mtp, on a file that has one)",
                                   "speculative.mode", "invalid_value");
        co_return co_await write_response(stream, error_response(e, version, keep_alive), st.options.timeout);
    }
    // Render and count the prompt before queueing: a template error or a prompt longer than the context is
    // the client's error (400), reported with the counts.
    auto prompt = co_await prompt_tokens_for(st, *parsed);
    if (!prompt) {
        auto res = error_response(prompt.error(), version, keep_alive);
        co_return co_await write_response(stream, std::move(res), st.options.timeout);
    }
    auto reading = output_reading_for(*st.loaded, *parsed, *prompt);
    if (auto e = apply_tool_choice(*parsed, reading)) {
        co_return co_await write_response(stream, error_response(*e, version, keep_alive), st.options.timeout);
    }
    parsed->generate.prompt_tokens = std::move(*prompt);
    response_meta meta{
        kind, make_response_id(kind), st.model_name,
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count(),
        parsed->include_usage};

    using namespace asio::experimental::awaitable_operators;
    auto work = generate_and_answer(stream, req, st, std::move(*parsed), std::move(meta), std::move(reading));
    auto watch = watch_disconnect(stream.socket());
    auto outcome = co_await (std::move(work) || std::move(watch));
    if (outcome.index() == 0) {
        co_return std::get<0>(outcome);
    }
    co_return false; // the client went away; the generation was cancelled
}

} // namespace sluice::server
