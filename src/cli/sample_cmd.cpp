// optimus sample: generate text from a checkpoint (one process, the serial model).
#include <string>

#include "cli/checkpoint_model.h"
#include "cli/commands.h"
#include "core/errors.h"
#include "serial/gpt.h"
#include "train/checkpointing.h"
#include "train/sample.h"

namespace optimus::cli {

namespace {

struct SampleArgs {
  std::string checkpoint, prompt = "\n";
  train::SampleOptions options;
};

void add_sample(CLI::App* cmd, SampleArgs& a) {
  cmd->add_option("--checkpoint", a.checkpoint, "checkpoint folder")->required();
  cmd->add_option("--prompt", a.prompt, "text to continue")->capture_default_str();
  cmd->add_option("--tokens", a.options.tokens, "tokens to generate (bytes, or the checkpoint's tokenizer's)")
      ->capture_default_str();
  cmd->add_option("--temperature", a.options.temperature, "softmax temperature (> 0)")->capture_default_str();
  cmd->add_option("--top-k", a.options.top_k, "sample among the k most likely bytes (0: all)")->capture_default_str();
  cmd->add_option("--seed", a.options.seed, "sampling seed")->capture_default_str();
}

int run_sample(comm::World& world, SampleArgs& a, CLI::App&) {
  const train::SampleOptions& s = a.options;
  if (!(s.temperature > 0.0f)) throw core::ConfigError("--temperature must be positive");
  if (s.tokens < 0) throw core::ConfigError("--tokens must be 0 or more, but is " + std::to_string(s.tokens));
  if (s.top_k < 0) {
    throw core::ConfigError("--top-k must be 0 (the whole vocabulary) or more, but is " + std::to_string(s.top_k));
  }
  const model::GPTConfig config = checkpoint_model(world, a.checkpoint);
  // A pass of one sequence of the model's n_positions tokens (T 0), the serial model on this process.
  require_memory_to_evaluate(world, a.checkpoint, config, {.B = 1, .T = 0}, "sampling from", "",
                             "sample on a machine with more memory, or use another checkpoint");
  serial::GPT gpt(config, core::cpu_context(), 0, {.values = model::InitialValues::loaded});
  train::load_weights(a.checkpoint, config, gpt.params());
  const auto tokenizer = train::tokenizer_in(a.checkpoint);  // the checkpoint's own, else bytes
  world.print0("%s%s\n", a.prompt.c_str(), train::sample_text(gpt, a.prompt, s, tokenizer.get()).c_str());
  return 0;
}

}  // namespace

Subcommand sample_command(CLI::App& optimus) {
  return subcommand<SampleArgs>(optimus, "sample", "generate text from a checkpoint", add_sample, run_sample);
}

}  // namespace optimus::cli
