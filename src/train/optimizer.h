// AdamW for a ParamSet (chapter 1): one pair of moment buffers per local shard, weight decay on
// 2-D weights only (not biases or LayerNorm parameters), and the learning-rate schedule (linear
// warm-up, then cosine decay to a floor).
#pragma once

#include <vector>

#include "core/context.h"
#include "core/ops.h"
#include "model/param_set.h"

namespace optimus::train {

struct AdamWOptions {
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0.1f;
};

class AdamW {
 public:
  AdamW(const model::ParamSet& params, const core::Context& ctx, AdamWOptions options);

  /// One update of every parameter with learning rate lr; increments step().
  void update(model::ParamSet& params, float lr);

  int step() const { return step_; }
  void set_step(int s) { step_ = s; }
  const AdamWOptions& options() const { return options_; }
  core::Buffer& m(size_t i) { return m_[i]; }
  core::Buffer& v(size_t i) { return v_[i]; }
  const core::Buffer& m(size_t i) const { return m_[i]; }
  const core::Buffer& v(size_t i) const { return v_[i]; }

 private:
  core::Context ctx_;
  AdamWOptions options_;
  std::vector<core::Buffer> m_, v_;  // first and second moments, shaped like each shard
  int step_ = 0;
};

/// Learning rate at `step` (0-based) of `total`: linear warm-up over `warmup` steps to max_lr, then
/// cosine decay to min_lr at the last step.
float learning_rate(int step, int total, int warmup, float max_lr, float min_lr);

}  // namespace optimus::train
