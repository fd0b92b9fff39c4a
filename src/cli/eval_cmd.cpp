// optimus eval: the mean loss of a checkpoint on consecutive windows of a file, in any layout.
#include "cli/checkpoint_model.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "core/errors.h"
#include "train/checkpointing.h"
#include "train/data.h"
#include "train/layout.h"
#include "train/memory_check.h"

namespace optimus::cli {

void add_eval(CLI::App& optimus, EvalCommand& c) {
  c.app = optimus.add_subcommand("eval", "print the mean loss of a checkpoint on consecutive windows of a file");
  c.app->add_option("--checkpoint", c.checkpoint, "checkpoint folder (config.json + model.safetensors)")->required();
  c.app->add_option("--data", c.data, "text file")->required();
  c.app->add_option("--batch", c.batch, "sequences per batch B")->capture_default_str();
  c.app->add_option("--seq", c.seq, "sequence length T")->capture_default_str();
  c.app->add_option("--batches", c.batches, "batches: batch k row b reads tokens [(kB+b)T, (kB+b+1)T]")
      ->capture_default_str();
  add_layout_option(c.app, c.layout);
  train::add_device_flags(c.app, c.device);
}

int run_eval(comm::World& world, const EvalCommand& c) {
  const int B = c.batch, T = c.seq;
  train::require_fits(c.layout, world.size(), model::StageOptions{});
  if (B <= 0 || T <= 0 || c.batches <= 0) throw core::ConfigError("--batch, --seq and --batches must be positive");
  const model::GPTConfig config = checkpoint_model(world, c.checkpoint, B, world.size());
  if (T > config.n_positions) {
    throw core::ConfigError("--seq " + std::to_string(T) + " exceeds the checkpoint's n_positions " +
                            std::to_string(config.n_positions) + "; use --seq " + std::to_string(config.n_positions) +
                            " or less");
  }
  train::require_batch_fits(c.layout, B, world.size());
  train::TokenFile data;
  const uint64_t max_bytes = train::data_bytes_per_process(world);
  world.agree_on([&] {
    data = train::TokenFile::load(c.data, world.size(), max_bytes);
    train::require_tokens_for_eval(data, B, T, c.batches);
  });
  const core::Context ctx = train::make_context(c.device, world);
  std::unique_ptr<comm::Communicator> device;  // outlives the model
  const train::LayoutModel built =
      train::build_model(c.layout, config, 0, world, ctx, c.device.device_comm(), model::StageOptions{}, device);
  world.agree_on([&] { train::load_weights(c.checkpoint, config, built.model->params()); });
  world.print0("loss %.10g\n", train::evaluate(*built.model, data, B, T, c.batches));
  return 0;
}

}  // namespace optimus::cli
