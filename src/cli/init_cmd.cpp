// optimus init: write a freshly initialised checkpoint.
#include <filesystem>

#include "cli/commands.h"
#include "cli/flags.h"
#include "core/errors.h"
#include "serial/gpt.h"
#include "train/checkpointing.h"
#include "train/layout.h"
#include "train/memory_check.h"

namespace optimus::cli {

void add_init(CLI::App& optimus, InitCommand& c) {
  c.app = optimus.add_subcommand("init", "write a freshly initialised checkpoint");
  add_model_flags(c.app, c.model);
  c.app->add_option("--seed", c.seed, "initialisation seed")->capture_default_str();
  c.app->add_option("--out", c.out, "checkpoint folder to write")->required();
}

int run_init(comm::World& world, InitCommand& c) {
  c.model.validate();
  train::require_memory(world, train::step_bytes_lower_bound(c.model, 0, 1, train::ModelUse::evaluate), "this model",
                        "use smaller --layers, --embd or --seq");
  // Never overwrite: a folder that already holds a checkpoint, or a part of one, is refused.
  for (const char* file : {"model.safetensors", "config.json"}) {
    std::error_code ec;
    if (std::filesystem::exists(std::filesystem::path(c.out) / file, ec) || ec) {
      throw core::ConfigError("--out " + c.out + " already holds a checkpoint (" + file +
                              "); choose another folder or remove it");
    }
  }
  serial::GPT gpt(c.model, core::cpu_context(), c.seed);
  train::save_checkpoint(c.out, c.model, gpt.params(), gpt.spec_of(), world, nullptr,
                         train::TrainState{0, c.seed, train::to_string(train::Layout::serial), ""});
  world.print0("wrote a freshly initialised model (%lld parameters) to %s\n", c.model.num_parameters(), c.out.c_str());
  return 0;
}

}  // namespace optimus::cli
