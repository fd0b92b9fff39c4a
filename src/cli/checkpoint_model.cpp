// The model of a checkpoint, checked against this machine's memory.
#include "cli/checkpoint_model.h"

#include "train/checkpointing.h"
#include "train/memory_check.h"

namespace optimus::cli {

model::GPTConfig checkpoint_model(comm::World& world, const std::string& checkpoint, int B, int ranks,
                                  const std::string& fix) {
  model::GPTConfig config;
  world.agree_on([&] { config = train::load_checkpoint_config(checkpoint); });
  train::require_memory(world, train::step_bytes_lower_bound(config, B, ranks, train::ModelUse::evaluate),
                        "the model of " + checkpoint + " (" + std::to_string(config.num_parameters()) + " parameters)",
                        fix);
  model::require_step_sizes(config, {.batch = B, .seq = config.n_positions, .ranks = ranks});
  return config;
}

}  // namespace optimus::cli
