// `optimus plan`: what one training step of a layout costs each rank, read from the meta device in
// one process, for a world of any size — memory by category, FLOPs and bytes by kind of op, and each
// communicator's collectives (calls, bytes, group size). No time model: it reports the ledgers, not
// seconds. Every rank of a layout holds blocks of the same size, so a few ranks stand for all.
#pragma once

#include <string>
#include <vector>

#include "model/config.h"

namespace optimus::plan {

struct PlanOptions {
  std::string layout = "serial";  // serial, 1d or 2d
  int ranks = 1;                  // P: 1, p, or q·q
  model::GPTConfig config;        // the model's shapes (dropout as given)
  int batch = 1;                  // B sequences of config.n_positions tokens
  bool json = false;              // one JSON object instead of tables
};

/// The ranks a plan runs: every rank when P <= 16, else the first and the last.
std::vector<int> ranks_to_run(int P);

/// Runs one training step of each rank of ranks_to_run on meta and returns the report: per rank,
/// memory by category (peak, and held between steps), the op ledger and the communication ledger,
/// then the busiest rank (the largest peak memory; ties go to the lowest rank). A layout, world or
/// batch that does not fit is a core::ConfigError.
std::string plan_report(const PlanOptions& options);

}  // namespace optimus::plan
