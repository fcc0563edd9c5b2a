// Shared helpers of the reference fidelity tests: a fixture's reference.json and logits, its conversion with
// `sluice convert`, logits of a session fed in pieces, relative differences, and a GGUF file's tensors.
#pragma once

#include "kernels/quant_type.hpp"
#include "runtime/convert/converter.hpp"
#include "runtime/engine/model.hpp"

#include <boost/json.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace sluice::test {

/// tests/fixtures/reference.
std::filesystem::path reference_root();

/// The fixture's reference.json.
boost::json::object reference_json(const std::string& name);

/// Little-endian floats of a binary file.
std::vector<float> floats_of(const std::filesystem::path& path);

/// Token ids of a JSON array.
std::vector<std::int32_t> ids_of(const boost::json::value& v);

/// The fixture `name` (config.json, model.safetensors, with reference/tokenizer's tokenizer) converted to `type`
/// once per process, in the scratch folder.
std::filesystem::path converted_fixture(const std::string& name, convert::output_type type);

/// Logits of every position of `ids` fed to one session in the pieces `bounds` marks ({0, a, b, ..., ids.size()}).
std::vector<float> logits_in_pieces(const std::shared_ptr<model>& m, const std::vector<std::int32_t>& ids,
                                    const std::vector<std::size_t>& bounds);

/// max |a - b| / max |b| (a huge value when the sizes differ).
double max_rel_diff(const std::vector<float>& a, const std::vector<float>& b);

/// The `n` tokens greedy decoding appends to `prompt` (EOS ignored).
std::vector<std::int32_t> greedy_tokens(const std::shared_ptr<model>& m, const std::vector<std::int32_t>& prompt,
                                        std::size_t n);

/// A copy of a GGUF model with every tensor of type `from` dequantized to F32: the same rounded weights, computed
/// without quantized activations.
std::filesystem::path dequantized_copy(const std::filesystem::path& src, kernels::quant_type from);

/// Per position (rows of `n_vocab`): the cosine of `a` and `b`, and whether their top-1 agree where `b`'s top two
/// are at least `decisive` of its largest |logit| apart.
struct position_agreement {
    std::vector<double> cosines;
    std::size_t decisive = 0, decisive_agree = 0;
};
position_agreement agreement(const std::vector<float>& a, const std::vector<float>& b, std::size_t n_vocab,
                             double decisive = 0.02);

/// One tensor of a GGUF file: type, shape and bytes.
struct tensor_bytes {
    kernels::quant_type type;
    std::vector<std::uint64_t> shape;
    std::vector<std::byte> data;
};

/// Every tensor of a GGUF file by name.
std::map<std::string, tensor_bytes> read_tensors(const std::filesystem::path& path);

} // namespace sluice::test
