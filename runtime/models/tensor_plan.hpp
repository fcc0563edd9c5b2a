// The tensors an architecture expects: GGUF names, shapes and roles, shared by the loader, the model
// generator and the converter so all three agree on one table.
#pragma once

#include "runtime/models/hparams.hpp"
#include "runtime/models/tensor_names.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace sluice::models {

/// What a tensor is used for; decides the types a writer may give it and how the loader checks it.
enum class tensor_role {
    embedding, ///< token_embd: rows are looked up, any type
    matrix,    ///< a dense projection, any type with kernels
    vector,    ///< a norm weight or bias: F32
    router,    ///< an expert router (ffn_gate_inp): F32, as llama.cpp's converter keeps it
    experts,   ///< a 3-D routed-expert tensor [cols, rows, n_expert], any type with kernels
};

/// One expected tensor. `ne` is the GGUF shape, fastest-varying first ({cols, rows} for a matrix).
struct tensor_spec {
    std::string name;
    std::vector<std::uint64_t> ne;
    tensor_role role = tensor_role::matrix;
    bool optional = false; ///< may be absent (output.weight of tied embeddings)
};

/// Standard pieces architectures assemble their tables from.
void add_global_tensors(const model_hparams& hp, std::vector<tensor_spec>& out);
void add_attention_tensors(const model_hparams& hp, std::uint32_t layer, std::vector<tensor_spec>& out);
void add_dense_ffn_tensors(const model_hparams& hp, std::uint32_t layer, std::vector<tensor_spec>& out);
void add_moe_tensors(const model_hparams& hp, std::uint32_t layer, std::vector<tensor_spec>& out);
void add_shared_expert_tensors(const model_hparams& hp, std::uint32_t layer, std::vector<tensor_spec>& out);
/// The FFN of layer `il` of a deepseek2 / glm4moe model: a dense SwiGLU FFN for the leading dense layers, else the
/// router, its selection bias (exp_probs_b, with sigmoid scores), the routed experts and the shared experts fused
/// into one (no gate). Not the norm before it, whose name differs between the two.
void add_routed_ffn_tensors(const model_hparams& hp, std::uint32_t layer, std::vector<tensor_spec>& out);

/// The extra tensors of a NextN (MTP) block at layer `il` (deepseek2, glm4moe): the projection of [embedding;
/// hidden], its three norms, and the optional embedding and head of its own.
void add_nextn_tensors(const model_hparams& hp, std::uint32_t layer, std::vector<tensor_spec>& out);

/// The table of a pre-norm decoder as `hp` describes it: globals, then per layer attention and either a
/// dense FFN or routed experts (plus the shared expert when `hp.shared_expert`). The tensors hook of every
/// architecture built from the standard blocks.
std::vector<tensor_spec> decoder_tensors(const model_hparams& hp);

} // namespace sluice::models
