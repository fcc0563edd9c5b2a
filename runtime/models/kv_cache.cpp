// KV cache storage.
#include "runtime/models/kv_cache.hpp"

#include <cassert>

namespace sluice::models {

kv_cache::kv_cache(const model_hparams& hp, std::uint32_t n_ctx, kernels::quant_type type)
    : n_ctx_(n_ctx), type_(type), elem_(type == kernels::quant_type::f32 ? 4 : 2), k_dim_(hp.kv_dim()),
      v_dim_(hp.v_dim()), layer_k_(std::size_t{n_ctx} * hp.kv_dim()), layer_v_(std::size_t{n_ctx} * hp.v_dim()),
      k_(layer_k_ * hp.n_layer * elem_), v_(layer_v_ * hp.n_layer * elem_) {
    assert(type == kernels::quant_type::f16 || type == kernels::quant_type::f32);
}

} // namespace sluice::models
