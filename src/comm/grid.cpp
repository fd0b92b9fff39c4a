// The grids: the square and cube checks, the placement of ranks on the 2D grid and on the cube,
// --placement's text, and the splits that make each grid's axis communicators.
#include "comm/grid.h"

#include <charconv>
#include <string>
#include <tuple>

#include "core/errors.h"

namespace optimus::comm {

namespace {

int power(int q, int dims) {
  int n = 1;
  for (int d = 0; d < dims; ++d) n *= q;
  return n;
}

// q with q^dims = p; otherwise a ConfigError: `needs` (what the layout needs), then p or `who`, and
// the nearest sizes that would do.
int grid_side(int p, int dims, const std::string& needs, const std::string& who) {
  int q = 0;
  while (power(q + 1, dims) <= p) ++q;
  if (power(q, dims) == p && p > 0) return q;
  const std::string below = q > 0 ? std::to_string(power(q, dims)) + " or " : "";
  throw core::ConfigError(needs + ", but " + (who.empty() ? "the world has " + std::to_string(p) : who) +
                          "; run with " + below + std::to_string(power(q + 1, dims)) + " ranks");
}

// "RxC" with R, C > 0 into `blocks`; false for any other text.
bool parse_blocks(const std::string& text, Placement2D& blocks) {
  auto number = [](const char* first, const char* last, int& v) {
    const auto r = std::from_chars(first, last, v);
    return r.ec == std::errc() && r.ptr == last && v > 0;
  };
  const size_t x = text.find('x');
  return x != std::string::npos && number(text.data(), text.data() + x, blocks.rows) &&
         number(text.data() + x + 1, text.data() + text.size(), blocks.cols);
}

constexpr Placement3D::Line kLines[] = {Placement3D::Line::depth, Placement3D::Line::row, Placement3D::Line::col};

}  // namespace

int Grid2D::side(int p, const std::string& who) {
  return grid_side(p, 2, "the 2D layout needs a square number of ranks (q×q)", who);
}

std::string Placement2D::name() const {
  return row_major() ? "row-major" : std::to_string(rows) + "x" + std::to_string(cols);
}

void Placement2D::check(int q) const {
  if (row_major() || (q % rows == 0 && q % cols == 0)) return;
  throw core::ConfigError("--placement " + name() + " cuts the " + std::to_string(q) + "×" + std::to_string(q) +
                          " grid into blocks of " + std::to_string(rows) + "×" + std::to_string(cols) +
                          " positions, but " + std::to_string(q) + " is not a multiple of " +
                          std::to_string(q % rows != 0 ? rows : cols) +
                          "; choose R and C that divide q, or --placement row-major");
}

std::pair<int, int> Placement2D::position(int rank, int q) const {
  if (row_major()) return {rank / q, rank % q};
  const int block = rank / (rows * cols), inside = rank % (rows * cols);
  const int blocks_per_row = q / cols;  // blocks side by side along a grid row
  return {(block / blocks_per_row) * rows + inside / cols, (block % blocks_per_row) * cols + inside % cols};
}

int Placement2D::rank_at(int i, int j, int q) const {
  if (row_major()) return i * q + j;
  const int block = (i / rows) * (q / cols) + j / cols;
  return block * rows * cols + (i % rows) * cols + j % cols;
}

std::string Placement3D::name() const {
  return line == Line::depth ? "depth" : line == Line::row ? "row" : "col";
}

CubePosition Placement3D::position(int rank, int q) const {
  const int slow = rank / (q * q), middle = rank / q % q, fast = rank % q;
  switch (line) {
    case Line::row:
      return {slow, fast, middle};  // r = (i·q + k)·q + j
    case Line::col:
      return {fast, slow, middle};  // r = (j·q + k)·q + i
    case Line::depth:
      break;
  }
  return {slow, middle, fast};  // r = (i·q + j)·q + k
}

int Placement3D::rank_at(CubePosition at, int q) const {
  switch (line) {
    case Line::row:
      return (at.i * q + at.k) * q + at.j;
    case Line::col:
      return (at.j * q + at.k) * q + at.i;
    case Line::depth:
      break;
  }
  return (at.i * q + at.j) * q + at.k;
}

std::string Placement::name() const {
  return grid == Grid::cube ? cube.name() : square.name();
}

const char* Placement::noun(Grid grid) {
  return grid == Grid::cube ? "cube" : "grid";
}

void Placement::check(int ranks) const {
  if (grid == Grid::square) square.check(Grid2D::side(ranks));  // any line of any cube is a placement
}

Placement Placement::parse(const std::string& text) {
  Placement p;
  if (text == "row-major") return p;
  for (Placement3D::Line line : kLines) {
    if (text == Placement3D{line}.name()) {
      p.grid = Grid::cube, p.cube.line = line;
      return p;
    }
  }
  if (parse_blocks(text, p.square)) {
    p.grid = Grid::square;
    return p;
  }
  throw core::ConfigError("--placement '" + text.substr(0, 40) +
                          "' is not a placement; give row-major, or RxC for blocks of R grid rows by C grid columns "
                          "per node (2d, e.g. 2x2), or depth, row or col for the line of the cube on consecutive "
                          "ranks (3d)");
}

Grid2D::Grid2D(Communicator& world, Placement2D placement, bool overlap)
    : given_(&world), placement_(placement), q_(side(world.size())), overlap_(overlap), world_(&world) {
  placement_.check(q_);
  std::tie(i_, j_) = placement_.position(world.rank(), q_);
  // Renumbered i·q + j, so world()'s reductions add in the row-major run's order.
  if (!placement_.row_major()) {
    placed_ = world.split(0, i_ * q_ + j_, world.name());
    world_ = placed_.get();
  }
  // Same i → one row, ordered by j; same j → one column, ordered by i.
  row_comm_ = world.split(i_, j_, "row");
  col_comm_ = world.split(j_, i_, "col");
}

int Grid3D::side(int p, const std::string& who) {
  return grid_side(p, 3, "the 3D layout needs a cube number of ranks (q×q×q)", who);
}

Grid3D::Grid3D(Communicator& world, Placement3D placement)
    : given_(&world), placement_(placement), q_(side(world.size())), world_(&world) {
  const CubePosition at = placement_.position(world.rank(), q_);
  i_ = at.i, j_ = at.j, k_ = at.k;
  // Renumbered (i·q + j)·q + k, so world()'s reductions add in the depth placement's order.
  if (!placement_.depth()) {
    placed_ = world.split(0, (i_ * q_ + j_) * q_ + k_, world.name());
    world_ = placed_.get();
  }
  // The color names the line of the cube (the two fixed indices), the key orders ranks along it.
  row_comm_ = world.split(i_ * q_ + k_, j_, "cube_row");
  col_comm_ = world.split(j_ * q_ + k_, i_, "cube_col");
  depth_comm_ = world.split(i_ * q_ + j_, k_, "cube_depth");
}

}  // namespace optimus::comm
