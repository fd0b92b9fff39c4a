// The time model sees where the 2D grid's positions sit: with q = 4 and 4 ranks per node, row-major
// puts each grid row on one node (rows inside nodes, columns across 4), and the Optimus code's 2×2
// blocks put a 2×2 block on each node (rows and columns each across 2 nodes). Nodes are filled in
// world-rank order (rank r on node r / ranks_per_node) whatever the placement. And the 3D cube's three
// lines, as comm::Grid3D numbers its ranks: by default a depth line on consecutive ranks, so on one
// node; with --placement row a row line, with col a column line.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <vector>

#include "comm/comm_ledger.h"
#include "comm/grid.h"
#include "core/op_ledger.h"
#include "plan/hardware.h"
#include "plan/time_model.h"

using namespace optimus;

namespace {

// The nodes that the ranks of `group` sit on.
std::set<int> nodes(const std::vector<int>& group, int ranks_per_node) {
  std::set<int> n;
  for (int r : group) n.insert(r / ranks_per_node);
  return n;
}

// Which link the time model gives rank `rank`'s row and column all-reduces.
std::pair<std::string, std::string> links(const plan::Placement& placement, int rank) {
  comm::CommLedger ledger;
  ledger.record("row", comm::CommOp::all_reduce, 1000, 4);
  ledger.record("col", comm::CommOp::all_reduce, 1000, 4);
  plan::HardwareProfile h;
  h.devices_per_node = 4;
  h.algorithm.fill(plan::Algorithm::ring);
  const auto t = plan::predict_time(core::OpLedger{}, ledger, h, placement, rank, {});
  std::pair<std::string, std::string> out;
  for (const plan::CollectiveTime& c : t.communication) (c.communicator == "row" ? out.first : out.second) = c.link;
  return out;
}

// Which link the time model gives each of rank `rank`'s three cube all-gathers, by communicator.
std::map<std::string, std::string> cube_links(const plan::Placement& placement, int rank) {
  comm::CommLedger ledger;
  const int q = comm::Grid3D::side(placement.ranks);
  for (const char* line : {"cube_row", "cube_col", "cube_depth"})
    ledger.record(line, comm::CommOp::all_gather, 1000, q);
  plan::HardwareProfile h;
  h.devices_per_node = placement.ranks_per_node;
  h.algorithm.fill(plan::Algorithm::ring);
  const auto t = plan::predict_time(core::OpLedger{}, ledger, h, placement, rank, {});
  std::map<std::string, std::string> out;
  for (const plan::CollectiveTime& c : t.communication) out[c.communicator] = c.link;
  return out;
}

plan::Placement cube(int ranks, int ranks_per_node, const char* placement) {
  return {.layout = train::Layout::tp3d,
          .ranks = ranks,
          .ranks_per_node = ranks_per_node,
          .arrangement = comm::Placement::parse(placement)};
}

}  // namespace

TEST_CASE("placement: q = 4, 4 ranks per node, row-major puts each grid row on one node", "[placement]") {
  const plan::Placement row_major{.layout = train::Layout::tp2d, .ranks = 16, .ranks_per_node = 4};
  CHECK(plan::group_of(row_major, "row", 5) == std::vector<int>{4, 5, 6, 7});
  CHECK(plan::group_of(row_major, "col", 5) == std::vector<int>{1, 5, 9, 13});
  for (int r = 0; r < 16; ++r) {
    CHECK(nodes(plan::group_of(row_major, "row", r), 4) == std::set<int>{r / 4});
    CHECK(nodes(plan::group_of(row_major, "col", r), 4).size() == 4);
  }
  CHECK(links(row_major, 5) == std::pair<std::string, std::string>{"intra_node", "inter_node"});
}

