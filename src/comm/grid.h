// The process grids. Grid1D: stage 2's p ranks, all in one tensor-parallel
// group. Grid2D: stage 3's q×q grid; where each rank sits is its Placement2D (row-major: rank r at
// row i = r / q, column j = r % q; or r×c blocks of grid positions per node), and it talks along its
// row (row_comm, index j) and its column (col_comm, index i). Grid3D: the q×q×q cube of a 3D
// product (tp3d/product.h), one communicator per axis; its Placement3D says which of the cube's
// lines runs along consecutive ranks (by default the depth: r = (i·q + j)·q + k). Every rank's work
// depends on its position alone, so a run's results do not depend on the placement. Placement is
// --placement's value for either grid.
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
  /// "row-major" or "RxC" (e.g. "2x2"), as --placement takes it (Placement::parse).
  std::string name() const;
  /// Throws core::ConfigError unless the blocks tile a q×q grid (rows and cols divide q).
  void check(int q) const;
  /// The grid position (i, j) of rank `rank` of a q×q grid, and back. check(q) first.
  std::pair<int, int> position(int rank, int q) const;
  int rank_at(int i, int j, int q) const;
};

/// A position (i, j, k) on a q×q×q cube.
struct CubePosition {
  int i, j, k;
};

/// Which line of a q×q×q cube runs along consecutive ranks — a node's, when mpirun fills nodes in
/// rank order, so a node of a multiple of q ranks holds whole lines of it. That index runs fastest;
/// the other two keep their order (i before j before k):
///   depth (the default)  r = (i·q + j)·q + k   a depth line (same i, j) on q consecutive ranks
///   row                  r = (i·q + k)·q + j   a row line (same i, k)
///   col                  r = (j·q + k)·q + i   a column line (same j, k)
/// On a q = 2 cube, the rank at each (i, j, k):
///                 (0,0,0) (0,0,1) (0,1,0) (0,1,1) (1,0,0) (1,0,1) (1,1,0) (1,1,1)
///   depth            0       1       2       3       4       5       6       7
///   row              0       2       1       3       4       6       5       7
///   col              0       2       4       6       1       3       5       7
struct Placement3D {
  enum class Line { depth, row, col };
  Line line = Line::depth;  // the line whose ranks are consecutive

  bool depth() const { return line == Line::depth; }
  /// "depth", "row" or "col", as --placement takes it (Placement::parse).
  std::string name() const;
  /// The position of rank `rank` of a q-cube, and back.
  CubePosition position(int rank, int q) const;
  int rank_at(CubePosition at, int q) const;
};

/// --placement's value, parsed once: it arranges a 2D grid (row-major or RxC: Placement2D) or a 3D
/// cube (depth, row or col: Placement3D), and its text says which. Without the flag, or with
/// row-major, every layout keeps its own order — for the cube, the row-major order of (i, j, k),
/// which is depth — so `grid` is none and any layout takes it; otherwise only a layout whose ranks
/// form that grid does (train::require_fits).
struct Placement {
  enum class Grid { none, square, cube };
  Grid grid = Grid::none;  // which grid the text arranges (none: every layout's own order)
  Placement2D square{};    // 2d's arrangement (row-major unless grid is square)
  Placement3D cube{};      // 3d's (depth unless grid is cube)

  /// The text it was parsed from ("row-major" for none).
  std::string name() const;
  /// What it arranges, for messages: "grid" or "cube".
  static const char* noun(Grid grid);
  /// Parses --placement's text; throws core::ConfigError naming the text and the forms it takes.
  static Placement parse(const std::string& text);
  /// Throws core::ConfigError unless it fits a grid of `ranks` ranks of its kind (Placement2D::check).
  void check(int ranks) const;
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

/// q×q×q ranks, rank r at (i, j, k) = placement.position(r, q) (by default r = (i·q + j)·q + k:
/// q layers k of q×q grids (i, j), the layer index running fastest). One communicator per axis,
/// each holding the q ranks that differ in that index alone, ordered by it:
///   row_comm   "cube_row"    same (i, k), ordered by j (this rank is j in it)
///   col_comm   "cube_col"    same (j, k), ordered by i (this rank is i in it)
///   depth_comm "cube_depth"  same (i, j), ordered by k (this rank is k in it)
/// So within one layer k, row_comm and col_comm are Grid2D's row and column. world() is the cube's
/// ranks numbered (i·q + j)·q + k (the given communicator itself under the depth placement, a
/// renumbered copy otherwise), so a reduction over it adds in the same order whatever the placement.
class Grid3D {
 public:
  using Position = CubePosition;

  /// Collective over `world` (three splits; four under a placement other than depth). Throws
  /// core::ConfigError, before any communication and identically on every rank, if world.size()
  /// is not a cube.
  explicit Grid3D(Communicator& world, Placement3D placement = {});

  int q() const { return q_; }
  int i() const { return i_; }
  int j() const { return j_; }
  int k() const { return k_; }
  /// This rank in the communicator the cube was built on (placement.position(r(), q) = (i, j, k)).
  int r() const { return given_->rank(); }
  const Placement3D& placement() const { return placement_; }

  Communicator& world() const { return *world_; }
  Communicator& row_comm() const { return *row_comm_; }
  Communicator& col_comm() const { return *col_comm_; }
  Communicator& depth_comm() const { return *depth_comm_; }

  /// q with q·q·q = p; throws core::ConfigError naming p and the nearest cubes otherwise. `who`
  /// says whose p ranks they are in that sentence (default: "the world has p").
  static int side(int p, const std::string& who = "");

 private:
  Communicator* given_;  // not owned
  Placement3D placement_;
  int q_;
  int i_ = 0, j_ = 0, k_ = 0;
  Communicator* world_;                   // given_, or placed_
  std::unique_ptr<Communicator> placed_;  // given_'s ranks renumbered (i·q + j)·q + k (placement not depth)
  std::unique_ptr<Communicator> row_comm_;
  std::unique_ptr<Communicator> col_comm_;
  std::unique_ptr<Communicator> depth_comm_;
};

}  // namespace optimus::comm
