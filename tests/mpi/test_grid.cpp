// The grids: Grid1D is the whole world; Grid2D puts rank r at row i = r / q,
// column j = r % q (or where its Placement2D says), with row_comm ordered by j and col_comm ordered
// by i; a world that is not a square, or blocks that do not tile it, are refused with a
// ConfigError, identically on every rank and before any communication. Grid3D puts rank r at
// (i, j, k) with r = (i·q + j)·q + k (or where its Placement3D says: a row or column line on
// consecutive ranks) and orders cube_row by j, cube_col by i, cube_depth by k; a world that is not a
// cube is refused the same way. --placement's text is parsed once, into either grid's placement.
#include <string>

#include "comm/grid.h"
#include "comm/mpi_communicator.h"
#include "core/errors.h"
#include "mpi_test.h"

using mpi_test::equal;
using mpi_test::world;
using optimus::comm::CommLedger;
using optimus::comm::CommOp;
using optimus::comm::Communicator;
using optimus::comm::Grid1D;
using optimus::comm::Grid2D;
using optimus::comm::MpiCommunicator;
using optimus::comm::Placement;
using optimus::comm::Placement2D;
using optimus::core::ConfigError;

namespace {

// World ranks of a communicator's members, in its order.
std::vector<int32_t> members(Communicator& comm) {
  std::vector<int32_t> ranks(static_cast<size_t>(comm.size()));
  const int32_t me = world().rank();
  comm.all_gather(ranks.data(), &me, 1);
  return ranks;
}

// The largest q with q·q ≤ p.
int largest_side(int p) {
  int q = 1;
  while ((q + 1) * (q + 1) <= p) ++q;
  return q;
}

// A Grid2D on world ranks 0..q·q-1 (q = largest_side): the whole world at np 1, 4 and 9, rank 0
// alone at np 2; null on the ranks left out, which still take part in every MPI_REQUIRE.
struct SquareGrid {
  int q;
  std::unique_ptr<Communicator> group;  // this rank's side of the split
  std::unique_ptr<Grid2D> grid;         // null outside the square
};

SquareGrid square_grid(Communicator& world_comm, Placement2D placement = {}) {
  SquareGrid s;
  s.q = largest_side(world_comm.size());
  const bool inside = world_comm.rank() < s.q * s.q;
  s.group = world_comm.split(inside ? 0 : 1, world_comm.rank(), "square");
  if (inside) s.grid = std::make_unique<Grid2D>(*s.group, placement);
  return s;
}

// The 2D arrangement --placement `text` names.
Placement2D blocks_of(const std::string& text) {
  return Placement::parse(text).square;
}

}  // namespace

TEST_CASE("Grid1D: p ranks, rank r, the world as the tensor-parallel group", "[grid]") {
  Grid1D grid(world().comm());
  MPI_REQUIRE(grid.p() == world().size());
  MPI_REQUIRE(grid.r() == world().rank());
  MPI_REQUIRE(&grid.comm() == &world().comm());
}

TEST_CASE("Grid2D: rank r at row r/q, column r%q; row_comm ordered by j, col_comm by i", "[grid]") {
  const SquareGrid s = square_grid(world().comm());
  const Grid2D* grid = s.grid.get();
  const int q = s.q;
  const int r = world().rank();
  MPI_REQUIRE((!grid || grid->q() == q));
  MPI_REQUIRE((!grid || (grid->i() == r / q && grid->j() == r % q)));
  MPI_REQUIRE((!grid || (grid->row_comm().name() == "row" && grid->col_comm().name() == "col")));
  MPI_REQUIRE((!grid || (grid->row_comm().size() == q && grid->row_comm().rank() == grid->j())));
  MPI_REQUIRE((!grid || (grid->col_comm().size() == q && grid->col_comm().rank() == grid->i())));

  // An all-gather of world ranks: the row is (i, 0..q-1), the column is (0..q-1, j).
  std::vector<int32_t> row, col, got_row, got_col;
  if (grid) {
    for (int t = 0; t < q; ++t) {
      row.push_back(grid->i() * q + t);
      col.push_back(t * q + grid->j());
    }
    got_row = members(grid->row_comm());
    got_col = members(grid->col_comm());
  }
  MPI_REQUIRE(equal(got_row, row));
  MPI_REQUIRE(equal(got_col, col));
}

