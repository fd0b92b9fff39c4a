// The model of a checkpoint, for the subcommands that read one (eval, sample).
#pragma once

#include <string>

#include "comm/world.h"
#include "model/config.h"

namespace optimus::cli {

/// The checkpoint's model, refused before anything is allocated when this machine cannot hold it at
/// batch B over `ranks` ranks (every rank reads the checkpoint itself: one that cannot fails them all).
/// `fix` ends the refusal: what the caller's user can change, in the caller's own flags.
model::GPTConfig checkpoint_model(comm::World& world, const std::string& checkpoint, int B, int ranks,
                                  const std::string& fix);

}  // namespace optimus::cli
