// Chapter 4's time model, formula by formula, on a toy hardware profile whose rates are round
// numbers: each expected time below is written from the formula as the chapter and
// data/hardware/README.md state it, not from a run of the code. The planner's end-to-end checks
// (label plan) run the model on real ledgers; these pin each piece on its own.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "comm/comm_ledger.h"
#include "core/op_ledger.h"
#include "plan/hardware.h"
#include "plan/time_model.h"

using namespace optimus;
using comm::CommOp;
using plan::Algorithm;

namespace {

// 4 devices per node; products with a smallest dimension up to 64 at 1 GFLOP/s, larger ones at
// 4 GFLOP/s; 10 GB/s of memory; links with α, β, γ of round sizes; rings everywhere except the
// broadcasts and reduces, which use binomial trees.
plan::HardwareProfile toy() {
  plan::HardwareProfile h;
  h.name = "toy";
  h.devices_per_node = 4;
  h.device_memory_bytes = int64_t{1} << 30;
  h.matmul = {{64, 1e9}, {INT64_MAX, 4e9}};
  h.memory_bytes_per_s = 1e10;
  h.collective_launch_s = 1e-6;
  h.intra_node = {.alpha_s = 1e-5, .beta_s_per_byte = 1e-9, .gamma_s_per_byte = 1e-10, .devices_per_link = 1};
  h.inter_node = {.alpha_s = 1e-4, .beta_s_per_byte = 1e-8, .gamma_s_per_byte = 2e-10, .devices_per_link = 2};
  h.algorithm.fill(Algorithm::ring);
  h.algorithm[static_cast<size_t>(CommOp::broadcast)] = Algorithm::binomial_tree;
  h.algorithm[static_cast<size_t>(CommOp::reduce)] = Algorithm::binomial_tree;
  return h;
}

core::OpCost product(int64_t flops, int64_t min_dim) {
  return {.kind = core::OpKind::matmul, .flops = flops, .bytes_read = 0, .bytes_written = 0, .min_dim = min_dim};
}

}  // namespace

TEST_CASE("time model: each collective's α–β–γ cost is the table's formula", "[time_model]") {
  const plan::Link link = toy().intra_node;
  const double a = link.alpha_s, b = link.beta_s_per_byte, g = link.gamma_s_per_byte, n = 1000;
  double wire = 0;
  // p = 4: (p − 1)/p = 3/4, ⌈lg p⌉ = 2.
  CHECK(plan::collective_seconds(CommOp::all_reduce, Algorithm::ring, n, 4, link, wire) ==
        Approx(6 * a + 1500 * b + 750 * g));
  CHECK(wire == Approx(1500));
  CHECK(plan::collective_seconds(CommOp::all_gather, Algorithm::ring, n, 4, link, wire) == Approx(3 * a + 750 * b));
  CHECK(wire == Approx(750));
  CHECK(plan::collective_seconds(CommOp::reduce_scatter, Algorithm::ring, n, 4, link, wire) ==
        Approx(3 * a + 750 * (b + g)));
  CHECK(plan::collective_seconds(CommOp::broadcast, Algorithm::binomial_tree, n, 4, link, wire) ==
        Approx(2 * (a + n * b)));
  CHECK(wire == Approx(2 * n));
  CHECK(plan::collective_seconds(CommOp::reduce, Algorithm::binomial_tree, n, 4, link, wire) ==
        Approx(2 * (a + n * b) + 2 * n * g));
  CHECK(plan::collective_seconds(CommOp::broadcast, Algorithm::scatter_allgather, n, 4, link, wire) ==
        Approx((2 + 3) * a + 1500 * b));
  // A pipelined ring (NCCL's chain): one step's latency, one pass of the bandwidth term.
  CHECK(plan::collective_seconds(CommOp::broadcast, Algorithm::ring, n, 4, link, wire) == Approx(a + n * b));
  CHECK(wire == Approx(n));
  CHECK(plan::collective_seconds(CommOp::reduce, Algorithm::ring, n, 4, link, wire) == Approx(a + n * b + n * g));
  // p = 5: a tree takes ⌈lg 5⌉ = 3 steps.
  CHECK(plan::collective_seconds(CommOp::broadcast, Algorithm::binomial_tree, n, 5, link, wire) ==
        Approx(3 * (a + n * b)));
}