TEST_CASE("Grid2D::side names the size and the nearest squares when p is not a square", "[grid]") {
  MPI_REQUIRE(Grid2D::side(1) == 1);
  MPI_REQUIRE(Grid2D::side(4) == 2);
  MPI_REQUIRE(Grid2D::side(9) == 3);
  MPI_REQUIRE(Grid2D::side(64) == 8);
  std::string message;
  try {
    Grid2D::side(6);
  } catch (const ConfigError& e) {
    message = e.what();
  }
  MPI_REQUIRE(message ==
              "the 2D layout needs a square number of ranks (q×q), but the world has 6; run with 4 or 9 ranks");
  MPI_REQUIRE_THROWS_AS(Grid2D::side(2), ConfigError);
  MPI_REQUIRE_THROWS_AS(Grid2D::side(8), ConfigError);
}

TEST_CASE("Grid2D on a world that is not a square throws ConfigError before communicating", "[grid]") {
  // At np 2 the world itself; at np 4 and 9 a split of it into ranks {0, 1} and the rest (2 and
  // 2, or 2 and 7 ranks: neither a square). At np 1 no such group exists.
  if (world().size() == 1) return;
  CommLedger ledger;
  MpiCommunicator comm(MPI_COMM_WORLD, "world", ledger);
  std::unique_ptr<Communicator> part;
  Communicator* group = &comm;
  const int q = largest_side(world().size());
  if (q * q == world().size()) {
    part = comm.split(world().rank() < 2 ? 0 : 1, world().rank(), "part");
    group = part.get();
  }
  const CommLedger before = ledger.snapshot();
  std::string message;
  try {
    Grid2D grid(*group);
  } catch (const ConfigError& e) {
    message = e.what();
  }
  const std::string want = "but the world has " + std::to_string(group->size()) + ";";
  MPI_REQUIRE(message.find(want) != std::string::npos);
  MPI_REQUIRE(ledger.since(before).calls() == 0);  // refused before its splits
}

TEST_CASE("Grid2D's row_comm and col_comm record into their parent's ledger as \"row\" and \"col\"", "[grid]") {
  CommLedger ledger;
  MpiCommunicator comm(MPI_COMM_WORLD, "world", ledger);
  const SquareGrid s = square_grid(comm);
  const Grid2D* grid = s.grid.get();
  MPI_REQUIRE((!grid || ledger.calls("square", CommOp::split) == 2));

  float x[3] = {1, 2, 3};
  if (grid) {
    grid->row_comm().all_reduce(x, 3);  // q ones in x[0]
    grid->col_comm().broadcast(x, 3, 0);
  }
  MPI_REQUIRE((!grid || ledger.bytes("row", CommOp::all_reduce) == 12));
  MPI_REQUIRE((!grid || ledger.bytes("col", CommOp::broadcast) == 12));
  MPI_REQUIRE((!grid || x[0] == static_cast<float>(s.q)));
}

TEST_CASE("Placement2D: 2×2 blocks of a 4×4 grid on consecutive ranks, row-major inside a block", "[grid]") {
  const Placement2D blocks = blocks_of("2x2");
  MPI_REQUIRE((blocks.rows == 2 && blocks.cols == 2 && blocks.name() == "2x2"));
  // The rank at each grid position (grid.h's picture): rows 0 1 4 5 / 2 3 6 7 / 8 9 12 13 / 10 11 14 15.
  const std::vector<int> at = {0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15};
  bool all = true;
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      const int r = at[static_cast<size_t>(i * 4 + j)];
      all = all && blocks.rank_at(i, j, 4) == r && blocks.position(r, 4) == std::pair{i, j};
    }
  }
  MPI_REQUIRE(all);
  const Placement2D row_major = blocks_of("row-major");
  MPI_REQUIRE((row_major.row_major() && row_major.name() == "row-major"));
  MPI_REQUIRE((row_major.position(6, 4) == std::pair{1, 2} && row_major.rank_at(1, 2, 4) == 6));
  MPI_REQUIRE((blocks_of("1x2").position(2, 2) == std::pair{1, 0}));  // 1×2: a grid row per block
  MPI_REQUIRE((blocks_of("2x1").position(1, 2) == std::pair{1, 0}));  // 2×1: a grid column per block
}

