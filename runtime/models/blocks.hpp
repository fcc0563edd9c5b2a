// The building blocks decoder layers are made of; architectures compose them in their forward hook.
#pragma once

#include "io/error.hpp"
#include "runtime/gguf/metadata.hpp"
#include "runtime/models/hparams.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstdint>

namespace sluice::models {

class layer_context;

/// Pre-norm self-attention: x += W_o · attn(rope(norm(x) W_q), rope(norm(x) W_k), norm(x) W_v), with the
/// biases and q/k norms `hp` asks for; keys and values go into the sequence's KV cache.
boost::asio::awaitable<result<void>> attention_block(layer_context& ctx, std::uint32_t layer);

/// Pre-norm SwiGLU feed-forward: x += W_down · (silu(h W_gate) * h W_up), h = norm(x).
boost::asio::awaitable<result<void>> dense_ffn_block(layer_context& ctx, std::uint32_t layer);

/// Pre-norm mixture of experts: route each token to its top experts (softmax scores, optionally
/// renormalised), run them (weights reached through the expert source), plus the sigmoid-gated shared
/// expert when `hp.shared_expert`.
boost::asio::awaitable<result<void>> moe_block(layer_context& ctx, std::uint32_t layer);

/// Sets `hp.expert_weights_norm` to `fallback` unless the file says otherwise (`<arch>.expert_weights_norm`).
void default_expert_weights_norm(const gguf::metadata& kv, model_hparams& hp, bool fallback);

/// Error unless the model has routed experts.
result<void> require_experts(const model_hparams& hp);

} // namespace sluice::models
