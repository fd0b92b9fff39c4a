// The model of a checkpoint, for the subcommands that read one (eval, sample), and the memory check
// of a forward pass of it.
#pragma once

#include <string>

#include "comm/world.h"
#include "model/config.h"
#include "train/memory_check.h"

namespace optimus::cli {

/// The checkpoint's model (every rank reads config.json itself: one that cannot fails them all).
model::GPTConfig checkpoint_model(comm::World& world, const std::string& checkpoint);

/// Collective: refuses, before anything is allocated, a forward pass of `config`, the model of
/// `checkpoint`, that this machine's memory cannot hold (train::require_run_memory, measured by
/// plan::step_peak_bytes). `pass` gives the layout, the world and the batch; a T of 0, or past the
/// model's n_positions, is measured at n_positions (the command refuses a T past it in a sentence of
/// its own). The message names the run as `verb` the model (its folder and size) `at` ("evaluating",
/// " at --batch 8"); `fix` says what to change.
void require_memory_to_evaluate(comm::World& world, const std::string& checkpoint, const model::GPTConfig& config,
                                train::RunShape pass, const std::string& verb, const std::string& at,
                                const std::string& fix);

}  // namespace optimus::cli