TEST_CASE("--placement refuses text that is not row-major, RxC, depth, row or col, and blocks that do not tile",
          "[grid]") {
  for (const char* bad : {"", "2", "2x", "x2", "0x2", "2x-1", "2x2x", "rows", "Row", "2X2", "depth-major"}) {
    MPI_REQUIRE_THROWS_AS(Placement::parse(bad), ConfigError);
  }
  std::string parse_message, check_message;
  try {
    Placement::parse("2by2");
  } catch (const ConfigError& e) {
    parse_message = e.what();
  }
  try {
    Placement::parse("3x2").check(16);
  } catch (const ConfigError& e) {
    check_message = e.what();
  }
  MPI_REQUIRE(parse_message ==
              "--placement '2by2' is not a placement; give row-major, or RxC for blocks of R grid rows by C grid "
              "columns per node (2d, e.g. 2x2), or depth, row or col for the line of the cube on consecutive "
              "ranks (3d)");
  MPI_REQUIRE(check_message ==
              "--placement 3x2 cuts the 4×4 grid into blocks of 3×2 positions, but 4 is not a multiple of 3; "
              "choose R and C that divide q, or --placement row-major");
}

TEST_CASE("--placement's text names its grid: row-major every layout's own order, RxC the square's, a line the cube's",
          "[grid]") {
  using Grid = Placement::Grid;
  using Line = optimus::comm::Placement3D::Line;
  const Placement row_major = Placement::parse("row-major"), blocks = Placement::parse("2x1");
  MPI_REQUIRE((row_major.grid == Grid::none && row_major.square.row_major() && row_major.cube.depth()));
  MPI_REQUIRE((blocks.grid == Grid::square && blocks.square.rows == 2 && blocks.square.cols == 1));
  MPI_REQUIRE((blocks.name() == "2x1" && row_major.name() == "row-major"));
  const std::pair<const char*, Line> lines[] = {{"depth", Line::depth}, {"row", Line::row}, {"col", Line::col}};
  for (const auto& [text, line] : lines) {
    const Placement p = Placement::parse(text);
    MPI_REQUIRE((p.grid == Grid::cube && p.cube.line == line && p.name() == text && p.square.row_major()));
    p.check(8);  // any line of any cube
  }
  MPI_REQUIRE(std::string(Placement::noun(Grid::cube)) == "cube");
  MPI_REQUIRE(std::string(Placement::noun(Grid::square)) == "grid");
}

TEST_CASE("Grid2D in 1×q and q×1 blocks: rank r at placement.position(r); rows by j, columns by i; world() i·q + j",
          "[grid]") {
  for (const std::string& text : {"1x" + std::to_string(largest_side(world().size())),
                                 std::to_string(largest_side(world().size())) + "x1"}) {
    const Placement2D placement = blocks_of(text);
    const SquareGrid s = square_grid(world().comm(), placement);
    const Grid2D* grid = s.grid.get();
    const int q = s.q, r = world().rank();
    MPI_REQUIRE((!grid || std::pair{grid->i(), grid->j()} == placement.position(r, q)));
    MPI_REQUIRE((!grid || (grid->r() == r && grid->world().rank() == grid->i() * q + grid->j())));
    MPI_REQUIRE((!grid || (grid->row_comm().rank() == grid->j() && grid->col_comm().rank() == grid->i())));
    std::vector<int32_t> row, col, got_row, got_col;
    if (grid) {
      for (int t = 0; t < q; ++t) {
        row.push_back(placement.rank_at(grid->i(), t, q));
        col.push_back(placement.rank_at(t, grid->j(), q));
      }
      got_row = members(grid->row_comm());
      got_col = members(grid->col_comm());
    }
    MPI_REQUIRE(equal(got_row, row));
    MPI_REQUIRE(equal(got_col, col));
  }
}

// ---- Grid3D ---------------------------------------------------------------------------------------

namespace {

using optimus::comm::Grid3D;

// The largest q with q·q·q ≤ p.
int largest_cube_side(int p) {
  int q = 1;
  while ((q + 1) * (q + 1) * (q + 1) <= p) ++q;
  return q;
}

// A Grid3D on world ranks 0..q³-1 (q = largest_cube_side): the whole world at np 1, 8 and 27, rank 0
// alone at np 2; null on the ranks left out, which still take part in every MPI_REQUIRE.
struct CubeGrid {
  int q;
  std::unique_ptr<Communicator> group;
  std::unique_ptr<Grid3D> grid;
};

CubeGrid cube_grid(Communicator& world_comm, optimus::comm::Placement3D placement = {}) {
  CubeGrid c;
  c.q = largest_cube_side(world_comm.size());
  const bool inside = world_comm.rank() < c.q * c.q * c.q;
  c.group = world_comm.split(inside ? 0 : 1, world_comm.rank(), "cube");
  if (inside) c.grid = std::make_unique<Grid3D>(*c.group, placement);
  return c;
}

}  // namespace

