// Random-weight GGUF models of any supported architecture and size: the plan (metadata and tensor table, from
// the same architecture hooks the loader uses) and a streaming write at disk speed.
#pragma once

#include "kernels/quant_type.hpp"
#include "runtime/gguf/metadata.hpp"
#include "runtime/models/architecture.hpp"
#include "sluice/error.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace sluice::mkmodel {

/// What to generate.
struct random_model_spec {
    models::model_hparams hparams; ///< generic fields; the architecture's configure hook adds its flags
    kernels::quant_type type = kernels::quant_type::q4_k; ///< embedding, projections and experts
    std::optional<kernels::quant_type> expert_type;       ///< routed experts, when not `type` (gpt-oss: MXFP4)
    bool tied = false;      ///< omit output.weight (the embedding doubles as the output projection)
    std::string name;       ///< general.name
    std::uint64_t seed = 0; ///< recorded in the metadata; `write_random_model` draws from it
};

/// One tensor to write: the architecture's spec and the type chosen for it.
struct planned_tensor {
    models::tensor_spec spec;
    kernels::quant_type type;
};

/// The file to write: metadata (add the tokenizer keys before writing) and tensors in file order.
struct random_model_plan {
    const models::architecture* arch = nullptr;
    models::model_hparams hparams; ///< after the configure hook
    gguf::metadata kv;
    std::vector<planned_tensor> tensors;
    std::uint64_t seed = 0;

    /// Bytes of tensor data (without alignment padding).
    [[nodiscard]] std::uint64_t data_bytes() const;
};

/// Builds the plan: write_hparams + general.* keys, the architecture's configure hook and check_hparams (so
/// the file passes models::load_hparams), then arch->tensors() with F32 norms, biases and routers and
/// `spec.type` elsewhere. Errors: an unknown architecture, an invalid shape (naming the key), a type without
/// a quantizer, or a row that is not a multiple of the type's block size (naming the tensor).
result<random_model_plan> plan_random_model(const random_model_spec& spec);

/// How `write_random_model` writes.
struct write_options {
    std::uint64_t split_bytes = 0; ///< start a new part before tensor data exceeds this; 0 = one file
    /// Called after each tensor with bytes written so far and the total; may be empty.
    std::function<void(std::uint64_t done, std::uint64_t total)> progress;
};

/// Writes `plan` to `out` (or NAME-0000N-of-0000M.gguf parts), tensor by tensor with bounded memory. Values:
/// embeddings N(0, 1), projections and experts N(0, 1/sqrt(ne[0])), routers N(0, 2/sqrt(ne[0])), norm weights
/// 1 + N(0, 0.02), biases N(0, 0.02); quantized data is copied from per-(type, std) pools (block_pool.hpp).
/// The bytes depend only on the plan and its seed. Data goes to "<out>.tmp" files renamed into place at the
/// end; on error they are removed, so no partial output remains. Returns the paths written.
result<std::vector<std::filesystem::path>>
write_random_model(const random_model_plan& plan, const std::filesystem::path& out, const write_options& options = {});

} // namespace sluice::mkmodel
