// The model of a checkpoint, and a forward pass of it checked against this machine's memory.
#include "cli/checkpoint_model.h"

#include <algorithm>

#include "plan/run_peak.h"
#include "train/checkpointing.h"

namespace optimus::cli {

model::GPTConfig checkpoint_model(comm::World& world, const std::string& checkpoint) {
  model::GPTConfig config;
  world.agree_on([&] { config = train::load_checkpoint_config(checkpoint); });
  return config;
}

void require_memory_to_evaluate(comm::World& world, const std::string& checkpoint, const model::GPTConfig& config,
                                train::RunShape pass, const std::string& verb, const std::string& at,
                                const std::string& fix) {
  pass.config = config;
  pass.T = pass.T > 0 ? std::min(pass.T, config.n_positions) : config.n_positions;
  pass.use = train::ModelUse::evaluate;
  model::require_step_sizes(config, {.batch = pass.B, .seq = pass.T, .ranks = pass.world_size});
  train::require_run_memory(
      world, pass, plan::step_peak_bytes,
      verb + " the model of " + checkpoint + " (" + std::to_string(config.num_parameters()) + " parameters)" + at, fix);
}

}  // namespace optimus::cli
