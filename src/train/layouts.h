// The layouts a run can use (serial, 1d, 2d): one place that checks the world against the layout
// and builds the model, so train, eval and bench share it. The model types have
// the same interface (forward, backward, clip_gradients, params, spec_of), so the code that uses
// them is written once, as templates. Here too the choice of communicator: the World's MPI one on
// the CPU; on a GPU a device communicator (NCCL or host-staged, comm/device_comm.h) over the same
// ranks, from which the grids split their row and column groups.
#pragma once

#include <mpi.h>

#include <cstdio>
#include <memory>
#include <string>
#include <utility>

#include "comm/device_comm.h"
#include "comm/grid.h"
#include "comm/world.h"
#include "core/errors.h"
#include "model/config.h"
#include "serial/gpt.h"
#include "tp1d/gpt.h"
#include "tp2d/gpt.h"
#include "tp2d/shard_2d.h"

namespace optimus::train {

/// The communicator a parallel model computes with, for memory on `ctx`: the World's own (MPI) on
/// a CPU context; on a CUDA context a device communicator over the same ranks, named "world" and
/// recording into the process's ledger like the World's, NCCL or staged as `device_comm` resolves
/// (collective; a forced nccl that cannot work is a ConfigError on every rank); rank 0 says which on
/// stderr, in one line. `owned` keeps a device communicator alive; it stays empty on the CPU.
inline comm::Communicator& model_communicator(comm::World& world, const core::Context& ctx,
                                              comm::DeviceComm device_comm,
                                              std::unique_ptr<comm::Communicator>& owned) {
  if (ctx.device == core::Device::cpu) return world.comm();
  std::string chosen;
  owned = comm::make_device_communicator(MPI_COMM_WORLD, ctx, device_comm, "world", comm::CommLedger::process(), &chosen);
  if (world.rank() == 0) std::fprintf(stderr, "optimus: device communicator: %s\n", chosen.c_str());
  return *owned;
}

/// Throws core::ConfigError, on every rank alike, unless `layout` is a layout `ranks` ranks can
/// run: serial on 1, 1d on any number, 2d on a square number. The ranks are one model copy of
/// `copies` (data parallelism; 1: the world). Called first, before any file is read, so a wrong
/// launch is the first thing a user hears about.
inline void require_ranks_fit(const std::string& layout, int ranks, int copies = 1) {
  const std::string who = copies == 1
                              ? "the world has " + std::to_string(ranks)
                              : "one model copy has " + std::to_string(ranks) + " (" + std::to_string(ranks * copies) +
                                    " processes / --data-parallel " + std::to_string(copies) + ")";
  if (layout == "serial" && ranks != 1) {
    throw core::ConfigError("the serial layout runs on 1 process, but " + who +
                            (copies == 1 ? "; run without mpirun or choose --layout 1d or 2d"
                                         : "; choose --data-parallel equal to the processes, or --layout 1d or 2d"));
  }
  if (layout == "2d") comm::Grid2D::side(ranks, who);  // a ConfigError unless the ranks are a square
  if (layout != "serial" && layout != "1d" && layout != "2d") {
    throw core::ConfigError("unknown layout '" + layout.substr(0, 40) + "'; choose serial, 1d or 2d");
  }
}

/// Throws core::ConfigError, on every rank alike, unless `placement` can place `ranks` ranks of
/// `layout`: a block placement arranges a 2D grid (its blocks must tile it); serial and 1d have no
/// grid and take row-major only. Called with require_ranks_fit, before any collective.
inline void require_placement_fits(const std::string& layout, const comm::Placement2D& placement, int ranks) {
  if (placement.row_major()) return;
  if (layout != "2d") {
    throw core::ConfigError("--placement " + placement.name() + " arranges the grid of the 2d layout, and " + layout +
                            " has none; use --placement row-major or --layout 2d");
  }
  placement.check(comm::Grid2D::side(ranks));
}

/// The same for the whole world.
inline void require_world_fits(const std::string& layout, comm::World& world) {
  require_ranks_fit(layout, world.size());
}

/// Builds the model of `layout` on the ranks of `group` (initialised from `seed`, its memory on
/// `ctx`, recomputation and sequence parallelism as `memory` asks) and returns body(model). The
/// layout must fit the group (require_ranks_fit); a size not divisible, or sequence parallelism
/// outside 1d, is a core::ConfigError raised identically on every rank before any communication.
template <typename Body>
int with_model_on(const std::string& layout, const model::GPTConfig& config, uint32_t seed, comm::Communicator& group,
                  const core::Context& ctx, const model::StageOptions& memory, Body&& body) {
  if (layout != "1d") model::require_no_sequence_parallel(memory, layout);
  require_placement_fits(layout, memory.placement, group.size());
  if (layout == "serial") {
    serial::GPT gpt(config, ctx, seed, memory);
    return body(gpt);
  }
  if (layout == "1d") {
    comm::Grid1D grid(group);
    tp1d::GPT gpt(config, ctx, seed, grid, memory);
    return body(gpt);
  }
  if (layout == "2d") {
    // Before the grid's splits, so a model the grid cannot cut is one message, no collective.
    tp2d::check_divisible_2d(config, comm::Grid2D::side(group.size()));
    comm::Grid2D grid(group, memory.placement, memory.overlap);
    tp2d::GPT gpt(config, ctx, seed, grid, memory);
    return body(gpt);
  }
  throw core::ConfigError("unknown layout '" + layout.substr(0, 40) + "'; choose serial, 1d or 2d");
}

/// Builds the model of `layout` for this world (initialised from `seed`, its memory on `ctx`, its
/// collectives on model_communicator, recomputation and sequence parallelism as `memory` asks) and
/// returns body(model). A layout that does not fit the world, a size not divisible, or sequence
/// parallelism outside 1d is a core::ConfigError raised identically on every rank before any
/// communication.
template <typename Body>
int with_model(const std::string& layout, const model::GPTConfig& config, uint32_t seed, comm::World& world,
               const core::Context& ctx, comm::DeviceComm device_comm, const model::StageOptions& memory, Body&& body) {
  require_world_fits(layout, world);
  if (layout != "1d") model::require_no_sequence_parallel(memory, layout);
  require_placement_fits(layout, memory.placement, world.size());
  // Before the device communicator and the grid's splits: a model the grid cannot cut is one
  // message, no collective.
  if (layout == "2d") tp2d::check_divisible_2d(config, comm::Grid2D::side(world.size()));
  std::unique_ptr<comm::Communicator> device;  // outlives the grid and the model
  comm::Communicator& group = layout == "serial" ? world.comm() : model_communicator(world, ctx, device_comm, device);
  return with_model_on(layout, config, seed, group, ctx, memory, std::forward<Body>(body));
}

/// The groups of a run with D copies of the model (data parallelism): world rank r = d·P + t, where
/// P = world / D is the ranks of one copy's layout and t the rank inside the copy. A copy occupies
/// consecutive ranks, so its tensor-parallel traffic stays on one node when P fits a node; the
/// data-parallel group of t is {t, P + t, 2P + t, …}: the ranks that hold the same shard in every
/// copy, whose gradients are summed. With D = 1 nothing is split: the copy is the world.
struct DataParallel {
  int replicas = 1;                          // D
  int replica = 0;                           // d: my copy
  comm::Communicator* model = nullptr;       // my copy's P ranks
  std::unique_ptr<comm::Communicator> data;  // my shard's D ranks (none when D = 1)

