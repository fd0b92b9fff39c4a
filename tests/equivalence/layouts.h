// The layouts the chapter-5 and chapter-6 tests run side by side on one world: serial on each rank
// alone, 1D with and without sequence parallelism, and 2D when the world is a square; a model that
// all of them split, and a batch all of them split.
#pragma once

#include <string>
#include <vector>

#include "comm/grid.h"
#include "core/context.h"
#include "core/memory_ledger.h"
#include "model/activation_block.h"
#include "model/config.h"
#include "mpi_test.h"
#include "serial/gpt.h"
#include "tp1d/gpt.h"
#include "tp2d/gpt.h"

namespace equivalence {

// A layout: a stage, whether 1D splits its residual stream (chapter 5) and whether 2D's SUMMA
// overlaps its transfers with its products (chapter 6).
struct Layout {
  std::string stage;  // serial, 1d or 2d
  bool sequence_parallel = false;
  bool overlap = false;
  std::string name() const { return stage + (sequence_parallel ? "+sp" : "") + (overlap ? "+overlap" : ""); }
};

// The smallest q with q·q ≥ P, and whether it is P's square root.
inline int side(int P) {
  int q = 1;
  while (q * q < P) ++q;
  return q;
}

inline bool is_square(int P) {
  return side(P) * side(P) == P;
}

// Every layout this world can run: serial on each rank alone, 1D with and without sequence
// parallelism, and 2D when the world is a square.
inline std::vector<Layout> layouts_of(int P) {
  std::vector<Layout> out = {{"serial"}, {"1d"}, {"1d", true}};
  if (is_square(P)) out.push_back({"2d"});
  return out;
}

// L = 3, NH = P heads (so 1D splits them P ways and 2D √P ways), C = 8P, T = 16, the byte
// vocabulary V = 256 (padded where P does not divide it), dropout on.
inline optimus::model::GPTConfig config_for(int P) {
  optimus::model::GPTConfig c;
  c.n_layer = 3, c.n_head = P, c.n_embd = 8 * P, c.n_positions = 16, c.vocab_size = 256, c.dropout = 0.1f;
  return c;
}

// The smallest batch of at least 4 sequences of T tokens that every layout of layouts_of(P) splits.
inline int batch_for(int P, int T) {
  const int unit = is_square(P) ? side(P) : 1;
  int B = unit;
  while (B < 4 || (int64_t{B} * T) % P != 0) B += unit;
  return B;
}

// Builds `layout`'s model on this world (seed 11, memory on `ledger`) and returns body(model).
template <typename Body>
void with_layout(const Layout& layout, const optimus::model::GPTConfig& cfg, optimus::model::Recompute recompute,
                 optimus::core::MemoryLedger& ledger, Body&& body) {
  auto& world = mpi_test::world();
  const optimus::model::StageOptions memory{
      .recompute = recompute, .sequence_parallel = layout.sequence_parallel, .overlap = layout.overlap};
  const optimus::core::Context ctx = optimus::core::cpu_context(ledger);
  if (layout.stage == "serial") {
    optimus::serial::GPT gpt(cfg, ctx, 11, memory);
    body(gpt);
  } else if (layout.stage == "1d") {
    optimus::comm::Grid1D grid(world.comm());
    optimus::tp1d::GPT gpt(cfg, ctx, 11, grid, memory);
    body(gpt);
  } else {
    optimus::comm::Grid2D grid(world.comm(), layout.overlap);
    optimus::tp2d::GPT gpt(cfg, ctx, 11, grid, memory);
    body(gpt);
  }
}

}  // namespace equivalence
