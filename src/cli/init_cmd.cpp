// optimus init: write a freshly initialised checkpoint.
#include <filesystem>
#include <string>

#include "cli/commands.h"
#include "cli/flags.h"
#include "core/errors.h"
#include "model/config.h"
#include "serial/gpt.h"
#include "train/checkpointing.h"
#include "train/layout.h"
#include "train/memory_check.h"

namespace optimus::cli {

namespace {

struct InitArgs {
  model::GPTConfig model;
  std::string out;
  uint32_t seed = 1337;
};

void add_init(CLI::App* cmd, InitArgs& a) {
  add_model_flags(cmd, a.model);
  cmd->add_option("--seed", a.seed, "initialisation seed")->capture_default_str();
  cmd->add_option("--out", a.out, "checkpoint folder to write")->required();
}

int run_init(comm::World& world, InitArgs& a, CLI::App&) {
  a.model.validate();
  train::require_memory(world, train::step_bytes_lower_bound(a.model, 0, 1, train::ModelUse::evaluate), "this model",
                        "use smaller --layers, --embd or --seq");
  // Never overwrite: a folder that already holds a checkpoint, or a part of one, is refused.
  for (const char* file : {"model.safetensors", "config.json"}) {
    std::error_code ec;
    if (std::filesystem::exists(std::filesystem::path(a.out) / file, ec) || ec) {
      throw core::ConfigError("--out " + a.out + " already holds a checkpoint (" + file +
                              "); choose another folder or remove it");
    }
  }
  serial::GPT gpt(a.model, core::cpu_context(), a.seed);
  train::save_checkpoint(a.out, a.model, gpt.params(), gpt.spec_of(), world, nullptr,
                         train::TrainState{0, a.seed, train::to_string(train::Layout::serial), ""});
  world.print0("wrote a freshly initialised model (%lld parameters) to %s\n", a.model.num_parameters(), a.out.c_str());
  return 0;
}

}  // namespace

Subcommand init_command(CLI::App& optimus) {
  return subcommand<InitArgs>(optimus, "init", "write a freshly initialised checkpoint", add_init, run_init);
}

}  // namespace optimus::cli