  /// Collective over `world`; world.size() must be a multiple of D (checked before). The keys are
  /// the ranks inside the new groups (t in the copy, d in the data group), the order MPI would give
  /// by world rank; a meta world (the planner's) splits by them as they are.
  DataParallel(comm::Communicator& world, int D) : replicas(D) {
    const int P = world.size() / D;
    replica = world.rank() / P;
    if (D == 1) {
      model = &world;
      return;
    }
    model_owned_ = world.split(replica, world.rank() % P, "model");
    data = world.split(world.rank() % P, replica, "data");
    model = model_owned_.get();
  }
  DataParallel(comm::World& world, int D) : DataParallel(world.comm(), D) {}

 private:
  std::unique_ptr<comm::Communicator> model_owned_;
};

/// The same, keeping every activation (no recomputation, no sequence parallelism).
template <typename Body>
int with_model(const std::string& layout, const model::GPTConfig& config, uint32_t seed, comm::World& world,
               const core::Context& ctx, comm::DeviceComm device_comm, Body&& body) {
  return with_model(layout, config, seed, world, ctx, device_comm, model::StageOptions{}, std::forward<Body>(body));
}

/// The same with the device communicator chosen automatically.
template <typename Body>
int with_model(const std::string& layout, const model::GPTConfig& config, uint32_t seed, comm::World& world,
               const core::Context& ctx, Body&& body) {
  return with_model(layout, config, seed, world, ctx, comm::DeviceComm::automatic, std::forward<Body>(body));
}

/// Throws core::ConfigError, on every rank alike, unless the layout on `ranks` ranks can split a
/// batch of B sequences of T tokens: 2D cuts the batch over the q rows of its grid, 1D with
/// sequence parallelism the B·T tokens over its p ranks. (The model checks it again.) With
/// gradient accumulation each pass runs on a micro-batch of B / grad_accum sequences, which must
/// split; `batch` names the B of the message (default "--batch B").
inline void require_batch_fits(const std::string& layout, int B, int ranks, int T = 1, bool sequence_parallel = false,
                               int grad_accum = 1, std::string batch = "") {
  const int Bm = B / grad_accum;
  if (batch.empty()) batch = "--batch " + std::to_string(B);
  if (grad_accum > 1) {
    batch = "the micro-batch (" + batch + " / --grad-accum " + std::to_string(grad_accum) + " = " + std::to_string(Bm) +
            ")";
  }
  const std::string choose = grad_accum > 1 ? "choose --batch / --grad-accum" : "choose --batch";
  const int64_t tokens = int64_t{Bm} * T;
  if (layout == "1d" && sequence_parallel && tokens % ranks != 0) {
    throw core::ConfigError("sequence parallelism splits the B·T = " + std::to_string(tokens) +
                            " tokens of a batch over the p = " + std::to_string(ranks) + " ranks, but " +
                            std::to_string(tokens) + " is not divisible by " + std::to_string(ranks) + "; " + choose +
                            " and --seq whose product is a multiple of " + std::to_string(ranks));
  }
  if (layout != "2d") return;
  const int q = comm::Grid2D::side(ranks);
  if (Bm % q != 0) {
    throw core::ConfigError("the 2D layout splits the batch over the q = " + std::to_string(q) +
                            " rows of the grid, but " + batch + " is not divisible by " + std::to_string(q) + "; " +
                            choose + " a multiple of " + std::to_string(q));
  }
}

/// The same on the CPU, recording into the process's host ledger.
template <typename Body>
int with_model(const std::string& layout, const model::GPTConfig& config, uint32_t seed, comm::World& world,
               Body&& body) {
  return with_model(layout, config, seed, world, core::cpu_context(), std::forward<Body>(body));
}

}  // namespace optimus::train
