// optimus init: write a freshly initialised checkpoint.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/flags.h"
#include "core/errors.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "model/param_set.h"
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
  cmd->add_option("--vocab", a.model.vocab_size, "vocabulary size V (rows of wte; 256: bytes, 50257: GPT-2's BPE)")
      ->capture_default_str();
  cmd->add_option("--seed", a.seed, "initialisation seed")->capture_default_str();
  cmd->add_option("--out", a.out, "checkpoint folder to write")->required();
}

// Draws each canonical tensor whole and writes it at once, one tensor at a time: no model is built,
// and the disk takes a tensor while the next is drawn. The values are the serial model's (its shard
// spec is the whole tensor), so every layout starts from this checkpoint's weights. Trained on
// nothing, the model records no tokenizer of its own ("none"): it takes any whose ids fit its vocabulary.
void write_initial_model(const InitArgs& a) {
  const std::vector<model::ParamInfo> infos = model::canonical_parameters(a.model);
  std::vector<float> values;
  const auto draw = [&](size_t k) {
    values.resize(static_cast<size_t>(infos[k].shape.numel()));
    model::draw_shard(values.data(), infos[k], model::ShardSpec::whole(infos[k].shape), a.seed);
    return values.data();
  };
  model::save_model(a.out, a.model, draw, {{model::kTokenizerKey, model::kNoTokenizer}});
}

int run_init(comm::World& world, InitArgs& a, CLI::App&) {
  a.model.validate();
  // write_initial_model holds one canonical tensor at a time: the largest is the need. Every block
  // has the same shapes, so a model of one block has the largest (and the list stays short).
  model::GPTConfig one_block = a.model;
  one_block.n_layer = 1;
  double largest = 0;
  for (const model::ParamInfo& p : model::canonical_parameters(one_block)) {
    largest = std::max(largest, 4.0 * static_cast<double>(p.shape.numel()));
  }
  train::require_memory(world, largest, "initialising this model (its largest tensor, drawn whole)",
                        "use a smaller --embd, --seq or --vocab");
  // Never overwrite: a folder that already holds a checkpoint, or a part of one, is refused.
  for (const char* file : {"model.safetensors", "config.json"}) {
    std::error_code ec;
    if (std::filesystem::exists(std::filesystem::path(a.out) / file, ec) || ec) {
      throw core::ConfigError("--out " + a.out + " already holds a checkpoint (" + file +
                              "); choose another folder or remove it");
    }
  }
  world.agree_on([&] {
    if (world.rank() == 0) write_initial_model(a);
  });
  world.print0("wrote a freshly initialised model (%lld parameters) to %s\n", a.model.num_parameters(), a.out.c_str());
  return 0;
}

}  // namespace

Subcommand init_command(CLI::App& optimus) {
  return subcommand<InitArgs>(optimus, "init", "write a freshly initialised checkpoint", add_init, run_init);
}

}  // namespace optimus::cli
