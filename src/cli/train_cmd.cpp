// optimus train: train a GPT on a text file (chapter 1; the trainer is train/trainer.h).
#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "cli/flags.h"
#include "core/errors.h"
#include "plan/run_peak.h"
#include "train/checkpointing.h"
#include "train/json_config.h"
#include "train/trainer.h"

namespace optimus::cli {

namespace {

struct TrainArgs {
  train::TrainOptions options;
  std::string config;  // --config: a JSON file of flags
};

// Where the run's data, checkpoints and starting point come from.
void add_run_files(CLI::App* cmd, train::TrainOptions& t) {
  cmd->add_option("--data", t.data,
                  "training text file (its bytes are the tokens), token file, or a folder written by optimus "
                  "tokenize (its train.tok, val.tok and tokenizer); required");
  cmd->add_option("--val", t.val, "validation text or token file (default: the last 10% of --data)");
  cmd->add_option("--out", t.out, "folder for checkpoints and metrics.jsonl")->capture_default_str();
  cmd->add_option("--resume", t.resume, "checkpoint folder to continue from");
  cmd->add_option("--init-from", t.init_from,
                  "checkpoint folder (ours or saved by transformers) whose weights start a new run: step 0, "
                  "fresh optimizer; the model is read from it (model flags may be omitted, or must match; "
                  "--seq may be shorter than its n_positions)");
  cmd->add_flag("--overwrite", t.overwrite,
                "start afresh in an --out that holds an earlier run, removing its checkpoints and metrics");
}

// The optimizer's settings and the batch.
void add_optimization(CLI::App* cmd, train::TrainOptions& t) {
  cmd->add_option("--batch", t.batch, "sequences per step B")->capture_default_str();
  cmd->add_option("--grad-accum", t.grad_accum,
                  "micro-batches per step: each pass runs on batch / grad-accum sequences and the gradients add "
                  "up to the whole batch's")
      ->capture_default_str();
  cmd->add_option("--steps", t.steps, "optimizer steps")->capture_default_str();
  cmd->add_option("--warmup", t.warmup,
                  "linear warm-up steps to --lr, then a cosine decay to --min-lr at the last step (a run of fewer "
                  "--steps ends on the ramp)")
      ->capture_default_str();
  cmd->add_option("--lr", t.lr, "peak learning rate")->capture_default_str();
  cmd->add_option("--min-lr", t.min_lr,
                  "learning rate at the end of the cosine decay, at most --lr (default: 1e-4, or a tenth of --lr where that is lower)");
  cmd->add_option("--weight-decay", t.adamw.weight_decay, "AdamW weight decay (2-D weights only)")
      ->capture_default_str();
  cmd->add_option("--beta1", t.adamw.beta1, "AdamW beta1")->capture_default_str();
  cmd->add_option("--beta2", t.adamw.beta2, "AdamW beta2")->capture_default_str();
  cmd->add_option("--grad-clip", t.grad_clip, "clip the global gradient norm to this (0: off)")->capture_default_str();
  cmd->add_option("--seed", t.seed, "seed of initialisation, dropout and data")->capture_default_str();
}

// What the run reports and keeps as it goes.
void add_reporting(CLI::App* cmd, train::TrainOptions& t) {
  cmd->add_option("--log-interval", t.log_interval, "print a line every N steps")->capture_default_str();
  cmd->add_option("--eval-interval", t.eval_interval, "validate every N steps (0: at the end)")->capture_default_str();
  cmd->add_option("--eval-batches", t.eval_batches, "validation batches")->capture_default_str();
  cmd->add_option("--checkpoint-interval", t.checkpoint_interval, "save every N steps (0: at the end)")
      ->capture_default_str();
  cmd->add_option("--keep", t.keep, "keep the newest K step checkpoints (0: all)")->capture_default_str();
  cmd->add_option("--sample", t.sample_tokens,
                  "print a sample of N tokens (bytes, or the tokenizer's) at the end, as they are made; SIGTERM or "
                  "SIGUSR1 cuts it short and the finished run still exits 0")
      ->capture_default_str();
  cmd->add_option("--progress", t.progress,
                  "live (one line rewritten in place), lines, or auto: live when one process writes to a terminal "
                  "(under mpirun every rank sees a terminal, so auto means lines there: pass live)")
      ->capture_default_str();
  cmd->add_flag("--save-gradients", t.save_gradients,
                "each checkpoint also holds its step's gradients (gradients.safetensors), for scripts/compare.sh");
  // Test-only (hidden from --help): the robustness tests' way to make a loss or a gradient NaN.
  cmd->add_option("--inject-nan-at-step", t.inject_nan_at_step)->group("");
  cmd->add_option("--inject-nan-into", t.inject_nan_into)->group("");
}

void add_train(CLI::App* cmd, TrainArgs& a) {
  train::TrainOptions& t = a.options;
  add_layout_option(cmd, t.layout);
  add_memory_flags(cmd, t.stage);
  add_overlap_flag(cmd, t.stage);
  add_placement_option(cmd, t.stage);
  cmd->add_option("--data-parallel", t.data_parallel,
                  "copies of the model D: each runs the layout on processes / D ranks and batch / D sequences; "
                  "their gradients are summed")
      ->capture_default_str();
  add_run_files(cmd, t);
  add_model_flags(cmd, t.model);
  add_optimization(cmd, t);
  add_reporting(cmd, t);
  cmd->add_option("--config", a.config,
                  "JSON file of flag: value pairs, e.g. {\"layers\": 2, \"lr\": 3e-3}; flags given on the "
                  "command line win");
  train::add_device_flags(cmd, t.device);
}

// A tenth of x, taken of its shortest decimal, so that a tenth of 1e-3 is the float 1e-4 exactly.
float tenth(float x) {
  char text[32];
  return static_cast<float>(
      std::strtod(std::string(text, std::to_chars(text, text + sizeof text, x).ptr).c_str(), nullptr) / 10);
}

int run_train(comm::World& world, TrainArgs& a, CLI::App& cmd) {
  train::TrainOptions& t = a.options;
  require_path_length("--config", a.config);
  if (!a.config.empty()) train::apply_json_config(cmd, a.config);
  for (const auto& [flag, path] : {std::pair{"--data", &t.data},
                                   {"--val", &t.val},
                                   {"--out", &t.out},
                                   {"--resume", &t.resume},
                                   {"--init-from", &t.init_from}}) {
    require_path_length(flag, *path);
  }
  // Not given (on the command line or in --config): 1e-4, or a tenth of --lr where that is lower.
  if (cmd.get_option("--min-lr")->count() == 0) t.min_lr = std::min(t.min_lr, tenth(t.lr));
  if (t.data.empty()) throw core::ConfigError("--data is required (on the command line or in --config); see --help");
  train::require_one_way_to_start(t);  // before --init-from's checkpoint is read
  if (!t.init_from.empty()) {
    std::vector<std::string> given;
    for (const char* flag : {"--layers", "--embd", "--heads", "--seq", "--dropout"}) {
      if (cmd.get_option(flag)->count() > 0) given.emplace_back(flag);
    }
    model::GPTConfig saved;
    world.agree_on([&] { saved = train::load_checkpoint_config(t.init_from); });
    train::adopt_checkpoint_model(t, saved, given);
  }
  return train::train(t, world, plan::step_peak_bytes);  // the memory check measures the step on meta
}

}  // namespace

Subcommand train_command(CLI::App& optimus) {
  return subcommand<TrainArgs>(optimus, "train", "train a GPT on a text file", add_train, run_train);
}

}  // namespace optimus::cli
