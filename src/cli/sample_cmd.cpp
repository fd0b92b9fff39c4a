// optimus sample: generate text from a checkpoint (one process, the serial model).
#include <charconv>
#include <cstdio>
#include <string>
#include <utility>

#include "cli/checkpoint_model.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "core/errors.h"
#include "model/checkpoint.h"
#include "serial/gpt.h"
#include "train/checkpointing.h"
#include "train/sample.h"
#include "train/stop_signals.h"
#include "train/tokenizer_check.h"

namespace optimus::cli {

namespace {

struct SampleArgs {
  std::string checkpoint, prompt = "\n";
  train::SampleOptions options;
};

void add_sample(CLI::App* cmd, SampleArgs& a) {
  cmd->add_option("--checkpoint", a.checkpoint, "checkpoint folder")->required();
  cmd->add_option("--prompt", a.prompt, "text to continue")->capture_default_str();
  cmd->add_option("--tokens", a.options.tokens,
                  "tokens to generate (bytes, or the checkpoint's tokenizer's); printed as they are made, and "
                  "SIGTERM or SIGUSR1 ends the sample after the token in hand (exit code 75)")
      ->capture_default_str();
  cmd->add_option("--temperature", a.options.temperature, "softmax temperature (> 0)")->capture_default_str();
  cmd->add_option("--top-k", a.options.top_k, "sample among the k most likely tokens (0: all)")->capture_default_str();
  cmd->add_option("--seed", a.options.seed, "sampling seed")->capture_default_str();
}

// The prompt is encoded and the sample decoded by the checkpoint's tokenizer files, or as bytes
// without them: those must be the tokenizer it was trained on.
void require_own_tokenizer(const comm::World& world, const std::string& dir) {
  const train::CheckpointTokenizer t = train::checkpoint_tokenizer(dir);  // its files, if any, are its tokenizer
  if (!t.has_files && !t.fingerprint.empty() && t.fingerprint != model::kByteTokenizer &&
      t.fingerprint != model::kNoTokenizer) {
    throw core::ConfigError("the checkpoint " + dir + " was trained on tokenizer " + t.fingerprint +
                            ", but holds no vocab.json and merges.txt to turn text into its ids and back; copy "
                            "that tokenizer's files into " +
                            dir);
  }
  train::note_unknown_tokenizer(world, t, "the checkpoint " + dir);
}

int run_sample(comm::World& world, SampleArgs& a, CLI::App&) {
  const train::SampleOptions& s = a.options;
  require_path_length("--checkpoint", a.checkpoint);
  if (!(s.temperature > 0.0f)) {
    char value[32];
    throw core::ConfigError("--temperature must be positive, but is " +
                            std::string(value, std::to_chars(value, value + sizeof value, s.temperature).ptr));
  }
  if (s.tokens < 0) throw core::ConfigError("--tokens must be 0 or more, but is " + std::to_string(s.tokens));
  if (s.top_k < 0) {
    throw core::ConfigError("--top-k must be 0 (the whole vocabulary) or more, but is " + std::to_string(s.top_k));
  }
  const train::StopSignals stop;  // from here on SIGTERM and SIGUSR1 end the sample, not the process
  const model::GPTConfig config = checkpoint_model(world, a.checkpoint);
  // A pass of one sequence of the model's n_positions tokens (T 0), the serial model on this process;
  // sample has one process and one sequence: only the checkpoint or the machine can change.
  require_memory_to_evaluate(world, a.checkpoint, config, {.B = 1, .T = 0}, "sampling from", "",
                             "sample runs the whole model in one process, so use another checkpoint or a "
                             "machine with more memory");
  require_own_tokenizer(world, a.checkpoint);
  serial::GPT gpt(config, core::cpu_context(), 0, {.values = model::InitialValues::loaded});
  train::load_weights(a.checkpoint, config, gpt.params());
  const auto tokenizer = train::tokenizer_in(a.checkpoint);  // the checkpoint's own, else bytes
  // Rank 0 prints the prompt and then each token as it is made; the prompt waits for the first token,
  // so a prompt the model cannot read (refused by sample_text) prints nothing.
  const bool prints = world.rank() == 0;
  bool started = false;
  auto print = [&](const std::string& piece) {
    if (!prints) return;
    if (!std::exchange(started, true)) train::print_text(a.prompt);
    train::print_text(piece);
  };
  const train::Sample sample = train::sample_text(gpt, a.prompt, s, tokenizer.get(), {.on_text = print, .stop = &stop});
  if (prints) train::print_text(started ? "\n" : a.prompt + "\n");
  if (sample.stopped_by == 0) return 0;
  if (prints) {  // stdout holds the text alone
    std::fprintf(stderr, "stopped by %s after %d of %d tokens (exit code %d)\n",
                 train::StopSignals::name(sample.stopped_by), sample.tokens, s.tokens, train::kExitStopped);
  }
  return train::kExitStopped;
}

}  // namespace

Subcommand sample_command(CLI::App& optimus) {
  return subcommand<SampleArgs>(optimus, "sample", "generate text from a checkpoint", add_sample, run_sample);
}

}  // namespace optimus::cli
