// The process grids. Grid1D: stage 2's p ranks, all in one tensor-parallel
// group. Grid2D: stage 3's q×q grid; rank r sits at row i = r / q, column j = r % q, and talks
// along its row (row_comm, index j) and its column (col_comm, index i).
#pragma once

#include <memory>
#include <string>

#include "comm/communicator.h"

namespace optimus::comm {

/// p ranks; this is rank r. The whole group is the tensor-parallel group of Megatron 1D.
class Grid1D {
 public:
  explicit Grid1D(Communicator& world) : comm_(&world) {}

  int p() const { return comm_->size(); }
  int r() const { return comm_->rank(); }
  /// The tensor-parallel group: the f and g all-reduces run over it.
  Communicator& comm() const { return *comm_; }

 private:
  Communicator* comm_;  // not owned
};

/// q×q ranks. row_comm holds the q ranks with the same i, ordered by j (this rank is j in it);
/// col_comm holds the q ranks with the same j, ordered by i (this rank is i in it). Their ledger
/// names are "row" and "col". `overlap` says how the SUMMA products over this grid schedule their
/// transfers (tp2d/summa.h): with it, step t + 1's broadcasts move during step t's product.
class Grid2D {
 public:
  /// Collective over `world` (two splits). Throws core::ConfigError, before any communication
  /// and identically on every rank, if world.size() is not a square.
  explicit Grid2D(Communicator& world, bool overlap = false);

  int q() const { return q_; }
  int i() const { return i_; }
  int j() const { return j_; }
  int r() const { return world_->rank(); }
  bool overlap() const { return overlap_; }

  Communicator& world() const { return *world_; }
  Communicator& row_comm() const { return *row_comm_; }
  Communicator& col_comm() const { return *col_comm_; }

  /// q with q·q = p; throws core::ConfigError naming p and the nearest squares otherwise. `who`
  /// says whose p ranks they are in that sentence (default: "the world has p").
  static int side(int p, const std::string& who = "");

 private:
  Communicator* world_;  // not owned
  int q_;
  int i_;
  int j_;
  bool overlap_;
  std::unique_ptr<Communicator> row_comm_;
  std::unique_ptr<Communicator> col_comm_;
};

}  // namespace optimus::comm
