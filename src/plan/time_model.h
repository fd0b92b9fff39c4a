// Chapter 4's time model: one rank's ledgers (what its ops and collectives did in a step, counted on
// the meta device) and a hardware profile give seconds. Compute: products at the profile's matmul
// rate for their shape class, every other op at the rate the profile measured for its kind, or at
// its memory bandwidth where it has none. Communication: each
// collective by the α–β–γ cost of its algorithm over the links its group crosses (a group that spans
// nodes as NCCL's tuning model costs it: intra- and inter-node steps at their own latencies, its
// bandwidth over the node's NICs it can use, shared with the node's other groups). Optionally
// SUMMA's broadcasts hidden behind its products, and data parallelism's gradient all-reduce behind
// the backward pass. The chapter states each formula; this file is them.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "comm/comm_ledger.h"
#include "comm/grid.h"
#include "core/op_ledger.h"
#include "plan/hardware.h"
#include "train/layout.h"

namespace optimus::plan {

/// Where the ranks of a layout sit. With D data-parallel copies the world has D·P ranks, world
/// rank r = d·P + t (copy d, rank t inside the copy, as train::DataParallel numbers them), and nodes
/// are filled in rank order: rank r on node r / ranks_per_node, so a copy's consecutive ranks share
/// a node when P fits one, and copies on different nodes sum their gradients over the inter-node
/// link. Inside a copy: 1D's one group is the copy; 2D's rank t holds grid position (i, j) =
/// arrangement.square.position(t, q) (row-major: t = i·q + j; or r×c blocks of the grid on consecutive
/// ranks, comm::Placement2D) and talks along its row (the ranks at (i, j')) and its column (at
/// (i', j)); 3D's rank t holds cube position (i, j, k) = arrangement.cube.position(t, q) (by default
/// t = (i·q + j)·q + k, a depth line on consecutive ranks; or a row or column line there,
/// comm::Placement3D) and talks along its three lines. The data-parallel group of r is
/// {t, P + t, 2P + t, …}.
struct Placement {
  train::Layout layout = train::Layout::serial;
  int ranks = 1;  // P: one copy's ranks
  int ranks_per_node = 1;
  int data_parallel = 1;          // D copies of the layout
  comm::Placement arrangement{};  // 2d, 3d: which grid or cube position each rank of a copy holds
};

/// The ranks of communicator `name` that world rank `rank` belongs to: "world" (every rank),
/// "model" (its copy), "data" (its data-parallel group), "row" or "col" (of its copy's grid),
/// "cube_row", "cube_col" or "cube_depth" (of its copy's cube).
std::vector<int> group_of(const Placement& placement, const std::string& name, int rank);

struct TimeOptions {
  int threads = 1;       // CPU threads per rank: products run this many times as fast
  bool overlap = false;  // 2D: SUMMA's broadcasts and reduces overlap its products; data
                         // parallelism: the gradients' all-reduce overlaps the backward pass
  /// The forward pass's ops (the step's forward alone), from which the backward pass's compute is
  /// told apart for data-parallel overlap; without them nothing of that all-reduce is hidden.
  const core::OpLedger* forward_ops = nullptr;
};

/// One (communicator, operation) of a step, costed.
struct CollectiveTime {
  std::string communicator;
  comm::CommOp op = comm::CommOp::all_reduce;
  int group_size = 1;
  int64_t calls = 0;
  int64_t bytes = 0;      // the ledger's bytes, all calls
  std::string algorithm;  // "ring", "binomial_tree", "scatter_allgather" or "measured"
  std::string link;       // "intra_node" or "inter_node" ("none" for a group of one)
  int sharing = 1;        // groups of this communicator sending from the node at once (a group that spans nodes)
  double nics = 1;        // the NICs its inter-node traffic spreads over: min(its ranks on the node, NICs,
                          // NICs / sharing), fractional when groups share one (β / nics)
  int nodes = 1;          // the nodes the group spans
  double wire_bytes = 0;  // the β term's bytes, all calls: what the busiest rank of the algorithm sends
  double seconds = 0;
};

struct TimeBreakdown {
  std::array<double, core::kOpKindCount> compute_by_kind{};  // seconds per OpKind
  double compute_s = 0;
  double communication_s = 0;
  double hidden_s = 0;                // communication hidden behind computation (overlap option)
  double hidden_data_parallel_s = 0;  // of hidden_s: the data-parallel all-reduce's, behind the backward pass
  double total_s = 0;                 // compute + communication − hidden
  double time_sharing = 1;            // ranks per core when a node has more ranks than devices: compute, and
                                      // collectives costed by formula, take that much longer (a measured
                                      // fit was measured with the same sharing)
  std::vector<CollectiveTime> communication;
};

/// The time of what `ops` and `comm` record on rank `rank` of `placement`, on `hardware`.
TimeBreakdown predict_time(const core::OpLedger& ops, const comm::CommLedger& comm, const HardwareProfile& hardware,
                           const Placement& placement, int rank, const TimeOptions& options);

/// The seconds of one call of `op` moving `n` ledger bytes in a group of `p` ranks over `link` by
/// `algorithm` (data/hardware/README.md's table), without the launch cost; and in `wire_bytes`
/// the n-coefficient of its β term.
double collective_seconds(comm::CommOp op, Algorithm algorithm, double n, int p, const Link& link, double& wire_bytes);

/// What a group that spans `nodes` nodes crosses: hops inside a node over `intra`, hops between
/// nodes over `inter` (whose β is already the group's share of its node's NICs).
struct Route {
  Link intra, inter;
  int nodes = 1;
};

/// The same for a group over `route`: on one node, the function above over route.intra; across
/// nodes, NCCL's tuning model (data/hardware/README.md, "Groups that span nodes").
double collective_seconds(comm::CommOp op, Algorithm algorithm, double n, int p, const Route& route,
                          double& wire_bytes);

/// Steps of a ring collective over p ranks (2(p−1) for all_reduce, p−1 for all_gather and
/// reduce_scatter, 0 otherwise) and of those, on k nodes, the ones that cross nodes (NCCL's count:
/// 2(k−1), k−1).
int ring_steps(comm::CommOp op, int p);
int ring_inter_node_steps(comm::CommOp op, int nodes);

}  // namespace optimus::plan