TEST_CASE("placement: q = 4, 4 ranks per node, 2×2 blocks put a 2×2 block on each node", "[placement]") {
  const plan::Placement blocks{
      .layout = train::Layout::tp2d, .ranks = 16, .ranks_per_node = 4, .arrangement = comm::Placement::parse("2x2")};
  // Rank 5 holds grid position (0, 3) (comm/grid.h's picture): row 0 is ranks 0 1 4 5, column 3 is 5 7 13 15.
  CHECK(plan::group_of(blocks, "row", 5) == std::vector<int>{0, 1, 4, 5});
  CHECK(plan::group_of(blocks, "col", 5) == std::vector<int>{5, 7, 13, 15});
  for (int r = 0; r < 16; ++r) {
    const std::set<int> row = nodes(plan::group_of(blocks, "row", r), 4),
                        col = nodes(plan::group_of(blocks, "col", r), 4);
    CHECK(row.size() == 2);
    CHECK(col.size() == 2);
    CHECK(row.count(r / 4) == 1);
  }
  // Node 1 (ranks 4..7) holds grid rows 0-1 and columns 2-3.
  std::set<std::pair<int, int>> block;
  for (int r = 4; r < 8; ++r) block.insert(blocks.arrangement.square.position(r, 4));
  CHECK(block == std::set<std::pair<int, int>>{{0, 2}, {0, 3}, {1, 2}, {1, 3}});
  CHECK(links(blocks, 5) == std::pair<std::string, std::string>{"inter_node", "inter_node"});
}

TEST_CASE("placement: with 2 data-parallel copies each copy is placed alike, its ranks counted from d·P",
          "[placement]") {
  const plan::Placement two{.layout = train::Layout::tp2d,
                            .ranks = 4,
                            .ranks_per_node = 2,
                            .data_parallel = 2,
                            .arrangement = comm::Placement::parse("2x1")};
  // 2×1 on a 2×2 grid: a node holds a grid column, so rows cross nodes and columns do not.
  CHECK(plan::group_of(two, "row", 5) == std::vector<int>{5, 7});
  CHECK(plan::group_of(two, "col", 5) == std::vector<int>{4, 5});
  CHECK(plan::group_of(two, "data", 5) == std::vector<int>{1, 5});
}

TEST_CASE("placement: the cube's lines are the ranks comm::Grid3D puts on them, per copy", "[placement]") {
  // q = 2 and 2 copies: rank d·8 + (i·2 + j)·2 + k. Rank 13 is copy 1, (i, j, k) = (1, 0, 1).
  const plan::Placement cube{.layout = train::Layout::tp3d, .ranks = 8, .ranks_per_node = 4, .data_parallel = 2};
  CHECK(plan::group_of(cube, "cube_row", 13) == std::vector<int>{13, 15});    // j varies: stride q
  CHECK(plan::group_of(cube, "cube_col", 13) == std::vector<int>{9, 13});     // i varies: stride q²
  CHECK(plan::group_of(cube, "cube_depth", 13) == std::vector<int>{12, 13});  // k varies: stride 1
  CHECK(plan::group_of(cube, "data", 13) == std::vector<int>{5, 13});
  // With 4 ranks a node, the depth and the row stay on one node, the column crosses two.
  for (int r = 0; r < 16; ++r) {
    CHECK(nodes(plan::group_of(cube, "cube_depth", r), 4).size() == 1);
    CHECK(nodes(plan::group_of(cube, "cube_row", r), 4).size() == 1);
    CHECK(nodes(plan::group_of(cube, "cube_col", r), 4).size() == 2);
  }
}

