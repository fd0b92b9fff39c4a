// What the stages (serial::GPT, tp1d::GPT, tp2d::GPT, tp3d::GPT) hold and answer alike: the model's
// config, the context, the seed, what recomputation keeps, this rank's parameter shards with their
// values and gradients by name, the gradient listener, and the activations and backward scratch of
// the last batch shape (model/activations.h). A stage derives from it and adds its shapes, its
// forward and its backward pass, its clipping and its shard spec — the teaching content.
#pragma once

#include <cstdint>
#include <functional>

#include "core/context.h"
#include "model/activations.h"
#include "model/config.h"
#include "model/model.h"
#include "model/named_params.h"
#include "model/param_set.h"

namespace optimus::model {

class Stage : public Model {
 public:
  void set_gradient_listener(GradientListener* listener) final { listener_ = listener; }
  ParamSet& params() final { return params_; }
  const ParamSet& params() const final { return params_; }
  const GPTConfig& config() const final { return config_; }
  const core::Context& context() const final { return ctx_; }
  /// What the last forward pass kept (the tests compare it across stages).
  const Activations& activations() const { return acts_; }

 protected:
  /// Checks the config (core::ConfigError); allocates nothing. Keeps the options' recomputation
  /// and initial values (the stage keeps the rest itself).
  Stage(const GPTConfig& config, const core::Context& ctx, uint32_t seed, const StageOptions& options);
  /// This rank's shards as `spec` places them, initialised from Philox under the seed and keyed by
  /// canonical indices, so every layout draws the same weights (unless the options said a
  /// checkpoint's values are loaded next). Called once, by the stage's constructor after its own checks.
  void create_params(const std::function<ShardSpec(const ParamInfo&)>& spec);

  /// The dropout of one site of layer `layer` in the last forward's batch: the part of the
  /// canonical activation's dropout that this rank's slice is (acts_.mine), so every layout drops
  /// the serial run's elements (model/activations.h).
  core::DropoutSpec dropout_spec(int layer, core::DropoutSite site) const;
  /// The residual stream entering block l, as the forward pass keeps it in acts_: the embedding's
  /// output for l = 0, else block l − 1's output; l = L is the last block's output, the final
  /// LayerNorm's input.
  float* residual(int l) const;
  /// Tells the gradient listener, if there is one, that block l's gradients are whole, on the last
  /// part of a step's batch (chapter 6: the data-parallel overlap starts their all-reduce).
  void block_ready(int l) const;
  /// The same once every gradient is whole (the embeddings' last).
  void all_ready() const;

  GPTConfig config_;
  core::Context ctx_;
  uint32_t seed_;
  Recompute recompute_;
  InitialValues values_;
  ParamSet params_;
  ModelParams weights_;  // params_'s values by name
  ModelParams grads_;    // params_'s gradients by name
  GradientListener* listener_ = nullptr;
  Activations acts_;
  BackwardScratch scratch_;
};

}  // namespace optimus::model
