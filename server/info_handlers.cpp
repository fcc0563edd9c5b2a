// Health, model list and tokenizer endpoints.
#include "server/info_handlers.hpp"

#include "runtime/engine/memory_plan.hpp"
#include "runtime/tokenizer/unicode.hpp"
#include "server/api_error.hpp"
#include "server/openai_request.hpp"
#include "server/openai_response.hpp"

#include <boost/json/serialize.hpp>

#include <limits>

namespace sluice::server {

namespace http = boost::beast::http;
namespace json = boost::json;

http_response json_ok(const json::object& body, const http_request& req) {
    http_response res{http::status::ok, req.version()};
    res.set(http::field::server, "sluice");
    res.set(http::field::content_type, "application/json");
    res.keep_alive(req.keep_alive());
    res.body() = json::serialize(body);
    res.prepare_payload();
    return res;
}

http_response handle_health(const http_request& req, const server_state& st) {
    if (!st.slots.ready()) {
        auto res = json_ok(json::object{{"status", "loading"}}, req);
        res.result(http::status::service_unavailable);
        res.set(http::field::retry_after, "1");
        return res;
    }
    json::object body{{"status", "ok"},
                      {"model", st.model_name},
                      {"n_ctx", st.slots.any_session().context_size()},
                      {"slots_total", st.slots.parallel()},
                      {"slots_busy", st.slots.busy()},
                      {"queued", st.slots.queued()},
                      {"memory", sluice::to_json(st.loaded->plan())}};
    if (const auto& draft = st.loaded->draft()) { // its share of the budget is memory.draft_bytes
        body["draft"] = json::object{{"model", draft->path().filename().string()},
                                     {"memory", sluice::to_json(draft->plan())}};
    } else if (!st.loaded->draft_warning().empty()) {
        body["draft_warning"] = st.loaded->draft_warning();
    }
    // A streaming model reads its file for every token: a file truncated (or unreadable) under the server is a
    // fault a load balancer must see, not only the requests that fail on it.
    const std::string file_fault = st.loaded->file_fault();
    const auto counters = st.loaded->expert_counters();
    if (!file_fault.empty() || counters.read_failures > 0) {
        body["status"] = "fault";
        json::object fault{{"read_failures", counters.read_failures}};
        if (!file_fault.empty()) {
            fault["file"] = file_fault;
        }
        if (!counters.last_read_failure.empty()) {
            fault["last_read_failure"] = counters.last_read_failure;
        }
        body["fault"] = std::move(fault);
        auto res = json_ok(body, req);
        res.result(http::status::service_unavailable);
        return res;
    }
    return json_ok(body, req);
}

http_response handle_models(const http_request& req, const server_state& st) {
    const auto& hp = st.loaded->hparams();
    json::object entry{{"id", st.model_name},
                       {"object", "model"},
                       {"created", st.created},
                       {"owned_by", "sluice"},
                       {"meta", json::object{{"n_ctx", st.slots.any_session().context_size()},
                                             {"n_ctx_train", hp.n_ctx_train},
                                             {"n_vocab", hp.n_vocab},
                                             {"resident_bytes", st.loaded->resident_bytes()}}}};
    return json_ok(json::object{{"object", "list"}, {"data", json::array{std::move(entry)}}}, req);
}

http_response handle_tokenize(const http_request& req, const server_state& st) {
    auto body = parse_json_object(req.body());
    if (!body) {
        return error_response(body.error(), req.version(), req.keep_alive());
    }
    for (const auto& kv : *body) {
        if (kv.key() != "content" && kv.key() != "add_special") {
            const std::string name(kv.key());
            return error_response(bad_request("Unrecognized request argument supplied: " + name, name, "unknown_field"),
                                  req.version(), req.keep_alive());
        }
    }
    const auto* content = body->if_contains("content");
    if (content == nullptr || !content->is_string()) {
        return error_response(bad_request("content must be a string", "content", "invalid_type"), req.version(),
                              req.keep_alive());
    }
    bool add_special = false;
    if (const auto* a = body->if_contains("add_special")) {
        if (!a->is_bool()) {
            return error_response(bad_request("add_special must be a boolean", "add_special", "invalid_type"),
                                  req.version(), req.keep_alive());
        }
        add_special = a->get_bool();
    }
    const auto ids = st.loaded->vocab().encode(content->get_string(), {.add_special = add_special});
    return json_ok(json::object{{"tokens", json::array(ids.begin(), ids.end())}}, req);
}

http_response handle_detokenize(const http_request& req, const server_state& st) {
    auto body = parse_json_object(req.body());
    if (!body) {
        return error_response(body.error(), req.version(), req.keep_alive());
    }
    for (const auto& kv : *body) {
        if (kv.key() != "tokens") {
            const std::string name(kv.key());
            return error_response(bad_request("Unrecognized request argument supplied: " + name, name, "unknown_field"),
                                  req.version(), req.keep_alive());
        }
    }
    const auto* tokens = body->if_contains("tokens");
    if (tokens == nullptr || !tokens->is_array()) {
        return error_response(bad_request("tokens must be an array of token ids", "tokens", "invalid_type"),
                              req.version(), req.keep_alive());
    }
    std::vector<std::int32_t> ids;
    const auto n_vocab = static_cast<std::int64_t>(st.loaded->hparams().n_vocab);
    for (std::size_t i = 0; i < tokens->get_array().size(); ++i) {
        const auto& t = tokens->get_array()[i];
        if (!t.is_int64() || t.get_int64() < 0 || t.get_int64() >= n_vocab) {
            const std::string at = "tokens[" + std::to_string(i) + "]";
            return error_response(
                bad_request(at + " must be a token id in [0, " + std::to_string(n_vocab) + ")", at, "out_of_range"),
                req.version(), req.keep_alive());
        }
        ids.push_back(static_cast<std::int32_t>(t.get_int64()));
    }
    return json_ok(json::object{{"content", tokenizer::valid_utf8(st.loaded->vocab().decode(ids))}}, req);
}

} // namespace sluice::server
