// ParamSet: creation, initialisation and whole-set gradient operations.
#include "model/param_set.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "comm/scalar.h"
#include "core/ops.h"

namespace optimus::model {

void draw_shard(float* values, const ParamInfo& info, const ShardSpec& spec, uint32_t seed) {
  const ShardRows rows(spec);
#pragma omp parallel for schedule(dynamic, 16)
  for (int64_t r = 0; r < rows.rows(); ++r) {
    rows.for_each_run(r, [&](int64_t l, int64_t g, int64_t n) {
      if (g == kPadding) {
        std::fill_n(values + l, n, 0.0f);
      } else {
        initial_values(values + l, info, seed, g, n);
      }
    });
  }
}

namespace {

// t.value = its initial values: drawn in place on the CPU; on a GPU drawn on the host, then copied
// (the same bits on both). A meta context holds no values: there is nothing to draw.
void draw_initial_values(const core::Context& ctx, ParamTensor& t, uint32_t seed) {
  if (ctx.device == core::Device::meta) return;
  if (ctx.device == core::Device::cpu) {
    draw_shard(t.value.data(), t.info, t.spec, seed);
    return;
  }
  std::vector<float> host(static_cast<size_t>(t.value.numel()));
  draw_shard(host.data(), t.info, t.spec, seed);
  core::copy_to_device(ctx, t.value.data(), host.data(), t.value.numel());
}

}  // namespace

ParamSet ParamSet::create(const GPTConfig& config, const core::Context& ctx,
                          const std::function<ShardSpec(const ParamInfo&)>& spec_of, uint32_t seed,
                          InitialValues values) {
  ParamSet set;
  set.ctx = ctx;
  const std::vector<ParamInfo> infos = canonical_parameters(config);
  std::vector<ShardSpec> specs;
  int64_t total = 0;
  for (const ParamInfo& info : infos) {
    specs.push_back(spec_of(info));
    total += specs.back().local_numel();
  }
  // Zero, as after zero_grads: backward accumulates into it. Lazily: a model that only evaluates
  // never touches its gradients, and a training step writes them first (zero_grads).
  set.grads = core::Buffer(*ctx.ledger, core::MemoryCategory::gradients, {total}, ctx.device, core::Fill::zero_lazy);
  int64_t offset = 0;
  for (size_t k = 0; k < infos.size(); ++k) {
    const core::Shape local = specs[k].local_shape();
    ParamTensor t{infos[k], std::move(specs[k]),
                  core::Buffer(*ctx.ledger, core::MemoryCategory::parameters, local, ctx.device),
                  core::BufferView(set.grads.data() + offset, local)};
    offset += local.numel();
    if (values == InitialValues::drawn) draw_initial_values(ctx, t, seed);
    set.position.emplace(t.info.name, set.tensors.size());
    set.tensors.push_back(std::move(t));
  }
  return set;
}

ParamTensor& ParamSet::at(const std::string& name) {
  const auto it = position.find(name);
  if (it == position.end() || it->second >= tensors.size() || tensors[it->second].info.name != name) {
    throw std::out_of_range("no parameter named " + name);
  }
  return tensors[it->second];
}

const ParamTensor& ParamSet::at(const std::string& name) const {
  return const_cast<ParamSet*>(this)->at(name);
}

std::pair<int64_t, int64_t> ParamSet::grad_range(size_t first, size_t last) const {
  if (first >= last) return {0, 0};
  const int64_t begin = tensors[first].grad.data() - grads.data();
  const int64_t end = tensors[last - 1].grad.data() - grads.data() + tensors[last - 1].grad.numel();
  return {begin, end - begin};
}

void ParamSet::zero_grads() {
  core::zero(ctx, grads.data(), grads.numel());
}

double ParamSet::owned_grad_sum_squares(const core::Context& ctx) const {
  double total = 0.0;
  for (const auto& t : tensors) {
    if (!t.spec.owner) continue;
    double s = 0.0;
    core::sum_squares(ctx, &s, t.grad.data(), t.grad.numel());
    total += s;
  }
  return total;
}

void ParamSet::scale_grads(const core::Context& ctx, float s) {
  core::scale(ctx, grads.data(), s, grads.numel());
}

float clip_grad_norm(ParamSet& params, const core::Context& ctx, comm::Communicator* model_group, float max_norm) {
  double sumsq = params.owned_grad_sum_squares(ctx);  // replicated tensors: their owner's copy only
  if (model_group != nullptr) sumsq = comm::all_reduce_scalar(*model_group, ctx, sumsq);
  const double norm = std::sqrt(sumsq);
  if (max_norm > 0.0f) {
    const double coef = static_cast<double>(max_norm) / (norm + 1e-6);
    if (coef < 1.0) params.scale_grads(ctx, static_cast<float>(coef));
  }
  return static_cast<float>(norm);
}

}  // namespace optimus::model