TEST_CASE("time model: products at their shape class's rate times the threads, other ops at memory bandwidth",
          "[time_model]") {
  core::OpLedger ops;
  ops.record(product(2'000'000'000, 32));   // 2 s at 1 GFLOP/s
  ops.record(product(4'000'000'000, 128));  // 1 s at 4 GFLOP/s
  ops.record({.kind = core::OpKind::elementwise,
              .flops = 1,
              .bytes_read = 6'000'000'000,
              .bytes_written = 4'000'000'000});  // 1 s at 10 GB/s
  const plan::Placement one{.layout = train::Layout::serial, .ranks = 1, .ranks_per_node = 1};
  const auto t1 = plan::predict_time(ops, comm::CommLedger{}, toy(), one, 0, {.threads = 1});
  CHECK(t1.compute_s == Approx(4.0));
  CHECK(t1.communication_s == 0.0);
  CHECK(t1.total_s == Approx(4.0));
  const auto t2 = plan::predict_time(ops, comm::CommLedger{}, toy(), one, 0, {.threads = 2});
  CHECK(t2.compute_s == Approx(1.0 + 0.5 + 1.0));  // threads divide the products only
}

TEST_CASE("time model: a kind of op the profile rates runs at that rate times the threads; attention by its FLOPs",
          "[time_model]") {
  core::OpLedger ops;
  ops.record(
      {.kind = core::OpKind::elementwise, .flops = 1, .bytes_read = 3'000'000'000, .bytes_written = 1'000'000'000});
  ops.record({.kind = core::OpKind::layernorm, .flops = 1, .bytes_read = 2'000'000'000, .bytes_written = 0});
  ops.record({.kind = core::OpKind::attention,
              .flops = 6'000'000'000,
              .bytes_read = 1'000'000'000,
              .bytes_written = 0,
              .min_dim = 128});
  plan::HardwareProfile h = toy();
  h.op_rate[static_cast<size_t>(core::OpKind::elementwise)] = 2e9;  // bytes/s: 4 GB in 2 s
  h.op_rate[static_cast<size_t>(core::OpKind::attention)] = 3e9;    // FLOP/s: 6 GFLOP in 2 s
  const plan::Placement one{.layout = train::Layout::serial, .ranks = 1, .ranks_per_node = 1};
  const auto t1 = plan::predict_time(ops, comm::CommLedger{}, h, one, 0, {.threads = 1});
  const auto kind = [&](const plan::TimeBreakdown& t, core::OpKind k) {
    return t.compute_by_kind[static_cast<size_t>(k)];
  };
  CHECK(kind(t1, core::OpKind::elementwise) == Approx(2.0));
  CHECK(kind(t1, core::OpKind::attention) == Approx(2.0));
  CHECK(kind(t1, core::OpKind::layernorm) == Approx(0.2));  // no rate: 2 GB at the memory's 10 GB/s
  const auto t2 = plan::predict_time(ops, comm::CommLedger{}, h, one, 0, {.threads = 2});
  CHECK(kind(t2, core::OpKind::elementwise) == Approx(1.0));
  CHECK(kind(t2, core::OpKind::attention) == Approx(1.0));
  CHECK(kind(t2, core::OpKind::layernorm) == Approx(0.2));  // memory bandwidth does not grow with threads
  // Without its rate, attention's FLOPs are a product's: 6 GFLOP at the 4 GFLOP/s class.
  CHECK(kind(plan::predict_time(ops, comm::CommLedger{}, toy(), one, 0, {.threads = 1}), core::OpKind::attention) ==
        Approx(1.5));
}

TEST_CASE("time model: more ranks on a node than devices take turns", "[time_model]") {
  core::OpLedger ops;
  ops.record(product(4'000'000'000, 128));  // 1 s alone
  comm::CommLedger comm;
  comm.record("world", CommOp::all_reduce, 4000, 8);
  const plan::Placement crowded{.layout = train::Layout::tp1d, .ranks = 8, .ranks_per_node = 8};  // 8 ranks, 4 devices
  const auto t = plan::predict_time(ops, comm, toy(), crowded, 0, {});
  const plan::Link l = toy().intra_node;
  const double all_reduce =
      1e-6 + 14 * l.alpha_s + 2 * 4000 * 7.0 / 8 * l.beta_s_per_byte + 4000 * 7.0 / 8 * l.gamma_s_per_byte;
  CHECK(t.time_sharing == Approx(2.0));
  CHECK(t.compute_s == Approx(2.0));
  CHECK(t.communication_s == Approx(2 * all_reduce));
}

TEST_CASE("time model: a group that spans nodes takes the inter-node link, shared by the node's groups",
          "[time_model]") {
  // 2D on 2 × 2, two ranks per node: a row {0, 1} stays on node 0; a column {0, 2} spans two nodes,
  // and both columns of node 0 send through its link at once (sharing 2 ≤ devices_per_link 2).
  comm::CommLedger comm;
  comm.record("row", CommOp::all_reduce, 1000, 2);
  comm.record("col", CommOp::all_reduce, 1000, 2);
  const plan::Placement grid{.layout = train::Layout::tp2d, .ranks = 4, .ranks_per_node = 2};
  const auto t = plan::predict_time(core::OpLedger{}, comm, toy(), grid, 0, {});
  REQUIRE(t.communication.size() == 2);
  const plan::Link in = toy().intra_node, out = toy().inter_node;
  for (const plan::CollectiveTime& c : t.communication) {
    const bool row = c.communicator == "row";
    const plan::Link& l = row ? in : out;
    const double beta = row ? l.beta_s_per_byte : 2 * l.beta_s_per_byte;
    CHECK(c.link == (row ? "intra_node" : "inter_node"));
    CHECK(c.sharing == (row ? 1 : 2));
    CHECK(c.seconds == Approx(1e-6 + 2 * l.alpha_s + 1000 * beta + 500 * l.gamma_s_per_byte));
  }
  CHECK(plan::group_of(grid, "row", 3) == std::vector<int>{2, 3});
  CHECK(plan::group_of(grid, "col", 3) == std::vector<int>{1, 3});
  CHECK(plan::group_of(grid, "world", 3) == std::vector<int>{0, 1, 2, 3});
}

TEST_CASE("time model: overlap hides (q − 1)/q of the smaller of SUMMA's communication and its products",
          "[time_model]") {
  core::OpLedger ops;
  ops.record(product(4'000'000'000, 128));  // 1 s of products
  comm::CommLedger comm;
  comm.record("row", CommOp::broadcast, 1'000'000, 3);  // SUMMA's: hidden
  comm.record("world", CommOp::all_reduce, 8, 9);       // not SUMMA's: never hidden
  const plan::Placement grid{.layout = train::Layout::tp2d, .ranks = 9, .ranks_per_node = 9};
  plan::HardwareProfile h = toy();
  h.devices_per_node = 9;  // no time-sharing
  const auto plain = plan::predict_time(ops, comm, h, grid, 4, {});
  const auto overlapped = plan::predict_time(ops, comm, h, grid, 4, {.threads = 1, .overlap = true});
  double summa = 0;
  for (const auto& c : plain.communication)
    if (c.communicator == "row") summa = c.seconds;
  REQUIRE(summa > 0);
  CHECK(plain.hidden_s == 0.0);
  CHECK(overlapped.hidden_s == Approx(2.0 / 3.0 * std::min(1.0, summa)));
  CHECK(overlapped.total_s == Approx(plain.total_s - overlapped.hidden_s));
}

TEST_CASE("time model: D data-parallel copies, world rank d·P + t, nodes filled in rank order", "[time_model]") {
  // 2D on 2 × 2, two copies: ranks 0–3 are copy 0, 4–7 copy 1. A copy's grid is its own; the data
  // group of a rank is the same t in every copy.
  const plan::Placement two{.layout = train::Layout::tp2d, .ranks = 4, .ranks_per_node = 4, .data_parallel = 2};
  CHECK(plan::group_of(two, "model", 5) == std::vector<int>{4, 5, 6, 7});
  CHECK(plan::group_of(two, "data", 5) == std::vector<int>{1, 5});
  CHECK(plan::group_of(two, "row", 6) == std::vector<int>{6, 7});
  CHECK(plan::group_of(two, "col", 6) == std::vector<int>{4, 6});
  CHECK(plan::group_of(two, "world", 6).size() == 8);

  // 1D on 2 ranks, 2 copies, 2 ranks per node: each copy fills a node, so the data groups {0, 2}
  // and {1, 3} cross the inter-node link, both of node 0's at once (sharing 2 ≤ devices_per_link 2),
  // while the copy's own all-reduce stays inside its node.
  comm::CommLedger comm;
  comm.record("model", CommOp::all_reduce, 1000, 2);
  comm.record("data", CommOp::all_reduce, 4000, 2);
  const plan::Placement split{.layout = train::Layout::tp1d, .ranks = 2, .ranks_per_node = 2, .data_parallel = 2};
  const auto t = plan::predict_time(core::OpLedger{}, comm, toy(), split, 0, {});
  REQUIRE(t.communication.size() == 2);
  const plan::Link in = toy().intra_node, out = toy().inter_node;
  for (const plan::CollectiveTime& c : t.communication) {
    if (c.communicator == "model") {
      CHECK(c.link == "intra_node");
      CHECK(c.seconds == Approx(1e-6 + 2 * in.alpha_s + 1000 * in.beta_s_per_byte + 500 * in.gamma_s_per_byte));
    } else {
      CHECK(c.link == "inter_node");
      CHECK(c.sharing == 2);
      // ring at p = 2: 2(p − 1)α + 2n(p − 1)/p·β·sharing + n(p − 1)/p·γ
      CHECK(c.seconds == Approx(1e-6 + 2 * out.alpha_s + 4000 * 2 * out.beta_s_per_byte + 2000 * out.gamma_s_per_byte));
    }
  }
  // The same world on one node: the data group stays inside it, and the node's 4 ranks fit its 4 devices.
  const plan::Placement one_node{.layout = train::Layout::tp1d, .ranks = 2, .ranks_per_node = 4, .data_parallel = 2};
  const auto u = plan::predict_time(core::OpLedger{}, comm, toy(), one_node, 3, {});
  for (const plan::CollectiveTime& c : u.communication) CHECK(c.link == "intra_node");
  CHECK(u.time_sharing == 1.0);
  // 4 serial copies on 2-rank nodes: one data group of 4 across two nodes, one group per node. Its
  // ring's 6 steps: 2(k − 1) = 2 between the nodes at α_inter, the other 4 inside them at α_intra.
  comm::CommLedger data;
  data.record("data", CommOp::all_reduce, 4000, 4);
  const plan::Placement serial{.layout = train::Layout::serial, .ranks = 1, .ranks_per_node = 2, .data_parallel = 4};
  const auto v = plan::predict_time(core::OpLedger{}, data, toy(), serial, 3, {});
  REQUIRE(v.communication.size() == 1);
  CHECK(v.communication[0].sharing == 1);
  CHECK(v.communication[0].seconds ==
        Approx(1e-6 + 4 * in.alpha_s + 2 * out.alpha_s + 2 * 4000 * 0.75 * out.beta_s_per_byte +
               4000 * 0.75 * out.gamma_s_per_byte));
}

TEST_CASE("time model: overlap hides the data-parallel all-reduce but its last three buckets, up to the backward pass",
          "[time_model]") {
  // A step of 3 s of products: 1 s forward, 2 s backward; the optimizer's 0.5 s at memory bandwidth
  // is not the backward pass's. The all-reduce of n buckets (calls) crosses no node (one node of 4);
  // the last three (block 0's, wte and wpe's, ln_f's) have no backward pass left to hide behind.
  core::OpLedger forward, step;
  forward.record(product(4'000'000'000, 128));  // 1 s
  step.record(product(12'000'000'000, 128));    // 3 s: forward and backward
  step.record(
      {.kind = core::OpKind::optimizer, .flops = 1, .bytes_read = 4'000'000'000, .bytes_written = 1'000'000'000});
  const plan::Placement placement{.layout = train::Layout::serial, .ranks = 1, .ranks_per_node = 4, .data_parallel = 4};
  const plan::Link l = toy().intra_node;
  // One call of n bytes at p = 4 (ring): launch + 6α + 1.5n·β + 0.75n·γ.
  auto call = [&](double n) {
    return 1e-6 + 6 * l.alpha_s + 1.5 * n * l.beta_s_per_byte + 0.75 * n * l.gamma_s_per_byte;
  };

  comm::CommLedger small;  // 5 buckets of 1 MB: A = 5·call, well under the backward pass
  for (int k = 0; k < 5; ++k) small.record("data", CommOp::all_reduce, 1'000'000, 4);
  const auto plain =
      plan::predict_time(step, small, toy(), placement, 0, {.threads = 1, .overlap = false, .forward_ops = &forward});
  const auto overlapped =
      plan::predict_time(step, small, toy(), placement, 0, {.threads = 1, .overlap = true, .forward_ops = &forward});
  CHECK(plain.compute_s == Approx(3.5));
  CHECK(plain.communication_s == Approx(5 * call(1e6)));
  CHECK(plain.hidden_s == 0.0);
  CHECK(overlapped.hidden_data_parallel_s == Approx(2 * call(1e6)));  // all but the last 3 of 5 buckets
  CHECK(overlapped.hidden_s == Approx(2 * call(1e6)));
  CHECK(overlapped.total_s == Approx(3.5 + 3 * call(1e6)));

  comm::CommLedger large;  // 6 buckets of 1 GB: 3/6 of A is more than the 2 s backward pass
  for (int k = 0; k < 6; ++k) large.record("data", CommOp::all_reduce, 1'000'000'000, 4);
  REQUIRE(3 * call(1e9) > 2.0);
  const auto capped =
      plan::predict_time(step, large, toy(), placement, 0, {.threads = 1, .overlap = true, .forward_ops = &forward});
  CHECK(capped.hidden_data_parallel_s == Approx(2.0));
  CHECK(capped.total_s == Approx(3.5 + 6 * call(1e9) - 2.0));

  comm::CommLedger one;  // three buckets: they are the last three, nothing to hide them behind
  for (int k = 0; k < 3; ++k) one.record("data", CommOp::all_reduce, 1'000'000, 4);
  CHECK(plan::predict_time(step, one, toy(), placement, 0, {.threads = 1, .overlap = true, .forward_ops = &forward})
            .hidden_s == 0.0);
  // Without the forward pass's ops the backward pass is unknown: nothing is hidden.
  CHECK(plan::predict_time(step, small, toy(), placement, 0, {.threads = 1, .overlap = true}).hidden_s == 0.0);
}

namespace {

// The one collective of `comm` costed for `rank` of `placement` on `h`.
plan::CollectiveTime only(const comm::CommLedger& comm, const plan::HardwareProfile& h,
                          const plan::Placement& placement, int rank) {
  const auto t = plan::predict_time(core::OpLedger{}, comm, h, placement, rank, {});
  REQUIRE(t.communication.size() == 1);
  return t.communication[0];
}

}  // namespace

TEST_CASE(
    "time model: a ring across nodes charges its intra-node steps α_intra and its 2(k − 1) or k − 1 "
    "inter-node steps α_inter (NCCL's tuning model)",
    "[time_model]") {
  const plan::HardwareProfile h = toy();  // one NIC per node
  const plan::Link in = h.intra_node, out = h.inter_node;
  const double n = 8000;
  // 1D on 8 ranks, 4 per node: k = 2 nodes, one group, its 4 ranks on the node share its one NIC.
  const plan::Placement two{.layout = train::Layout::tp1d, .ranks = 8, .ranks_per_node = 4};
  comm::CommLedger all_reduce, all_gather, reduce_scatter;
  all_reduce.record("world", CommOp::all_reduce, static_cast<int64_t>(n), 8);
  all_gather.record("world", CommOp::all_gather, static_cast<int64_t>(n), 8);
  reduce_scatter.record("world", CommOp::reduce_scatter, static_cast<int64_t>(n), 8);
  // all_reduce: 14 steps, 2 between nodes; the bytes at the slower link, max(β_intra, β_NIC) = β_inter.
  const plan::CollectiveTime ar = only(all_reduce, h, two, 5);
  CHECK(ar.nodes == 2);
  CHECK(ar.nics == 1.0);
  CHECK(ar.seconds == Approx(1e-6 + 12 * in.alpha_s + 2 * out.alpha_s + 2 * n * 7 / 8 * out.beta_s_per_byte +
                             n * 7 / 8 * out.gamma_s_per_byte));
  // all_gather and reduce_scatter: 7 steps, 1 between nodes.
  CHECK(only(all_gather, h, two, 0).seconds ==
        Approx(1e-6 + 6 * in.alpha_s + 1 * out.alpha_s + n * 7 / 8 * out.beta_s_per_byte));
  CHECK(only(reduce_scatter, h, two, 0).seconds ==
        Approx(1e-6 + 6 * in.alpha_s + 1 * out.alpha_s + n * 7 / 8 * (out.beta_s_per_byte + out.gamma_s_per_byte)));
  // 1D on 6 ranks, 2 per node: k = 3, all_reduce's 10 steps, 4 of them between nodes.
  comm::CommLedger six;
  six.record("world", CommOp::all_reduce, static_cast<int64_t>(n), 6);
  const plan::Placement three{.layout = train::Layout::tp1d, .ranks = 6, .ranks_per_node = 2};
  CHECK(only(six, h, three, 0).seconds ==
        Approx(1e-6 + 6 * in.alpha_s + 4 * out.alpha_s + 2 * n * 5 / 6 * out.beta_s_per_byte +
               n * 5 / 6 * out.gamma_s_per_byte));
  CHECK(plan::ring_steps(CommOp::all_reduce, 6) == 10);
  CHECK(plan::ring_inter_node_steps(CommOp::all_reduce, 3) == 4);
  CHECK(plan::ring_inter_node_steps(CommOp::all_gather, 3) == 2);
  CHECK(plan::ring_steps(CommOp::broadcast, 6) == 0);
}

TEST_CASE(
    "time model: broadcast and reduce as NCCL's chain: one step's latency (the network's across nodes), "
    "bandwidth n·β",
    "[time_model]") {
  plan::HardwareProfile h = toy();
  h.algorithm.fill(Algorithm::ring);
  const plan::Link in = h.intra_node, out = h.inter_node;
  const double n = 5000;
  comm::CommLedger broadcast, reduce;
  broadcast.record("world", CommOp::broadcast, static_cast<int64_t>(n), 8);
  reduce.record("world", CommOp::reduce, static_cast<int64_t>(n), 8);
  const plan::Placement one{.layout = train::Layout::tp1d, .ranks = 8, .ranks_per_node = 8};
  const plan::Placement two{.layout = train::Layout::tp1d, .ranks = 8, .ranks_per_node = 4};
  // One node of 8 (time-shared 2 ways on the toy's 4 devices): launch + α_intra + n·β_intra, twice.
  CHECK(only(broadcast, h, one, 0).seconds == Approx(2 * (1e-6 + in.alpha_s + n * in.beta_s_per_byte)));
  // Two nodes of 4: launch + α_inter + n·max(β_intra, β_inter); the reduce adds n·γ_inter.
  CHECK(only(broadcast, h, two, 0).seconds == Approx(1e-6 + out.alpha_s + n * out.beta_s_per_byte));
  CHECK(only(reduce, h, two, 0).seconds ==
        Approx(1e-6 + out.alpha_s + n * out.beta_s_per_byte + n * out.gamma_s_per_byte));
  CHECK(only(reduce, h, two, 0).wire_bytes == Approx(n));
}

TEST_CASE("time model: a group across nodes gets min(its ranks on the node, NICs, NICs / groups) of its node's NICs",
          "[time_model]") {
  plan::HardwareProfile h = toy();
  h.algorithm.fill(Algorithm::ring);
  h.devices_per_node = 8;
  h.inter_node.nics_per_node = 4;
  const plan::Link in = h.intra_node, out = h.inter_node;
  const double n = 1000;
  comm::CommLedger world;
  world.record("world", CommOp::all_gather, static_cast<int64_t>(n), 16);
  // 1D on 16 ranks, 8 per node: one group, 8 ranks on the node, 4 NICs: min(8, 4, 4/1) = 4.
  // β_NIC / 4 = 2.5e-9 is still slower than β_intra = 1e-9: the bytes go at 2.5e-9.
  const plan::Placement two{.layout = train::Layout::tp1d, .ranks = 16, .ranks_per_node = 8};
  const plan::CollectiveTime ag = only(world, h, two, 0);
  CHECK(ag.nics == 4.0);
  CHECK(ag.sharing == 1);
  CHECK(ag.seconds == Approx(1e-6 + 14 * in.alpha_s + 1 * out.alpha_s + n * 15 / 16 * 2.5e-9));
  // With a network 8 times as fast per NIC, β_NIC / 4 = 0.25e-9 beats the intra-node link: β_intra.
  plan::HardwareProfile fast = h;
  fast.inter_node.beta_s_per_byte = 1e-9;
  CHECK(only(world, fast, two, 0).seconds == Approx(1e-6 + 14 * in.alpha_s + 1 * out.alpha_s + n * 15 / 16 * 1e-9));

  // 2D on 4 × 4, 8 ranks (two rows) per node: each column has m = 2 ranks on the node, and the
  // node's 4 columns send at once: min(2, 4, 4/4) = 1 NIC each; with 8 NICs, min(2, 8, 8/4) = 2.
  comm::CommLedger col;
  col.record("col", CommOp::broadcast, static_cast<int64_t>(n), 4);
  const plan::Placement grid{.layout = train::Layout::tp2d, .ranks = 16, .ranks_per_node = 8};
  const plan::CollectiveTime shared = only(col, h, grid, 0);
  CHECK(shared.sharing == 4);
  CHECK(shared.nics == 1.0);
  CHECK(shared.seconds == Approx(1e-6 + out.alpha_s + n * out.beta_s_per_byte));
  plan::HardwareProfile eight = h;
  eight.inter_node.nics_per_node = 8;
  CHECK(only(col, eight, grid, 0).nics == 2.0);
  CHECK(only(col, eight, grid, 0).seconds == Approx(1e-6 + out.alpha_s + n * out.beta_s_per_byte / 2));
  // One NIC for the 4 columns: a quarter each, β × 4.
  plan::HardwareProfile one = h;
  one.inter_node.nics_per_node = 1;
  CHECK(only(col, one, grid, 0).nics == 0.25);
  CHECK(only(col, one, grid, 0).seconds == Approx(1e-6 + out.alpha_s + n * 4 * out.beta_s_per_byte));
}
