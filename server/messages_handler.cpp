// The Messages API routes: request translation, prompt (history rendered, then the prefill), a slot, the answer
// whole or as Anthropic's named SSE events, disconnects and shutdown.
#include "server/messages_handler.hpp"

#include "server/anthropic_request.hpp"
#include "server/anthropic_response.hpp"
#include "server/completion_handler.hpp"
#include "server/prompt.hpp"
#include "server/sse.hpp"
#include "server/stream_step.hpp"
#include "server/structured_output.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/this_coro.hpp>
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

using http_request = http::request<http::string_body>;

/// One line per generation on stderr, as the OpenAI routes log theirs.
void log_generation(const message_meta& meta, std::string_view how, const generation_summary& s) {
    std::fprintf(stderr, "sluice serve: %s messages finish=%.*s prompt=%u cached=%u completion=%u\n", meta.id.c_str(),
                 static_cast<int>(how.size()), how.data(), s.prompt_tokens, s.cached_tokens, s.completion_tokens);
}

asio::awaitable<bool> answer_error(beast::tcp_stream& stream, const http_request& req, const server_state& st,
                                   const api_error& e, bool keep_alive) {
    auto res = anthropic_error_response(e, req.version(), keep_alive);
    co_return co_await write_response(stream, std::move(res), st.options.timeout);
}

asio::awaitable<bool> answer_json(beast::tcp_stream& stream, const http_request& req, const server_state& st,
                                  const json::object& body) {
    http::response<http::string_body> res{http::status::ok, req.version()};
    res.set(http::field::server, "sluice");
    res.set(http::field::content_type, "application/json");
    res.keep_alive(req.keep_alive());
    res.body() = json::serialize(body);
    res.prepare_payload();
    co_return co_await write_response(stream, std::move(res), st.options.timeout);
}

/// The prompt of `mreq`: the history through the chat template (with the generation prompt), then the
/// prefill's tokens, which the answer continues.
asio::awaitable<api_result<std::vector<std::int32_t>>> messages_prompt(server_state& st, const messages_request& mreq) {
    auto prompt = co_await prompt_tokens_for(st, mreq.chat);
    if (!prompt || mreq.prefill.empty()) {
        co_return std::move(prompt);
    }
    const model& m = *st.loaded;
    // Control-token text in the prefill stays text, as in any message's content.
    const auto more =
        m.vocab().encode(mreq.prefill, {.add_special = false, .parse_special = m.options().special_tokens_in_content});
    prompt->insert(prompt->end(), more.begin(), more.end());
    const auto context = st.slots.any_session().context_size();
    if (prompt->size() >= context) {
        co_return bad_request("the prompt has " + std::to_string(prompt->size()) + " tokens; the context holds " +
                                  std::to_string(context) + " (including at least one generated token)",
                              "messages", "context_length_exceeded");
    }
    co_return std::move(prompt);
}

/// The stop reason and stop_sequence of a finished answer.
std::pair<std::string_view, json::value> stop_of(const generation_summary& s, const message_blocks& blocks,
                                                 const messages_request& mreq) {
    const auto reason = anthropic_stop_reason(s, blocks.called(), mreq.stop_sequences);
    return {reason, reason == "stop_sequence" ? json::value(s.stopped_by) : json::value(nullptr)};
}

/// Generates the whole answer, then writes the message.
asio::awaitable<bool> answer_whole(beast::tcp_stream& stream, const http_request& req, server_state& st, session& sess,
                                   const messages_request& mreq, const message_meta& meta,
                                   const output_reading& reading, token_clock& clock, generation_summary& total) {
    auto tokens = sess.generate(mreq.chat.generate);
    choice_output output(mreq.chat, reading, sess.owner().vocab());
    message_blocks blocks;
    for (;;) {
        auto ev = co_await tokens.next();
        if (!ev) {
            total = tokens.summary();
            log_generation(meta, "error", total);
            const api_error e{http::status::internal_server_error, ev.error().message, "server_error"};
            co_return co_await answer_error(stream, req, st, e, req.keep_alive());
        }
        if (!*ev) {
            break;
        }
        if ((*ev)->token >= 0) {
            clock.on_token();
        }
        blocks.add(output.on_event(**ev));
    }
    blocks.add(output.finish());
    blocks.close();
    total = tokens.summary();
    if (total.reason == finish_reason::cancelled) {
        log_generation(meta, st.stopping ? "shutdown" : "cancelled", total);
        if (!st.stopping) {
            co_return false;
        }
        const api_error e = shutdown_error();
        co_return co_await answer_error(stream, req, st, e, false);
    }
    auto [reason, sequence] = stop_of(total, blocks, mreq);
    log_generation(meta, reason, total);
    const auto body =
        message_json(meta, blocks.content(), json::value(reason), std::move(sequence), anthropic_usage(total));
    co_return co_await answer_json(stream, req, st, body);
}

/// Streams message_start (once the prompt is in: its usage is known then), ping and the content blocks' events;
/// each token's events are written while the next token is computed. False when the stream must end (error,
/// failed write).
asio::awaitable<bool> stream_blocks(sse_writer& out, token_stream& tokens, choice_output& output,
                                    message_blocks& blocks, const message_meta& meta, token_clock& clock) {
    std::string pending;
    bool started = false;
    while (out.ok()) {
        auto ev = co_await next_while_sending(out, tokens, pending);
        if (!ev) {
            log_generation(meta, "error", tokens.summary());
            const api_error e{http::status::internal_server_error, ev.error().message, "server_error"};
            const std::string event = anthropic_event(anthropic_error_body(e));
            co_await out.send(event);
            co_await out.finish();
            co_return false;
        }
        if (!started) {
            pending += message_start_events(meta, tokens.summary());
            started = true;
        }
        if (!*ev) {
            break;
        }
        if ((*ev)->token >= 0) {
            clock.on_token();
        }
        pending += blocks.add(output.on_event(**ev));
    }
    if (!pending.empty()) {
        co_await out.send(pending);
    }
    co_return true;
}

