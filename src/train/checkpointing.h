// Checkpoints of a training run: the model in the Hugging Face GPT-2 layout
// (config.json + model.safetensors) and the training state (AdamW moments, step, seed, layout) in
// train_state.safetensors, all canonical tensors, so a run can resume under another layout.
#pragma once

#include <cstdint>
#include <string>

#include "comm/world.h"
#include "model/config.h"
#include "model/gather.h"
#include "model/param_set.h"
#include "train/optimizer.h"

namespace optimus::train {

/// What a run needs besides weights and moments to continue exactly where it stopped.
struct TrainState {
  int step = 0;           // steps completed; the next batch is sample_batch(..., step)
  uint32_t seed = 0;      // initialisation, dropout and data seed
  std::string layout;     // the layout that wrote it (train::to_string), for information
  std::string flags;      // the settings a bitwise continuation depends on, "batch=8 seq=128 …"
  int data_parallel = 0;  // the copies of the model that trained it (0: not recorded)
  std::string tokenizer;  // whose ids the model reads (model/checkpoint.h, kTokenizerKey); "": not known
};

/// Collective over the world: gathers every shard into canonical tensors over `model_group` (the
/// ranks of one model copy, spec_of's ranks; the world when null) and rank 0 writes config.json,
/// model.safetensors and (when opt is given) train_state.safetensors into dir, each tensor as soon
/// as it is gathered (a rank holds one canonical tensor at a time besides its shards); the state's
/// tokenizer goes into model.safetensors' metadata. A failure to write on rank 0 is a ConfigError on
/// every rank.
void save_checkpoint(const std::string& dir, const model::GPTConfig& config, const model::ParamSet& params,
                     const model::SpecOfRank& spec_of, comm::World& world, const AdamW* opt, const TrainState& state,
                     comm::Communicator* model_group = nullptr);

/// Loads a checkpoint's model into params: each rank maps model.safetensors and copies its shard of
/// each tensor straight from the mapping, checking the tensor finite, then lets its pages go (its
/// config must equal `config`; ConfigError otherwise, as for a missing, misshapen or non-finite tensor).
void load_weights(const std::string& dir, const model::GPTConfig& config, model::ParamSet& params);

/// Loads train_state.safetensors into opt and returns the state; ConfigError if it is missing or
/// does not match the parameters.
TrainState load_train_state(const std::string& dir, const model::ParamSet& params, AdamW& opt);

/// Collective: writes the canonical gradients of `params` (as the optimizer last used them) to
/// dir/gradients.safetensors, under the parameters' names, on rank 0 — for comparing layouts
/// (scripts/compare.sh). A failure to write is a ConfigError on every rank.
void save_gradients(const std::string& dir, const model::ParamSet& params, const model::SpecOfRank& spec_of,
                    comm::World& world, comm::Communicator* model_group = nullptr);

/// The config.json of a checkpoint directory.
model::GPTConfig load_checkpoint_config(const std::string& dir);

}  // namespace optimus::train
