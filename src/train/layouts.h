// The layouts a run can use (serial, 1d, 2d): one place that checks the world against the layout
// and builds the model, so train, eval and bench share it. The model types have
// the same interface (forward, backward, clip_gradients, params, spec_of), so the code that uses
// them is written once, as templates.
#pragma once

#include <string>
#include <utility>

#include "comm/grid.h"
#include "comm/world.h"
#include "core/errors.h"
#include "model/config.h"
#include "serial/gpt.h"
#include "tp1d/gpt.h"
#include "tp2d/gpt.h"
#include "tp2d/shard_2d.h"

namespace optimus::train {

/// Builds the model of `layout` for this world (initialised from `seed`, its memory on `ctx`) and
/// returns body(model). A layout that does not fit the world, or a size not divisible, is a
/// core::ConfigError raised identically on every rank before any communication.
template <typename Body>
int with_model(const std::string& layout, const model::GPTConfig& config, uint32_t seed, comm::World& world,
               const core::Context& ctx, Body&& body) {
  if (layout == "serial") {
    if (world.size() != 1) {
      throw core::ConfigError("the serial layout runs on 1 process, but the world has " + std::to_string(world.size()) +
                              "; run without mpirun or choose --layout 1d or 2d");
    }
    serial::GPT gpt(config, ctx, seed);
    return body(gpt);
  }
  if (layout == "1d") {
    comm::Grid1D grid(world.comm());
    tp1d::GPT gpt(config, ctx, seed, grid);
    return body(gpt);
  }
  if (layout == "2d") {
    // Both checks come before the grid's splits, so a bad world or model is one message, no collective.
    tp2d::check_divisible_2d(config, comm::Grid2D::side(world.size()));
    comm::Grid2D grid(world.comm());
    tp2d::GPT gpt(config, ctx, seed, grid);
    return body(gpt);
  }
  throw core::ConfigError("unknown layout '" + layout + "'; choose serial, 1d or 2d");
}

/// Throws core::ConfigError, on every rank alike, unless the layout can split a batch of B
/// sequences: 2D cuts the batch over the q rows of its grid. (The model checks it again.)
inline void require_batch_fits(const std::string& layout, int B, comm::World& world) {
  if (layout != "2d") return;
  const int q = comm::Grid2D::side(world.size());
  if (B % q != 0) {
    throw core::ConfigError("the 2D layout splits the batch over the q = " + std::to_string(q) +
                            " rows of the grid, but --batch " + std::to_string(B) + " is not divisible by " +
                            std::to_string(q) + "; choose --batch a multiple of " + std::to_string(q));
  }
}

/// The same on the CPU, recording into the process's host ledger.
template <typename Body>
int with_model(const std::string& layout, const model::GPTConfig& config, uint32_t seed, comm::World& world,
               Body&& body) {
  return with_model(layout, config, seed, world, core::cpu_context(), std::forward<Body>(body));
}

}  // namespace optimus::train