TEST_CASE("Grid3D: rank r at (i, j, k) with r = (i·q + j)·q + k; each axis communicator ordered by its index",
          "[grid3d]") {
  CommLedger ledger;
  MpiCommunicator comm(MPI_COMM_WORLD, "world", ledger);
  const CubeGrid c = cube_grid(comm);
  const Grid3D* g = c.grid.get();
  const int q = c.q, r = world().rank();
  MPI_REQUIRE((!g || (g->q() == q && g->r() == r)));
  MPI_REQUIRE((!g || (g->i() == r / (q * q) && g->j() == r / q % q && g->k() == r % q)));
  MPI_REQUIRE((!g || (g->row_comm().name() == "cube_row" && g->col_comm().name() == "cube_col" &&
                      g->depth_comm().name() == "cube_depth")));
  MPI_REQUIRE((!g || (g->row_comm().size() == q && g->row_comm().rank() == g->j())));
  MPI_REQUIRE((!g || (g->col_comm().size() == q && g->col_comm().rank() == g->i())));
  MPI_REQUIRE((!g || (g->depth_comm().size() == q && g->depth_comm().rank() == g->k())));
  MPI_REQUIRE((!g || ledger.calls("cube", CommOp::split) == 3));

  // World ranks along each axis: the row varies j, the column i, the depth k.
  std::vector<int32_t> row, col, depth, got_row, got_col, got_depth;
  if (g) {
    const auto at = [q](int i, int j, int k) { return (i * q + j) * q + k; };
    for (int t = 0; t < q; ++t) {
      row.push_back(at(g->i(), t, g->k()));
      col.push_back(at(t, g->j(), g->k()));
      depth.push_back(at(g->i(), g->j(), t));
    }
    got_row = members(g->row_comm());
    got_col = members(g->col_comm());
    got_depth = members(g->depth_comm());
  }
  MPI_REQUIRE(equal(got_row, row));
  MPI_REQUIRE(equal(got_col, col));
  MPI_REQUIRE(equal(got_depth, depth));
}

TEST_CASE("Placement3D: the chosen line on consecutive ranks, the other two indices in their order", "[grid3d]") {
  using optimus::comm::Placement3D;
  using Line = Placement3D::Line;
  // The rank at (i, j, k) for k fastest, then j, then i (grid.h's table, q = 2).
  const std::vector<std::pair<Line, std::vector<int>>> tables = {
      {Line::depth, {0, 1, 2, 3, 4, 5, 6, 7}}, {Line::row, {0, 2, 1, 3, 4, 6, 5, 7}}, {Line::col, {0, 2, 4, 6, 1, 3, 5, 7}}};
  bool all = true;
  for (const auto& [line, ranks] : tables) {
    const Placement3D p{line};
    for (int at = 0; at < 8; ++at) {
      const optimus::comm::CubePosition ijk{at / 4, at / 2 % 2, at % 2};
      const optimus::comm::CubePosition back = p.position(ranks[static_cast<size_t>(at)], 2);
      all = all && p.rank_at(ijk, 2) == ranks[static_cast<size_t>(at)] && back.i == ijk.i && back.j == ijk.j &&
            back.k == ijk.k;
    }
  }
  MPI_REQUIRE(all);
  // q = 3, row: ranks 9, 10, 11 are the row line (i, k) = (1, 0), j = 0, 1, 2; rank 12 starts (1, 1).
  const Placement3D row{Line::row}, col{Line::col};
  MPI_REQUIRE((row.position(10, 3).i == 1 && row.position(10, 3).j == 1 && row.position(10, 3).k == 0));
  MPI_REQUIRE((row.position(12, 3).i == 1 && row.position(12, 3).j == 0 && row.position(12, 3).k == 1));
  // q = 3, col: rank 14 = (j·3 + k)·3 + i with (j, k) = (1, 1), i = 2.
  MPI_REQUIRE((col.position(14, 3).i == 2 && col.position(14, 3).j == 1 && col.position(14, 3).k == 1));
  MPI_REQUIRE((row.name() == "row" && col.name() == "col" && Placement3D{}.name() == "depth"));
}

