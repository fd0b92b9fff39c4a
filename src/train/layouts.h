// The layouts a run can use (serial, 1d, 2d): one place that checks the world against the layout
// and builds the model, so train, eval and bench share it. The model types have
// the same interface (forward, backward, clip_gradients, params, spec_of), so the code that uses
// them is written once, as templates.
#pragma once

#include <string>

#include "comm/grid.h"
#include "comm/world.h"
#include "core/errors.h"
#include "model/config.h"
#include "serial/gpt.h"
#include "tp1d/gpt.h"
#include "tp2d/gpt.h"
#include "tp2d/shard_2d.h"

namespace optimus::train {

/// Builds the model of `layout` for this world (initialised from `seed`) and returns body(model).
/// A layout that does not fit the world, or a size not divisible, is a core::ConfigError raised
/// identically on every rank before any communication.
template <typename Body>
int with_model(const std::string& layout, const model::GPTConfig& config, uint32_t seed, comm::World& world,
               Body&& body) {
  const core::Context ctx = core::cpu_context();
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

}  // namespace optimus::train