/// Streams the answer as Anthropic's events, ending with message_delta and message_stop.
asio::awaitable<bool> answer_streamed(beast::tcp_stream& stream, const http_request& req, server_state& st,
                                      session& sess, const messages_request& mreq, const message_meta& meta,
                                      const output_reading& reading, token_clock& clock, generation_summary& total) {
    sse_writer out(stream, st.options.timeout, req.version(), req.keep_alive());
    if (!co_await out.start()) {
        co_return false;
    }
    auto tokens = sess.generate(mreq.chat.generate);
    choice_output output(mreq.chat, reading, sess.owner().vocab());
    message_blocks blocks;
    const bool streamed = co_await stream_blocks(out, tokens, output, blocks, meta, clock);
    total = tokens.summary();
    if (!streamed) {
        co_return false;
    }
    if (out.ok() && total.reason == finish_reason::cancelled && st.stopping) {
        // Stopped by the shutdown: the client gets an error event, not a cut stream.
        log_generation(meta, "shutdown", total);
        const std::string event = anthropic_event(anthropic_error_body(shutdown_error()));
        co_await out.send(event);
        co_await out.finish();
        co_return false;
    }
    if (!out.ok() || total.reason == finish_reason::cancelled) {
        log_generation(meta, "disconnected", total);
        co_return false;
    }
    std::string last = blocks.add(output.finish());
    last += blocks.close();
    const auto [reason, sequence] = stop_of(total, blocks, mreq);
    log_generation(meta, reason, total);
    last += message_end_events(reason, sequence, total);
    co_await out.send(last);
    co_await out.finish();
    co_return out.keep_alive();
}

/// Waits for a slot, then generates and answers; raced against watch_disconnect.
asio::awaitable<bool> generate_and_answer(beast::tcp_stream& stream, const http_request& req, server_state& st,
                                          messages_request mreq, message_meta meta, output_reading reading) {
    co_await asio::this_coro::throw_if_cancelled(false);
    token_clock clock(st.metrics, token_clock::clock::now());
    auto acquired = co_await st.slots.acquire();
    if (acquired.queue_full) {
        const api_error e{http::status::service_unavailable,
                          "all " + std::to_string(st.slots.parallel()) +
                              " generation slots are busy and the queue is full; retry later",
                          "unavailable_error"};
        co_return co_await answer_error(stream, req, st, e, req.keep_alive());
    }
    if (!acquired.lease) {
        if (!st.stopping) {
            co_return false; // the client left while queued
        }
        const api_error e = shutdown_error();
        co_return co_await answer_error(stream, req, st, e, false);
    }
    session& sess = acquired.lease->sess();
    generation_summary total;
    bool keep = false;
    if (mreq.chat.stream) {
        keep = co_await answer_streamed(stream, req, st, sess, mreq, meta, reading, clock, total);
    } else {
        keep = co_await answer_whole(stream, req, st, sess, mreq, meta, reading, clock, total);
    }
    st.metrics.prompt_tokens += total.prompt_tokens;
    st.metrics.generated_tokens += total.completion_tokens;
    co_return keep;
}

} // namespace

bool is_messages_path(std::string_view path) noexcept {
    return path == "/v1/messages" || path.starts_with("/v1/messages/");
}

asio::awaitable<bool> handle_messages(beast::tcp_stream& stream, const http_request& req, server_state& st) {
    auto parsed = parse_messages_request(req.body(), messages_endpoint::create, st.seeds());
    if (!parsed) {
        co_return co_await answer_error(stream, req, st, parsed.error(), req.keep_alive());
    }
    // Render and count the prompt before queueing: a template error or a prompt too long is a 400.
    auto prompt = co_await messages_prompt(st, *parsed);
    if (!prompt) {
        co_return co_await answer_error(stream, req, st, prompt.error(), req.keep_alive());
    }
    auto reading = output_reading_for(*st.loaded, parsed->chat, *prompt);
    if (auto e = apply_tool_choice(parsed->chat, reading)) { // tool_choice any / tool: a grammar forces the call
        co_return co_await answer_error(stream, req, st, *e, req.keep_alive());
    }
    parsed->chat.generate.prompt_tokens = std::move(*prompt);
    message_meta meta{make_message_id(), st.model_name};

    using namespace asio::experimental::awaitable_operators;
    auto work = generate_and_answer(stream, req, st, std::move(*parsed), std::move(meta), std::move(reading));
    auto watch = watch_disconnect(stream.socket());
    auto outcome = co_await (std::move(work) || std::move(watch));
    if (outcome.index() == 0) {
        co_return std::get<0>(outcome);
    }
    co_return false; // the client went away; the generation was cancelled
}

asio::awaitable<bool> handle_count_tokens(beast::tcp_stream& stream, const http_request& req, server_state& st) {
    auto parsed = parse_messages_request(req.body(), messages_endpoint::count_tokens, 0);
    if (!parsed) {
        co_return co_await answer_error(stream, req, st, parsed.error(), req.keep_alive());
    }
    auto prompt = co_await messages_prompt(st, *parsed);
    if (!prompt) {
        co_return co_await answer_error(stream, req, st, prompt.error(), req.keep_alive());
    }
    const json::object body{{"input_tokens", prompt->size()}};
    co_return co_await answer_json(stream, req, st, body);
}

} // namespace sluice::server