TEST_CASE("Grid3D with a row or column line on consecutive ranks: rank r at placement.position(r); lines by index; "
          "world() (i·q + j)·q + k",
          "[grid3d]") {
  using optimus::comm::Placement3D;
  for (const Placement3D placement : {Placement3D{Placement3D::Line::row}, Placement3D{Placement3D::Line::col}}) {
    CommLedger ledger;
    MpiCommunicator comm(MPI_COMM_WORLD, "world", ledger);
    const CubeGrid c = cube_grid(comm, placement);
    const Grid3D* g = c.grid.get();
    const int q = c.q, r = world().rank();
    const auto at = g ? placement.position(r, q) : optimus::comm::CubePosition{};
    MPI_REQUIRE((!g || (g->i() == at.i && g->j() == at.j && g->k() == at.k && g->r() == r)));
    MPI_REQUIRE((!g || g->world().rank() == (g->i() * q + g->j()) * q + g->k()));
    MPI_REQUIRE((!g || (g->row_comm().rank() == g->j() && g->col_comm().rank() == g->i() &&
                        g->depth_comm().rank() == g->k())));
    MPI_REQUIRE((!g || ledger.calls("cube", CommOp::split) == 4));  // the renumbered world and three lines
    std::vector<int32_t> row, col, depth, got_row, got_col, got_depth;
    if (g) {
      for (int t = 0; t < q; ++t) {
        row.push_back(placement.rank_at({g->i(), t, g->k()}, q));
        col.push_back(placement.rank_at({t, g->j(), g->k()}, q));
        depth.push_back(placement.rank_at({g->i(), g->j(), t}, q));
      }
      got_row = members(g->row_comm());
      got_col = members(g->col_comm());
      got_depth = members(g->depth_comm());
    }
    MPI_REQUIRE(equal(got_row, row));
    MPI_REQUIRE(equal(got_col, col));
    MPI_REQUIRE(equal(got_depth, depth));
    // The chosen line is q consecutive world ranks.
    const std::vector<int32_t>& line = placement.line == Placement3D::Line::row ? got_row : got_col;
    MPI_REQUIRE((!g || line.back() - line.front() == q - 1));
  }
}

TEST_CASE("Grid3D::side names the size and the nearest cubes when p is not a cube", "[grid3d]") {
  MPI_REQUIRE(Grid3D::side(1) == 1);
  MPI_REQUIRE(Grid3D::side(8) == 2);
  MPI_REQUIRE(Grid3D::side(27) == 3);
  MPI_REQUIRE(Grid3D::side(512) == 8);
  std::string message;
  try {
    Grid3D::side(9);
  } catch (const ConfigError& e) {
    message = e.what();
  }
  MPI_REQUIRE(message ==
              "the 3D layout needs a cube number of ranks (q×q×q), but the world has 9; run with 8 or 27 ranks");
  MPI_REQUIRE_THROWS_AS(Grid3D::side(0), ConfigError);
  MPI_REQUIRE_THROWS_AS(Grid3D::side(4), ConfigError);
  MPI_REQUIRE_THROWS_AS(Grid3D::side(64 + 1), ConfigError);
}

TEST_CASE("Grid3D on a world that is not a cube throws ConfigError before communicating", "[grid3d]") {
  // At np 2 the world itself; at a cube np a split of it into ranks {0, 1} and the rest (2 and 6,
  // or 2 and 25 ranks: neither a cube). At np 1 no such group exists.
  if (world().size() == 1) return;
  CommLedger ledger;
  MpiCommunicator comm(MPI_COMM_WORLD, "world", ledger);
  std::unique_ptr<Communicator> part;
  Communicator* group = &comm;
  const int q = largest_cube_side(world().size());
  if (q * q * q == world().size()) {
    part = comm.split(world().rank() < 2 ? 0 : 1, world().rank(), "part");
    group = part.get();
  }
  const CommLedger before = ledger.snapshot();
  std::string message;
  try {
    Grid3D grid(*group);
  } catch (const ConfigError& e) {
    message = e.what();
  }
  const std::string want =
      "needs a cube number of ranks (q×q×q), but the world has " + std::to_string(group->size()) + ";";
  MPI_REQUIRE(message.find(want) != std::string::npos);
  MPI_REQUIRE(ledger.since(before).calls() == 0);  // refused before its splits
}
