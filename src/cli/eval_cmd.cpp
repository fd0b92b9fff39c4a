// optimus eval: the mean loss of a checkpoint on consecutive windows of a file, in any layout.
#include <string>

#include "cli/checkpoint_model.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "core/errors.h"
#include "train/checkpointing.h"
#include "train/data.h"
#include "train/device.h"
#include "train/layout.h"
#include "train/memory_check.h"
#include "train/tokenizer_check.h"
#include "train/trainer.h"

namespace optimus::cli {

namespace {

struct EvalArgs {
  std::string checkpoint, data;
  train::Layout layout = train::Layout::serial;
  int batch = 8, seq = 128, batches = 1;
  train::DeviceOptions device;
};

void add_eval(CLI::App* cmd, EvalArgs& a) {
  cmd->add_option("--checkpoint", a.checkpoint, "checkpoint folder (config.json + model.safetensors)")->required();
  cmd->add_option("--data", a.data, "text file, or token file of the checkpoint's tokenizer")->required();
  cmd->add_option("--batch", a.batch, "sequences per batch B")->capture_default_str();
  cmd->add_option("--seq", a.seq, "sequence length T")->capture_default_str();
  cmd->add_option("--batches", a.batches, "batches: batch k row b reads tokens [(kB+b)T, (kB+b+1)T]")
      ->capture_default_str();
  add_layout_option(cmd, a.layout);
  train::add_device_flags(cmd, a.device);
}

int run_eval(comm::World& world, EvalArgs& a, CLI::App&) {
  const int B = a.batch, T = a.seq;
  train::require_fits(a.layout, world.size(), model::StageOptions{});
  if (B <= 0 || T <= 0 || a.batches <= 0) throw core::ConfigError("--batch, --seq and --batches must be positive");
  train::require_batch_fits(a.layout, B, world.size());
  const model::GPTConfig config = checkpoint_model(world, a.checkpoint);
  if (a.device.device == "cpu") {  // a GPU holds the model: the host holds little more than the data
    require_memory_to_evaluate(
        world, a.checkpoint, config, {.layout = a.layout, .world_size = world.size(), .B = B, .T = T}, "evaluating",
        " at --batch " + std::to_string(B), "use a smaller --batch or --seq, more processes, or another checkpoint");
  }
  if (T > config.n_positions) {
    throw core::ConfigError("--seq " + std::to_string(T) + " exceeds the checkpoint's n_positions " +
                            std::to_string(config.n_positions) + "; use --seq " + std::to_string(config.n_positions) +
                            " or less");
  }
  train::TokenFile data;
  train::CheckpointTokenizer tokenizer;
  const uint64_t max_bytes = train::data_bytes_per_process(world);
  const std::string checkpoint = "the checkpoint " + a.checkpoint;
  world.agree_on([&] {
    data = train::TokenFile::load(a.data, world.size(), max_bytes);
    tokenizer = train::checkpoint_tokenizer(a.checkpoint);
    train::require_checkpoint_reads(tokenizer, checkpoint, data, "--data");  // the ids of the model's tokenizer,
    train::require_vocabulary_holds(data, config.vocab_size, checkpoint);    // each a row of its wte
    train::require_tokens_for_eval(data, B, T, a.batches);
  });
  train::note_unknown_tokenizer(world, tokenizer, checkpoint);
  const core::Context ctx = train::make_context(a.device, world);
  std::unique_ptr<comm::Communicator> device;  // outlives the model
  // Built without initial values: the checkpoint's are loaded next.
  const model::StageOptions loaded{.values = model::InitialValues::loaded};
  const train::LayoutModel built =
      train::build_model(a.layout, config, 0, world, ctx, a.device.device_comm(), loaded, device);
  world.agree_on([&] { train::load_weights(a.checkpoint, config, built.model->params()); });
  world.print0("loss %.10g\n", train::evaluate(*built.model, data, B, T, a.batches));
  return 0;
}

}  // namespace

Subcommand eval_command(CLI::App& optimus) {
  return subcommand<EvalArgs>(optimus, "eval", "print the mean loss of a checkpoint on consecutive windows of a file",
                              add_eval, run_eval);
}

}  // namespace optimus::cli
