// optimus sample: generate text from a checkpoint (one process, the serial model).
#include "cli/checkpoint_model.h"
#include "cli/commands.h"
#include "core/errors.h"
#include "serial/gpt.h"
#include "train/checkpointing.h"

namespace optimus::cli {

void add_sample(CLI::App& optimus, SampleCommand& c) {
  c.app = optimus.add_subcommand("sample", "generate text from a checkpoint");
  c.app->add_option("--checkpoint", c.checkpoint, "checkpoint folder")->required();
  c.app->add_option("--prompt", c.prompt, "text to continue")->capture_default_str();
  c.app->add_option("--tokens", c.options.tokens, "tokens to generate (bytes, or the checkpoint's tokenizer's)")
      ->capture_default_str();
  c.app->add_option("--temperature", c.options.temperature, "softmax temperature (> 0)")->capture_default_str();
  c.app->add_option("--top-k", c.options.top_k, "sample among the k most likely bytes (0: all)")->capture_default_str();
  c.app->add_option("--seed", c.options.seed, "sampling seed")->capture_default_str();
}

int run_sample(comm::World& world, const SampleCommand& c) {
  const train::SampleOptions& s = c.options;
  if (!(s.temperature > 0.0f)) throw core::ConfigError("--temperature must be positive");
  if (s.tokens < 0) throw core::ConfigError("--tokens must be 0 or more, but is " + std::to_string(s.tokens));
  if (s.top_k < 0) {
    throw core::ConfigError("--top-k must be 0 (the whole vocabulary) or more, but is " + std::to_string(s.top_k));
  }
  const model::GPTConfig config = checkpoint_model(world, c.checkpoint, 1, 1);
  serial::GPT gpt(config, core::cpu_context(), 0);
  train::load_weights(c.checkpoint, config, gpt.params());
  const auto tokenizer = train::tokenizer_in(c.checkpoint);  // the checkpoint's own, else bytes
  world.print0("%s%s\n", c.prompt.c_str(), train::sample_text(gpt, c.prompt, s, tokenizer.get()).c_str());
  return 0;
}

}  // namespace optimus::cli
