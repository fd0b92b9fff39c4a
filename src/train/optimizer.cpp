// AdamW and the schedule.
#include "train/optimizer.h"

#include <algorithm>
#include <cmath>

namespace optimus::train {

AdamW::AdamW(const model::ParamSet& params, const core::Context& ctx, AdamWOptions options)
    : ctx_(ctx), options_(options) {
  for (const auto& t : params.tensors) {  // the moments start at 0: the first update reads them
    m_.emplace_back(*ctx.ledger, core::MemoryCategory::optimizer, t.spec.local_shape(), ctx.device, core::Fill::zero);
    v_.emplace_back(*ctx.ledger, core::MemoryCategory::optimizer, t.spec.local_shape(), ctx.device, core::Fill::zero);
  }
}

void AdamW::update(model::ParamSet& params, float lr) {
  ++step_;
  for (size_t i = 0; i < params.tensors.size(); ++i) {
    auto& t = params.tensors[i];
    core::AdamWConfig cfg;
    cfg.lr = lr;
    cfg.beta1 = options_.beta1;
    cfg.beta2 = options_.beta2;
    cfg.eps = options_.eps;
    cfg.weight_decay = t.info.is_matrix() ? options_.weight_decay : 0.0f;  // 2-D weights only
    cfg.step = step_;
    core::adamw_update(ctx_, t.value.data(), m_[i].data(), v_[i].data(), t.grad.data(), t.value.numel(), cfg);
  }
}

float learning_rate(int step, int total, int warmup, float max_lr, float min_lr) {
  if (warmup > 0 && step < warmup) return max_lr * static_cast<float>(step + 1) / static_cast<float>(warmup);
  if (total <= warmup + 1) return max_lr;
  const double progress = static_cast<double>(step - warmup) / static_cast<double>(total - 1 - warmup);
  const double cosine = 0.5 * (1.0 + std::cos(M_PI * std::min(1.0, progress)));
  return static_cast<float>(min_lr + (max_lr - min_lr) * cosine);
}

}  // namespace optimus::train
