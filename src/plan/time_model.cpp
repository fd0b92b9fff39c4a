// The time model, formula by formula, in the order of chapter 4's section on it.
#include "plan/time_model.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include "comm/grid.h"

namespace optimus::plan {

namespace {

// ---- compute --------------------------------------------------------------------------------------

bool is_product(core::OpKind kind) {
  return kind == core::OpKind::matmul || kind == core::OpKind::attention;
}

// Products: their FLOPs at the rate of their shape class. Everything else: its bytes at the memory
// bandwidth, or at the rate the profile measured for its kind (attention: its FLOPs at its measured
// rate). Measured rates and products run `threads` times as fast with that many threads per rank.
double kind_seconds(const core::OpLedger::Totals& t, core::OpKind kind, const HardwareProfile& h, int threads) {
  const double rate = h.op_rate[static_cast<size_t>(kind)];
  const double bytes = static_cast<double>(t.bytes_read + t.bytes_written);
  if (kind == core::OpKind::attention && rate > 0) return static_cast<double>(t.flops) / (rate * threads);
  if (!is_product(kind)) return rate > 0 ? bytes / (rate * threads) : bytes / h.memory_bytes_per_s;
  double seconds = 0;
  for (const auto& [min_dim, flops] : t.flops_by_min_dim) {
    seconds += static_cast<double>(flops) / (h.matmul_rate(min_dim) * threads);
  }
  return seconds;
}

// ---- placement ------------------------------------------------------------------------------------

int node_of(const Placement& p, int rank) {
  return rank / p.ranks_per_node;
}

int world_size(const Placement& p) {
  return p.ranks * p.data_parallel;
}

// Which group of communicator `name` world rank r = d·P + t is in: a label, equal for the ranks
// of one group.
int group_label(const Placement& p, const std::string& name, int rank) {
  const int d = rank / p.ranks, t = rank % p.ranks;
  if (name == "world") return 0;
  if (name == "model") return d;      // one copy
  if (name == "data") return t;       // the same shard in every copy
  if (name.rfind("cube_", 0) == 0) {  // 3D: t at arrangement.cube.position(t, q), a line fixes two indices
    const int q = comm::Grid3D::side(p.ranks);
    const auto [i, j, k] = p.arrangement.cube.position(t, q);
    if (name == "cube_row") return (d * q + i) * q + k;    // the same copy, i and k
    if (name == "cube_col") return (d * q + j) * q + k;    // the same copy, j and k
    if (name == "cube_depth") return (d * q + i) * q + j;  // the same copy, i and j
  }
  const int q = comm::Grid2D::side(p.ranks);
  const auto [i, j] = p.arrangement.square.position(t, q);
  if (name == "row") return d * q + i;  // the same copy and i
  if (name == "col") return d * q + j;  // the same copy and j
  throw std::logic_error("the time model knows no communicator '" + name + "'");
}

// The distinct groups of `name` among the ranks of `node`.
int groups_on_node(const Placement& p, const std::string& name, int node) {
  std::set<int> labels;
  const int first = node * p.ranks_per_node, last = std::min(world_size(p), first + p.ranks_per_node);
  for (int r = first; r < last; ++r) labels.insert(group_label(p, name, r));
  return static_cast<int>(labels.size());
}

// ---- one collective -------------------------------------------------------------------------------

int ceil_log2(int p) {
  int steps = 0;
  while ((1 << steps) < p) ++steps;
  return steps;
}

// The links the group of `name` around `rank` crosses. Across nodes: k nodes; its m ranks on this
// rank's node can reach min(m, N) of the node's N NICs, and the node's g groups of `name` send at
// once, each at most N/g NICs' worth, so the group's inter-node β is β_NIC / min(m, N, N/g).
Route route_of(CollectiveTime& c, const HardwareProfile& h, const Placement& placement, const std::string& name,
               int rank) {
  const int node = node_of(placement, rank);
  std::set<int> nodes;
  int here = 0;
  for (int r : group_of(placement, name, rank)) {
    nodes.insert(node_of(placement, r));
    here += node_of(placement, r) == node ? 1 : 0;
  }
  Route route{.intra = h.intra_node, .inter = h.inter_node, .nodes = static_cast<int>(nodes.size())};
  c.nodes = route.nodes;
  if (route.nodes > 1) {
    const int nics = h.inter_node.nics_per_node;
    c.sharing = groups_on_node(placement, name, node);
    c.nics = std::min(static_cast<double>(std::min(here, nics)), static_cast<double>(nics) / c.sharing);
    route.inter.beta_s_per_byte /= c.nics;
  }
  return route;
}

CollectiveTime cost_collective(const std::string& name, comm::CommOp op, const comm::CommLedger& ledger,
                               const HardwareProfile& h, const Placement& placement, int rank) {
  CollectiveTime c;
  c.communicator = name, c.op = op, c.group_size = ledger.group_size(name);
  c.calls = ledger.calls(name, op), c.bytes = ledger.bytes(name, op);
  const int p = c.group_size;
  const double n = static_cast<double>(c.bytes) / static_cast<double>(c.calls);
  if (p == 1) {  // a group of one sends nothing
    c.algorithm = "none", c.link = "none";
    return c;
  }
  const Route route = route_of(c, h, placement, name, rank);
  const bool one_node = route.nodes == 1;
  c.link = one_node ? "intra_node" : "inter_node";
  double wire = 0, seconds = 0;
  const auto fit = h.measured.find({p, op});
  if (one_node && fit != h.measured.end()) {  // the machine's own measurement, made inside one node
    c.algorithm = "measured";
    seconds = fit->second.alpha_s + n * fit->second.beta_s_per_byte;
    wire = n;
  } else {
    const Algorithm algorithm = h.algorithm[static_cast<size_t>(op)];
    c.algorithm = algorithm_name(algorithm);
    seconds = collective_seconds(op, algorithm, n, p, route, wire);
  }
  c.seconds = static_cast<double>(c.calls) * (h.collective_launch_s + seconds);
  c.wire_bytes = static_cast<double>(c.calls) * wire;
  return c;
}

// ---- overlap --------------------------------------------------------------------------------------

// SUMMA in q steps of equal size, the broadcasts (or reduces) of step t + 1 under the product of
// step t: T = C/q + (q − 1)·max(G, C)/q + G/q, so (q − 1)/q·min(G, C) of G + C is hidden.
double summa_hidden(const TimeBreakdown& t, const Placement& placement) {
  if (!train::definition(placement.layout).summa) return 0;
  const int q = comm::Grid2D::side(placement.ranks);
  double summa_comm = 0;
  for (const CollectiveTime& c : t.communication) {
    const bool summa = (c.communicator == "row" || c.communicator == "col") &&
                       (c.op == comm::CommOp::broadcast || c.op == comm::CommOp::reduce);
    if (summa) summa_comm += c.seconds;
  }
  const double gemm = t.compute_by_kind[static_cast<size_t>(core::OpKind::matmul)];
  return (q - 1) * std::min(gemm, summa_comm) / q;
}

// Data parallelism with overlap: a bucket is a block's gradients (model::GradientSum), its
// all-reduce started as soon as the backward pass has finished the block, so it runs while the pass
// computes the blocks before it. The last three buckets have nothing left to hide behind: block 0's,
// then wte and wpe's and ln_f's, complete only when the backward pass ends. With A the data group's
// all-reduce time over its n calls (the ledger keeps no bucket's own size, so each is taken as the
// mean, A/n) and W the backward pass's compute — the step's compute less the forward pass's and the
// optimizer's — less what SUMMA's overlap already hides behind products:
//   hidden = min(A·max(0, n − 3)/n, max(0, W − summa_hidden))
double data_parallel_hidden(const TimeBreakdown& t, const TimeOptions& options, const HardwareProfile& h,
                            double summa_hidden) {
  if (options.forward_ops == nullptr) return 0;
  double all_reduce = 0;
  int64_t calls = 0;
  for (const CollectiveTime& c : t.communication) {
    if (c.communicator == "data" && c.op == comm::CommOp::all_reduce) all_reduce += c.seconds, calls += c.calls;
  }
  if (calls <= 3) return 0;
  double forward = 0;
  for (int k = 0; k < core::kOpKindCount; ++k) {
    const auto kind = static_cast<core::OpKind>(k);
    forward += kind_seconds(options.forward_ops->of(kind), kind, h, options.threads);
  }
  forward *= t.time_sharing;
  const double optimizer = t.compute_by_kind[static_cast<size_t>(core::OpKind::optimizer)];
  const double backward = t.compute_s - forward - optimizer;
  return std::min(all_reduce * static_cast<double>(calls - 3) / static_cast<double>(calls),
                  std::max(0.0, backward - summa_hidden));
}

}  // namespace

std::vector<int> group_of(const Placement& placement, const std::string& name, int rank) {
  std::vector<int> group;
  for (int r = 0; r < world_size(placement); ++r) {
    if (group_label(placement, name, r) == group_label(placement, name, rank)) group.push_back(r);
  }
  return group;
}

double collective_seconds(comm::CommOp op, Algorithm algorithm, double n, int p, const Link& link, double& wire_bytes) {
  const double a = link.alpha_s, b = link.beta_s_per_byte, g = link.gamma_s_per_byte;
  const double share = static_cast<double>(p - 1) / p, lg = ceil_log2(p);
  using comm::CommOp;
  switch (op) {
    case CommOp::all_reduce:  // ring: a reduce-scatter, then an all-gather
      wire_bytes = 2 * n * share;
      return 2 * (p - 1) * a + wire_bytes * b + n * share * g;
    case CommOp::all_gather:
      wire_bytes = n * share;
      return (p - 1) * a + wire_bytes * b;
    case CommOp::reduce_scatter:
      wire_bytes = n * share;
      return (p - 1) * a + wire_bytes * (b + g);
    case CommOp::broadcast:
    case CommOp::reduce: {
      const double reduce = op == CommOp::reduce ? n * g : 0;
      if (algorithm == Algorithm::binomial_tree) {
        wire_bytes = lg * n;
        return lg * (a + n * b) + lg * reduce;
      }
      if (algorithm == Algorithm::scatter_allgather) {
        wire_bytes = 2 * n * share;
        return (lg + p - 1) * a + wire_bytes * b;
      }
      wire_bytes = n;             // a pipelined ring (NCCL's chain): every rank but the last forwards the whole buffer
      return a + n * b + reduce;  // NCCL's tuning model charges one step's latency (its base is the launch)
    }
    case CommOp::barrier:
    case CommOp::split:
      break;
  }
  wire_bytes = 0;
  return 0;
}

int ring_steps(comm::CommOp op, int p) {
  if (op == comm::CommOp::all_reduce) return 2 * (p - 1);
  if (op == comm::CommOp::all_gather || op == comm::CommOp::reduce_scatter) return p - 1;
  return 0;
}

int ring_inter_node_steps(comm::CommOp op, int nodes) {
  return ring_steps(op, nodes);  // NCCL's tuning model: 2(k − 1) and k − 1 on k nodes
}

// Across nodes (NCCL's tuning model): a ring's s steps, x of them between nodes, cost
// (s − x)·α_intra + x·α_inter; a chain (broadcast, reduce) one step of the network's latency; every
// algorithm's bytes move at the slower of the two links, β = max(β_intra, β_inter) (β_inter alone
// when each rank has a node to itself), and reduce at the inter-node link's γ.
double collective_seconds(comm::CommOp op, Algorithm algorithm, double n, int p, const Route& route,
                          double& wire_bytes) {
  if (route.nodes <= 1) return collective_seconds(op, algorithm, n, p, route.intra, wire_bytes);
  Link slowest = route.inter;
  if (p > route.nodes) slowest.beta_s_per_byte = std::max(route.intra.beta_s_per_byte, route.inter.beta_s_per_byte);
  const double seconds = collective_seconds(op, algorithm, n, p, slowest, wire_bytes);
  const int steps = ring_steps(op, p), inter = ring_inter_node_steps(op, route.nodes);
  // The formula charged every ring step α_inter: the intra-node ones take α_intra instead.
  return seconds + (steps - inter) * (route.intra.alpha_s - route.inter.alpha_s);
}

TimeBreakdown predict_time(const core::OpLedger& ops, const comm::CommLedger& comm, const HardwareProfile& hardware,
                           const Placement& placement, int rank, const TimeOptions& options) {
  TimeBreakdown t;
  for (int k = 0; k < core::kOpKindCount; ++k) {
    const auto kind = static_cast<core::OpKind>(k);
    t.compute_by_kind[static_cast<size_t>(k)] = kind_seconds(ops.of(kind), kind, hardware, options.threads);
    t.compute_s += t.compute_by_kind[static_cast<size_t>(k)];
  }
  for (const std::string& name : comm.communicators()) {
    for (comm::CommOp op : {comm::CommOp::all_reduce, comm::CommOp::broadcast, comm::CommOp::reduce,
                            comm::CommOp::all_gather, comm::CommOp::reduce_scatter}) {
      if (comm.calls(name, op) > 0) {
        t.communication.push_back(cost_collective(name, op, comm, hardware, placement, rank));
      }
    }
  }
  // More ranks on a node than it has devices (cores): they take turns, each at its share.
  const int node = node_of(placement, rank);
  const int on_node =
      std::min(world_size(placement), (node + 1) * placement.ranks_per_node) - node * placement.ranks_per_node;
  t.time_sharing = std::max(1.0, static_cast<double>(on_node) * options.threads / hardware.devices_per_node);
  t.compute_s *= t.time_sharing;
  for (double& s : t.compute_by_kind) s *= t.time_sharing;
  t.communication_s = 0;  // a formula's time is shared too; a measured fit was measured so shared
  for (CollectiveTime& c : t.communication) {
    if (c.algorithm != "measured") c.seconds *= t.time_sharing;
    t.communication_s += c.seconds;
  }
  if (options.overlap) {
    const double summa = summa_hidden(t, placement);
    t.hidden_data_parallel_s = data_parallel_hidden(t, options, hardware, summa);
    t.hidden_s = summa + t.hidden_data_parallel_s;
  }
  t.total_s = t.compute_s + t.communication_s - t.hidden_s;
  return t;
}

}  // namespace optimus::plan
