// The process grids. Grid1D: stage 2's p ranks, all in one tensor-parallel
// group. Grid2D: stage 3's q×q grid; where each rank sits is its Placement2D (row-major: rank r at
// row i = r / q, column j = r % q; or r×c blocks of grid positions per node), and it talks along its
// row (row_comm, index j) and its column (col_comm, index i). Every rank's work depends on (i, j)
// alone, so a run's results do not depend on the placement. Grid3D: the q×q×q cube of a 3D
// product (tp3d/product.h); rank r at (i, j, k) with r = (i·q + j)·q + k, one communicator per axis.
#pragma once

#include <memory>
#include <string>
#include <utility>

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

/// Which grid position each rank of a q×q grid holds. Row-major (rows = cols = 0): rank r is
/// (r / q, r % q). Blocks of rows×cols (the Optimus code's --rank-rearrange is 2×2): consecutive
/// runs of rows·cols ranks — a node's, when mpirun fills nodes in rank order — hold one block of
/// the grid, blocks in row-major order over the grid, ranks in row-major order inside a block:
///   q = 4, 2×2:   rank  0  1 | 4  5        (the rank at each grid position; nodes of 4 ranks)
///                       2  3 | 6  7
///                       ---------
///                       8  9 |12 13
///                      10 11 |14 15
struct Placement2D {
  int rows = 0;  // a block's grid rows (0: row-major)
  int cols = 0;  // a block's grid columns

  bool row_major() const { return rows == 0; }
  /// "row-major" or "RxC" (e.g. "2x2"), as --placement takes it.
  std::string name() const;
  /// Parses --placement's text; throws core::ConfigError naming the text and the forms it takes.
  static Placement2D parse(const std::string& text);
  /// Throws core::ConfigError unless the blocks tile a q×q grid (rows and cols divide q).
  void check(int q) const;
  /// The grid position (i, j) of rank `rank` of a q×q grid, and back. check(q) first.
  std::pair<int, int> position(int rank, int q) const;
  int rank_at(int i, int j, int q) const;
};

/// q×q ranks. row_comm holds the q ranks with the same i, ordered by j (this rank is j in it);
/// col_comm holds the q ranks with the same j, ordered by i (this rank is i in it). Their ledger
/// names are "row" and "col". world() is the grid's ranks numbered i·q + j (the given
/// communicator itself under row-major placement, a renumbered copy otherwise), so a reduction over
/// it adds in the same order whatever the placement. `overlap` says how the SUMMA products over this grid schedule
/// their transfers (tp2d/summa.h): with it, step t + 1's broadcasts move during step t's product.
class Grid2D {
 public:
  /// Collective over `world` (two splits). Throws core::ConfigError, before any communication
  /// and identically on every rank, if world.size() is not a square.
  explicit Grid2D(Communicator& world, bool overlap = false) : Grid2D(world, Placement2D{}, overlap) {}
  /// The same with the ranks placed by `placement`: also a ConfigError (the same way) if its
  /// blocks do not tile the grid.
  Grid2D(Communicator& world, Placement2D placement, bool overlap = false);

  int q() const { return q_; }
  int i() const { return i_; }
  int j() const { return j_; }
  /// This rank in the communicator the grid was built on (placement.position(r(), q) = (i, j)).
  int r() const { return given_->rank(); }
  bool overlap() const { return overlap_; }
  const Placement2D& placement() const { return placement_; }

  Communicator& world() const { return *world_; }
  Communicator& row_comm() const { return *row_comm_; }
  Communicator& col_comm() const { return *col_comm_; }

  /// q with q·q = p; throws core::ConfigError naming p and the nearest squares otherwise. `who`
  /// says whose p ranks they are in that sentence (default: "the world has p").
  static int side(int p, const std::string& who = "");

 private:
  Communicator* given_;  // not owned
  Placement2D placement_;
  int q_;
  int i_ = 0;
  int j_ = 0;
  bool overlap_;
  Communicator* world_;                   // given_, or placed_
  std::unique_ptr<Communicator> placed_;  // given_'s ranks renumbered i·q + j (non-row-major placement)
  std::unique_ptr<Communicator> row_comm_;
  std::unique_ptr<Communicator> col_comm_;
};

/// q×q×q ranks, rank r at (i, j, k) = (r / q², (r / q) % q, r % q), i.e. r = (i·q + j)·q + k:
/// q layers k of q×q grids (i, j), the layer index running fastest. One communicator per axis,
/// each holding the q ranks that differ in that index alone, ordered by it:
///   row_comm   "cube_row"    same (i, k), ordered by j (this rank is j in it)
///   col_comm   "cube_col"    same (j, k), ordered by i (this rank is i in it)
///   depth_comm "cube_depth"  same (i, j), ordered by k (this rank is k in it)
/// So within one layer k, row_comm and col_comm are Grid2D's row and column.
class Grid3D {
 public:
  /// Collective over `world` (three splits). Throws core::ConfigError, before any communication
  /// and identically on every rank, if world.size() is not a cube.
  explicit Grid3D(Communicator& world);

  int q() const { return q_; }
  int i() const { return i_; }
  int j() const { return j_; }
  int k() const { return k_; }
  /// This rank in the communicator the cube was built on: (i·q + j)·q + k.
  int r() const { return world_->rank(); }

  Communicator& world() const { return *world_; }
  Communicator& row_comm() const { return *row_comm_; }
  Communicator& col_comm() const { return *col_comm_; }
  Communicator& depth_comm() const { return *depth_comm_; }

  /// q with q·q·q = p; throws core::ConfigError naming p and the nearest cubes otherwise. `who`
  /// says whose p ranks they are in that sentence (default: "the world has p").
  static int side(int p, const std::string& who = "");

  /// The position (i, j, k) of rank r = (i·q + j)·q + k on a q-cube.
  struct Position {
    int i, j, k;
  };
  static Position position(int rank, int q) { return {rank / (q * q), rank / q % q, rank % q}; }

 private:
  Communicator* world_;  // not owned
  int q_;
  int i_, j_, k_;
  std::unique_ptr<Communicator> row_comm_;
  std::unique_ptr<Communicator> col_comm_;
  std::unique_ptr<Communicator> depth_comm_;
};

}  // namespace optimus::comm
