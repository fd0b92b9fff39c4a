// The training loop (chapter 1): sample a batch, forward, backward, clip, AdamW with the schedule,
// log a line, evaluate and checkpoint at intervals — in any layout (train/layout.h), the same loop
// for each. Its output folder holds one run: an earlier run's files are refused unless the run
// resumes or is told to overwrite, and nothing there changes before the run is known to be valid.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "comm/world.h"
#include "model/activation_block.h"
#include "model/config.h"
#include "model/model.h"
#include "train/data.h"
#include "train/device.h"
#include "train/layout.h"
#include "train/memory_check.h"
#include "train/optimizer.h"

namespace optimus::train {

struct TrainOptions {
  Layout layout = Layout::serial;   // train/layout.h
  std::string data;                 // training text (bytes are tokens), a token file, or a folder of them
  std::string val;                  // validation text or token file; empty: the last 10% of data
  std::string tokenizer;            // set from a --data folder: its tokenizer, written into every checkpoint
  std::string data_tokenizer;       // set from the data: whose ids it holds (a fingerprint), in every checkpoint
  std::string out = "runs/latest";  // checkpoint and metrics folder
  std::string resume;               // checkpoint folder to continue from
  std::string init_from;            // checkpoint whose weights (and model) start a new run
  bool overwrite = false;           // an --out holding an earlier run: replace its checkpoints and metrics
  model::StageOptions stage;        // recomputation, sequence parallelism (chapter 5)
  model::GPTConfig model;           // n_positions is also the training sequence length T, unless seq is set
  int grad_accum = 1;               // micro-batches per optimizer step, each batch / grad_accum sequences
  int data_parallel = 1;            // D copies of the model, each on world / D ranks and batch / D sequences
  int seq = 0;                      // T when shorter than the model's n_positions (--init-from); 0: n_positions
  int batch = 8;                    // B
  int steps = 200;                  // total optimizer steps
  int warmup = 20;
  float lr = 1e-3f;
  float min_lr = 1e-4f;
  AdamWOptions adamw;
  float grad_clip = 1.0f;  // <= 0: no clipping
  uint32_t seed = 1337;
  int log_interval = 1;
  int eval_interval = 50;  // 0: only at the end
  int eval_batches = 8;
  int checkpoint_interval = 0;    // 0: only at the end
  int keep = 3;                   // keep the newest K step checkpoints (0: keep all)
  int sample_tokens = 0;          // print a sample of this many bytes at the end
  std::string progress = "auto";  // live (one line rewritten in place), lines, or auto (live on a terminal, 1 process)
  int inject_nan_at_step = 0;     // test-only: at this step (from 1) a NaN appears (0: never) ...
  std::string inject_nan_into = "loss";  // ... in the loss, or in one gradient element ("gradient")
  bool save_gradients = false;           // each step checkpoint also holds the step's gradients (scripts/compare.sh)
  DeviceOptions device;                  // --device, --device-comm (train/device.h)
};

/// The training sequence length T: `seq` when set, else the model's n_positions.
inline int sequence_length(const TrainOptions& o) {
  return o.seq > 0 ? o.seq : o.model.n_positions;
}

/// --init-from: the checkpoint's model (`saved`) becomes the run's. Of the model flags, those named
/// in `given` were set by the user: --layers, --embd and --heads must equal the checkpoint's;
/// --seq is the training T and may be shorter than its n_positions; --dropout, a training setting,
/// replaces its dropout. A mismatch, or a vocabulary too small for byte tokens, is a ConfigError.
void adopt_checkpoint_model(TrainOptions& o, const model::GPTConfig& saved, const std::vector<std::string>& given);

/// Throws ConfigError when `o` asks for two ways to start: --resume with --init-from or --overwrite.
void require_one_way_to_start(const TrainOptions& o);

/// Runs the training described by `o` and returns the process exit code. Rank 0 prints. Before the
/// model is built, a run whose step this machine cannot hold is refused (require_run_memory, with
/// `step_peak` measuring each rank's step: plan::step_peak_bytes from the command).
int train(TrainOptions o, comm::World& world, const StepPeak& step_peak);

/// The folder of the checkpoint after `step` steps: `out/step_000123`.
std::string checkpoint_dir(const std::string& out, int step);

/// The mean loss over `batches` consecutive evaluation windows (dropout off), for any layout's model.
double evaluate(model::Model& gpt, const TokenFile& data, int B, int T, int batches);

}  // namespace optimus::train