TEST_CASE("placement: q = 2, 2 ranks per node, each 3D placement puts its line on a node and the others across",
          "[placement]") {
  // Nodes of 2 ranks: {0, 1}, {2, 3}, {4, 5}, {6, 7}. Rank 5 holds (i, j, k) = (1, 0, 1) under depth
  // (5 = (i·2 + j)·2 + k), and (1, 1, 0) under row (5 = (i·2 + k)·2 + j) and col (5 = (j·2 + k)·2 + i).
  const plan::Placement depth = cube(8, 2, "depth"), row = cube(8, 2, "row"), col = cube(8, 2, "col");
  CHECK(plan::group_of(depth, "cube_depth", 5) == std::vector<int>{4, 5});
  CHECK(plan::group_of(depth, "cube_row", 5) == std::vector<int>{5, 7});
  CHECK(plan::group_of(depth, "cube_col", 5) == std::vector<int>{1, 5});
  CHECK(plan::group_of(row, "cube_row", 5) == std::vector<int>{4, 5});    // (1, ·, 0): 4, 5
  CHECK(plan::group_of(row, "cube_col", 5) == std::vector<int>{1, 5});    // (·, 1, 0): 1, 5
  CHECK(plan::group_of(row, "cube_depth", 5) == std::vector<int>{5, 7});  // (1, 1, ·): 5, 7
  CHECK(plan::group_of(col, "cube_col", 5) == std::vector<int>{4, 5});    // (·, 1, 0): 4, 5
  CHECK(plan::group_of(col, "cube_row", 5) == std::vector<int>{1, 5});    // (1, ·, 0): 1, 5
  CHECK(plan::group_of(col, "cube_depth", 5) == std::vector<int>{5, 7});  // (1, 1, ·): 5, 7
  // row-major is the default order: the depth placement's groups.
  const plan::Placement row_major = cube(8, 2, "row-major");
  for (const char* line : {"cube_row", "cube_col", "cube_depth"}) {
    CHECK(plan::group_of(row_major, line, 5) == plan::group_of(depth, line, 5));
  }
  const std::map<std::string, std::string> intra_depth = {
      {"cube_depth", "intra_node"}, {"cube_row", "inter_node"}, {"cube_col", "inter_node"}};
  const std::map<std::string, std::string> intra_row = {
      {"cube_depth", "inter_node"}, {"cube_row", "intra_node"}, {"cube_col", "inter_node"}};
  const std::map<std::string, std::string> intra_col = {
      {"cube_depth", "inter_node"}, {"cube_row", "inter_node"}, {"cube_col", "intra_node"}};
  for (int r = 0; r < 8; ++r) {
    CHECK(cube_links(depth, r) == intra_depth);
    CHECK(cube_links(row, r) == intra_row);
    CHECK(cube_links(col, r) == intra_col);
  }
}

TEST_CASE("placement: q = 4, 8 ranks per node, --placement row puts two whole row lines on each node", "[placement]") {
  // Row: r = (i·4 + k)·4 + j. Node 1 (ranks 8..15) holds i = 0, k = 2 and 3, j = 0..3. Rank 13 is
  // (i, j, k) = (0, 1, 3): its row 12..15, its depth (0, 1, ·) = 4k + 1 on nodes 0 and 1, its column
  // (·, 1, 3) = 16i + 13 on nodes 1, 3, 5, 7.
  const plan::Placement row = cube(64, 8, "row");
  CHECK(plan::group_of(row, "cube_row", 13) == std::vector<int>{12, 13, 14, 15});
  CHECK(plan::group_of(row, "cube_depth", 13) == std::vector<int>{1, 5, 9, 13});
  CHECK(plan::group_of(row, "cube_col", 13) == std::vector<int>{13, 29, 45, 61});
  // Depth (the default): r = (i·4 + j)·4 + k, rank 13 is (0, 3, 1): its depth 12..15 on node 1.
  const plan::Placement depth = cube(64, 8, "depth");
  CHECK(plan::group_of(depth, "cube_depth", 13) == std::vector<int>{12, 13, 14, 15});
  CHECK(plan::group_of(depth, "cube_row", 13) == std::vector<int>{1, 5, 9, 13});
  CHECK(plan::group_of(depth, "cube_col", 13) == std::vector<int>{13, 29, 45, 61});
  for (int r = 0; r < 64; ++r) {
    CHECK(nodes(plan::group_of(row, "cube_row", r), 8) == std::set<int>{r / 8});
    CHECK(nodes(plan::group_of(row, "cube_depth", r), 8).size() == 2);
    CHECK(nodes(plan::group_of(row, "cube_col", r), 8).size() == 4);
  }
  CHECK(cube_links(row, 13) == std::map<std::string, std::string>{{"cube_depth", "inter_node"},
                                                                  {"cube_row", "intra_node"},
                                                                  {"cube_col", "inter_node"}});
}
