// The planner's report: each chosen rank's step on meta (plan/step.h), its three ledgers as tables
// or JSON, and which rank is busiest.
#include "plan/plan.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <sstream>

#include "comm/comm_ledger.h"
#include "core/context.h"
#include "core/errors.h"
#include "plan/step.h"

namespace optimus::plan {

namespace {

struct RankLedgers {
  int rank = 0;
  core::MemoryLedger memory;  // peaks of the whole step
  core::MemoryLedger held;    // what is held after the update: current bytes
  core::OpLedger ops;
  comm::CommLedger comm;
};

RankLedgers run_rank(const PlanOptions& o, int rank) {
  RankLedgers r;
  r.rank = rank;
  StepOptions step;
  step.B = o.batch, step.T = o.config.n_positions;
  const std::vector<int> tokens(static_cast<size_t>(step.B) * static_cast<size_t>(step.T), 0);  // meta reads none
  auto world = meta_world(o.layout, o.ranks, rank, r.comm);
  const StepResult result = run_training_step(o.layout, o.config, core::meta_context(r.memory, &r.ops), *world, step,
                                              tokens.data(), tokens.data());
  r.held = result.after_step;
  return r;
}

nlohmann::json to_json(const RankLedgers& r) {
  nlohmann::json memory, ops, comm;
  for (int c = 0; c < core::kMemoryCategoryCount; ++c) {
    const auto category = static_cast<core::MemoryCategory>(c);
    memory[core::memory_category_name(category)] = {{"peak_bytes", r.memory.peak(category)},
                                                    {"held_bytes", r.held.current(category)}};
  }
  memory["total"] = {{"peak_bytes", r.memory.peak_total()}, {"held_bytes", r.held.current_total()}};
  for (int k = 0; k < core::kOpKindCount; ++k) {
    const auto kind = static_cast<core::OpKind>(k);
    const auto& t = r.ops.of(kind);
    ops[core::op_kind_name(kind)] = {
        {"calls", t.calls}, {"flops", t.flops}, {"bytes_read", t.bytes_read}, {"bytes_written", t.bytes_written}};
  }
  for (const std::string& name : r.comm.communicators()) {
    nlohmann::json c = {{"group_size", r.comm.group_size(name)}};
    for (int k = 0; k < comm::kCommOpCount; ++k) {
      const auto op = static_cast<comm::CommOp>(k);
      if (r.comm.calls(name, op) == 0) continue;
      c[comm::comm_op_name(op)] = {{"calls", r.comm.calls(name, op)}, {"bytes", r.comm.bytes(name, op)}};
    }
    comm[name] = c;
  }
  return {{"rank", r.rank}, {"memory", memory}, {"ops", ops}, {"comm", comm}};
}

double mib(size_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

std::string to_text(const RankLedgers& r) {
  std::ostringstream out;
  char line[200];
  out << "rank " << r.rank << "\n  memory (MiB)      peak        held after the step\n";
  for (int c = 0; c < core::kMemoryCategoryCount; ++c) {
    const auto category = static_cast<core::MemoryCategory>(c);
    std::snprintf(line, sizeof line, "    %-14s %12.1f %12.1f\n", core::memory_category_name(category),
                  mib(r.memory.peak(category)), mib(r.held.current(category)));
    out << line;
  }
  std::snprintf(line, sizeof line, "    %-14s %12.1f %12.1f\n", "total", mib(r.memory.peak_total()),
                mib(r.held.current_total()));
  out << line << "  ops\n";
  for (int k = 0; k < core::kOpKindCount; ++k) {
    const auto kind = static_cast<core::OpKind>(k);
    const auto& t = r.ops.of(kind);
    std::snprintf(line, sizeof line, "    %-14s calls %8lld  GFLOP %14.3f  read %12.1f MiB  written %12.1f MiB\n",
                  core::op_kind_name(kind), static_cast<long long>(t.calls), static_cast<double>(t.flops) / 1e9,
                  mib(static_cast<size_t>(t.bytes_read)), mib(static_cast<size_t>(t.bytes_written)));
    out << line;
  }
  out << "  communication\n";
  if (r.comm.communicators().empty()) out << "    none\n";
  for (const std::string& name : r.comm.communicators()) {
    for (int k = 0; k < comm::kCommOpCount; ++k) {
      const auto op = static_cast<comm::CommOp>(k);
      if (r.comm.calls(name, op) == 0) continue;
      std::snprintf(line, sizeof line, "    %-6s (%d ranks) %-15s calls %8lld  %14.1f MiB\n", name.c_str(),
                    r.comm.group_size(name), comm::comm_op_name(op), static_cast<long long>(r.comm.calls(name, op)),
                    mib(static_cast<size_t>(r.comm.bytes(name, op))));
      out << line;
    }
  }
  return out.str();
}

}  // namespace

std::vector<int> ranks_to_run(int P) {
  if (P <= 16) {
    std::vector<int> all;
    for (int r = 0; r < P; ++r) all.push_back(r);
    return all;
  }
  return {0, P - 1};
}

std::string plan_report(const PlanOptions& o) {
  if (o.ranks < 1) throw core::ConfigError("--ranks must be 1 or more, but is " + std::to_string(o.ranks));
  if (o.batch < 1) throw core::ConfigError("--batch must be 1 or more, but is " + std::to_string(o.batch));
  o.config.validate();
  std::vector<RankLedgers> ranks;
  for (int r : ranks_to_run(o.ranks)) ranks.push_back(run_rank(o, r));
  size_t busiest = 0;
  for (size_t k = 1; k < ranks.size(); ++k) {
    if (ranks[k].memory.peak_total() > ranks[busiest].memory.peak_total()) busiest = k;
  }

  const model::GPTConfig& c = o.config;
  if (o.json) {
    nlohmann::json out = {{"layout", o.layout},
                          {"ranks", o.ranks},
                          {"model",
                           {{"n_layer", c.n_layer},
                            {"n_embd", c.n_embd},
                            {"n_head", c.n_head},
                            {"n_positions", c.n_positions},
                            {"vocab_size", c.vocab_size},
                            {"parameters", c.num_parameters()}}},
                          {"batch", o.batch},
                          {"busiest_rank", ranks[busiest].rank},
                          {"per_rank", nlohmann::json::array()}};
    for (const RankLedgers& r : ranks) out["per_rank"].push_back(to_json(r));
    return out.dump(1) + "\n";
  }
  std::ostringstream out;
  out << "plan: layout " << o.layout << " on " << o.ranks << " ranks, L" << c.n_layer << " C" << c.n_embd << " NH"
      << c.n_head << " T" << c.n_positions << " V" << c.vocab_size << " (" << c.num_parameters()
      << " parameters), batch " << o.batch << "; one training step on the meta device for " << ranks.size() << " of "
      << o.ranks << " ranks; no time model\n";
  for (const RankLedgers& r : ranks) out << to_text(r);
  out << "busiest rank: " << ranks[busiest].rank << " (the largest peak memory, "
      << mib(ranks[busiest].memory.peak_total()) << " MiB)\n";
  return out.str();
}

}  // namespace optimus::plan
