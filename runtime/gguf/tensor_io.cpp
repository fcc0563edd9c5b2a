// Reading tensor data through io::reader: range checks, then one positional read per request.
#include "runtime/gguf/tensor_io.hpp"

namespace sluice::gguf {

result<io::read_request> tensor_read_request(const model_files& model, const tensor_info& tensor, std::uint64_t offset,
                                             std::span<std::byte> dest) {
    const std::string context = "tensor " + tensor.name;
    if (offset > tensor.bytes || dest.size() > tensor.bytes - offset) {
        return make_error(std::errc::invalid_argument, context + ": read of " + std::to_string(dest.size()) +
                                                           " bytes at " + std::to_string(offset) + " is outside its " +
                                                           std::to_string(tensor.bytes) + " bytes");
    }
    if (tensor.split >= model.parts().size()) {
        return make_error(std::errc::invalid_argument,
                          context + ": split " + std::to_string(tensor.split) + " is not a part of this model");
    }
    const auto& part = model.parts()[tensor.split];
    if (part.file.fd() < 0) {
        return make_error(std::errc::bad_file_descriptor, context + ": " + part.path.string() + " is not open");
    }
    return io::read_request{&part.file, tensor.offset + offset, dest};
}

boost::asio::awaitable<result<void>> read_tensor_range(io::reader& reader, const model_files& model,
                                                       const tensor_info& tensor, std::uint64_t offset,
                                                       std::span<std::byte> dest) {
    auto request = tensor_read_request(model, tensor, offset, dest);
    if (!request) {
        co_return request.error();
    }
    auto done = co_await reader.read_at(*request->f, request->offset, request->dest);
    if (!done) {
        co_return done.error().with_context("tensor " + tensor.name);
    }
    co_return done;
}

boost::asio::awaitable<result<void>> read_tensor(io::reader& reader, const model_files& model,
                                                 const tensor_info& tensor, std::span<std::byte> dest) {
    if (dest.size() != tensor.bytes) {
        co_return make_error(std::errc::invalid_argument, "tensor " + tensor.name + ": destination holds " +
                                                              std::to_string(dest.size()) + " bytes, tensor has " +
                                                              std::to_string(tensor.bytes));
    }
    co_return co_await read_tensor_range(reader, model, tensor, 0, dest);
}

boost::asio::awaitable<result<void>> read_expert(io::reader& reader, const model_files& model,
                                                 const tensor_info& tensor, std::uint64_t expert,
                                                 std::span<std::byte> dest) {
    auto slab = tensor.expert_slab(expert);
    if (!slab) {
        co_return slab.error();
    }
    if (dest.size() != slab->size) {
        co_return make_error(std::errc::invalid_argument, "tensor " + tensor.name + ": destination holds " +
                                                              std::to_string(dest.size()) + " bytes, an expert has " +
                                                              std::to_string(slab->size));
    }
    co_return co_await read_tensor_range(reader, model, tensor, slab->offset - tensor.offset, dest);
}

} // namespace sluice::gguf
