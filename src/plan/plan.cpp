// The planner's report: each chosen rank's step on meta (plan/step.h), its three ledgers as tables
// or JSON, which rank is busiest, and with a hardware profile the time model's seconds
// (plan/time_model.h) and the largest batch that fits.
#include "plan/plan.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <sstream>

#include "comm/comm_ledger.h"
#include "comm/grid.h"
#include "core/context.h"
#include "core/errors.h"
#include "plan/hardware.h"
#include "plan/step.h"
#include "plan/time_model.h"
#include "train/data_parallel.h"

namespace optimus::plan {

namespace {

// printf into a string as long as the text, so that a report's line is never cut, whatever the
// numbers' widths.
[[gnu::format(printf, 1, 2)]] std::string formatted(const char* format, ...) {
  va_list args, again;
  va_start(args, format);
  va_copy(again, args);
  const int length = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::string text(static_cast<size_t>(std::max(length, 0)), '\0');
  if (length > 0) std::vsnprintf(text.data(), text.size() + 1, format, again);
  va_end(again);
  return text;
}

struct RankLedgers {
  int rank = 0;
  core::MemorySnapshot memory;  // peaks of the whole step, model building included
  core::MemorySnapshot held;    // what is held after the update: current bytes
  core::OpLedger ops;           // the step's, model building included
  comm::CommLedger comm;
  StepResult step, forward;  // the step alone, and a forward pass alone (their ops and collectives)
};

// One pass of `run` (run_training_step or run_forward_pass) on world rank `rank` of a meta world
// at batch B: each copy its share B / D, the gradients summed over the copies in a training step.
StepResult run_on_meta(const PlanOptions& o, int rank, int B, core::MemoryLedger& memory, core::OpLedger& ops,
                       comm::CommLedger& comm, decltype(&run_training_step) run) {
  StepOptions step;
  step.B = B, step.T = o.config.n_positions, step.stage = o.stage;
  const std::vector<int> tokens(static_cast<size_t>(step.B) * static_cast<size_t>(step.T), 0);  // meta reads none
  count_at_precision(memory, o.precision);  // the fp32 code's Buffers, counted at the precision's bytes
  auto world = train::meta_world(o.layout, o.ranks, rank, comm, o.data_parallel);
  const train::DataParallel dp(*world, o.data_parallel);
  if (o.data_parallel > 1) step.data_parallel = &dp;
  // Per-thread CPU scratch for the threads per rank planned for, whatever this machine has.
  return run(o.layout, o.config, core::meta_context(memory, &ops, o.threads), *dp.model, step, tokens.data(),
             tokens.data());
}

RankLedgers run_rank(const PlanOptions& o, int rank) {
  RankLedgers r;
  r.rank = rank;
  core::MemoryLedger step_memory;
  r.step = run_on_meta(o, rank, o.batch, step_memory, r.ops, r.comm, &run_training_step);
  r.memory = step_memory.snapshot();
  r.held = r.step.after_step;
  if (!o.hardware.empty()) {
    core::MemoryLedger memory;
    core::OpLedger ops;
    comm::CommLedger comm;
    r.forward = run_on_meta(o, rank, o.batch, memory, ops, comm, &run_forward_pass);
  }
  // The collectives moved float32; each communicator's bytes at the precision's.
  r.comm = at_precision(r.comm, o.precision);
  r.step.comm = at_precision(r.step.comm, o.precision);
  r.forward.comm = at_precision(r.forward.comm, o.precision);
  return r;
}

// ---- time ------------------------------------------------------------------------------------------

struct RankTimes {
  TimeBreakdown step, forward;
};

Placement placement_of(const PlanOptions& o, const HardwareProfile& h) {
  return {.layout = o.layout,
          .ranks = o.ranks,
          .ranks_per_node = o.ranks_per_node > 0 ? o.ranks_per_node : h.devices_per_node,
          .data_parallel = o.data_parallel,
          .arrangement = o.stage.placement};
}

// `h` is the profile at the options' precision (at_precision), and so are the ops the model reads.
RankTimes time_rank(const PlanOptions& o, const HardwareProfile& h, const RankLedgers& r) {
  const Placement placement = placement_of(o, h);
  const core::OpLedger step_ops = at_precision(r.step.ops, o.precision);
  const core::OpLedger forward_ops = at_precision(r.forward.ops, o.precision);
  const TimeOptions options{.threads = o.threads, .overlap = o.stage.overlap, .forward_ops = &forward_ops};
  return {predict_time(step_ops, r.step.comm, h, placement, r.rank, options),
          predict_time(forward_ops, r.forward.comm, h, placement, r.rank, options)};
}

nlohmann::json to_json(const TimeBreakdown& t) {
  nlohmann::json by_kind, collectives = nlohmann::json::array();
  for (int k = 0; k < core::kOpKindCount; ++k) {
    by_kind[core::op_kind_name(static_cast<core::OpKind>(k))] = t.compute_by_kind[static_cast<size_t>(k)];
  }
  for (const CollectiveTime& c : t.communication) {
    collectives.push_back({{"communicator", c.communicator},
                           {"operation", comm::comm_op_name(c.op)},
                           {"group_size", c.group_size},
                           {"calls", c.calls},
                           {"bytes", c.bytes},
                           {"algorithm", c.algorithm},
                           {"link", c.link},
                           {"sharing", c.sharing},
                           {"nodes", c.nodes},
                           {"nics", c.nics},
                           {"wire_bytes", c.wire_bytes},
                           {"seconds", c.seconds}});
  }
  return {{"compute_s", t.compute_s},     {"communication_s", t.communication_s},
          {"hidden_s", t.hidden_s},       {"hidden_data_parallel_s", t.hidden_data_parallel_s},
          {"total_s", t.total_s},         {"time_sharing", t.time_sharing},
          {"compute_by_kind_s", by_kind}, {"communication", collectives}};
}

std::string to_text(const char* what, const TimeBreakdown& t) {
  std::ostringstream out;
  out << formatted("  time of %-8s %10.3f ms = compute %10.3f + communication %10.3f - hidden %8.3f", what,
                   1e3 * t.total_s, 1e3 * t.compute_s, 1e3 * t.communication_s, 1e3 * t.hidden_s)
      << (t.time_sharing > 1 ? " (ranks share cores: x" + std::to_string(t.time_sharing).substr(0, 4) + ")" : "")
      << "\n";
  int width = 6;  // the names' column: "world" and 2D's "row" and "col" fit six, 3D's "cube_depth" not
  for (const CollectiveTime& c : t.communication) width = std::max(width, static_cast<int>(c.communicator.size()));
  for (const CollectiveTime& c : t.communication) {
    out << formatted("    %-*s %-15s %-17s %-10s sharing %2d  wire %12.1f MiB  %10.3f ms\n", width,
                     c.communicator.c_str(), comm::comm_op_name(c.op), c.algorithm.c_str(), c.link.c_str(), c.sharing,
                     c.wire_bytes / (1024.0 * 1024.0), 1e3 * c.seconds);
  }
  return out.str();
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
  out << "rank " << r.rank << "\n  memory (MiB)      peak        held after the step\n";
  for (int c = 0; c < core::kMemoryCategoryCount; ++c) {
    const auto category = static_cast<core::MemoryCategory>(c);
    out << formatted("    %-14s %12.1f %12.1f\n", core::memory_category_name(category), mib(r.memory.peak(category)),
                     mib(r.held.current(category)));
  }
  out << formatted("    %-14s %12.1f %12.1f\n", "total", mib(r.memory.peak_total()), mib(r.held.current_total()))
      << "  ops\n";
  for (int k = 0; k < core::kOpKindCount; ++k) {
    const auto kind = static_cast<core::OpKind>(k);
    const auto& t = r.ops.of(kind);
    out << formatted("    %-14s calls %8lld  GFLOP %14.3f  read %12.1f MiB  written %12.1f MiB\n",
                     core::op_kind_name(kind), static_cast<long long>(t.calls), static_cast<double>(t.flops) / 1e9,
                     mib(static_cast<size_t>(t.bytes_read)), mib(static_cast<size_t>(t.bytes_written)));
  }
  out << "  communication\n";
  if (r.comm.communicators().empty()) out << "    none\n";
  int width = 6;  // as in the time's table
  for (const std::string& name : r.comm.communicators()) width = std::max(width, static_cast<int>(name.size()));
  for (const std::string& name : r.comm.communicators()) {
    for (int k = 0; k < comm::kCommOpCount; ++k) {
      const auto op = static_cast<comm::CommOp>(k);
      if (r.comm.calls(name, op) == 0) continue;
      out << formatted("    %-*s (%d ranks) %-15s calls %8lld  %14.1f MiB\n", width, name.c_str(),
                       r.comm.group_size(name), comm::comm_op_name(op), static_cast<long long>(r.comm.calls(name, op)),
                       mib(static_cast<size_t>(r.comm.bytes(name, op))));
    }
  }
  return out.str();
}

// The ranks whose memory decides the largest batch: the first and the last. They hold the
// first and the last vocabulary block (the last one shortened by padding) and, in 2D, the two
// corners of the grid; every other rank's blocks are the same size as one of theirs.
std::vector<int> memory_ranks(int P) {
  return P == 1 ? std::vector<int>{0} : std::vector<int>{0, P - 1};
}

// The step's peak on the busier of memory_ranks at batch B.
double peak_bytes(const PlanOptions& o, int B) {
  size_t peak = 0;
  for (int rank : memory_ranks(o.ranks)) {
    core::MemoryLedger memory;
    core::OpLedger ops;
    comm::CommLedger comm;
    run_on_meta(o, rank, B, memory, ops, comm, &run_training_step);
    peak = std::max(peak, memory.peak_total());
  }
  return static_cast<double>(peak);
}

// The most ranks a plan's world may have: the time model visits every rank of a group for each
// collective, and 16 Mi ranks is far past any machine built.
constexpr int64_t kMaxWorld = int64_t{1} << 24;

// The extent require_step_sizes checks for a step of `o` at batch B.
model::StepExtent extent(const PlanOptions& o, int64_t B) {
  return {.batch = B, .seq = o.config.n_positions, .ranks = o.ranks, .copies = o.data_parallel, .threads = o.threads};
}

// The largest B up to `limit` whose step's sizes all fit (model::require_step_sizes); they grow with B.
int largest_sized_batch(const PlanOptions& o, int limit) {
  int lo = 0, hi = limit;  // every B up to lo fits (0: none), every B past hi does not
  while (lo < hi) {
    const int mid = lo + (hi - lo + 1) / 2;
    if (model::step_sizes_problem(o.config, extent(o, mid)).empty()) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

}  // namespace

int largest_batch(const PlanOptions& o, int64_t bytes, int limit) {
  const int unit =
      o.data_parallel * train::batch_unit(o.layout, o.ranks, o.config.n_positions, o.stage.sequence_parallel);
  limit = std::min(limit, largest_sized_batch(o, limit)) / unit * unit;  // past it a size passes its type
  auto step_fits = [&](int B) { return peak_bytes(o, B) <= static_cast<double>(bytes); };
  if (limit < unit) return 0;
  const double at1 = peak_bytes(o, unit);
  if (at1 > static_cast<double>(bytes)) return 0;
  if (int64_t{2} * unit > limit) return unit;
  // Every buffer's size is affine in B, so the peak is the largest of affine functions of B: convex.
  // The line through B = unit and 2·unit, extended, stays below it, so the B where the line reaches
  // `bytes` bounds the answer from above; usually the peak is that line, and one check confirms it.
  const double at2 = peak_bytes(o, 2 * unit);
  const double slope = (at2 - at1) / unit;
  double bound = slope > 0 ? unit + (static_cast<double>(bytes) - at1) / slope : limit;
  int hi = static_cast<int>(std::min<double>(limit, std::floor(bound / unit) * unit));  // at most this
  int lo = unit;                                                                        // fits
  if (hi <= lo) return lo;
  if (step_fits(hi)) return hi;
  while (hi - lo > unit) {  // lo fits, hi does not
    const int mid = lo + (hi - lo) / unit / 2 * unit;
    (step_fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

std::vector<int> ranks_to_run(int P, int D) {
  std::vector<int> copy = {0, P - 1};
  if (P <= 16) {
    copy.clear();
    for (int r = 0; r < P; ++r) copy.push_back(r);
  }
  std::vector<int> ranks = copy;
  if (D > 1) {  // the last copy: the same ledgers, maybe other links and other sharing
    for (int t : copy) ranks.push_back((D - 1) * P + t);
  }
  return ranks;
}

void require_valid(const PlanOptions& o) {
  if (o.ranks < 1) throw core::ConfigError("--ranks must be 1 or more, but is " + std::to_string(o.ranks));
  if (o.batch < 1) throw core::ConfigError("--batch must be 1 or more, but is " + std::to_string(o.batch));
  if (o.threads < 1) throw core::ConfigError("--threads must be 1 or more, but is " + std::to_string(o.threads));
  if (o.data_parallel < 1) {
    throw core::ConfigError("--data-parallel must be 1 or more, but is " + std::to_string(o.data_parallel));
  }
  if (const int64_t world = int64_t{o.ranks} * o.data_parallel; world > kMaxWorld) {
    throw core::ConfigError("--ranks " + std::to_string(o.ranks) + " times --data-parallel " +
                            std::to_string(o.data_parallel) + " is a world of " + std::to_string(world) +
                            " ranks, past the " + std::to_string(kMaxWorld) +
                            " (2^24) a plan models; use fewer --ranks or --data-parallel");
  }
  if (o.ranks_per_node < 0) {
    throw core::ConfigError("--ranks-per-node must be 1 or more, but is " + std::to_string(o.ranks_per_node));
  }
  if (o.ranks_per_node > kMaxWorld) {
    throw core::ConfigError("--ranks-per-node must be at most " + std::to_string(kMaxWorld) + " (2^24), but is " +
                            std::to_string(o.ranks_per_node));
  }
  o.config.validate();  // first: the layout's checks below take the model's widths
  model::require_step_sizes(o.config, extent(o, o.batch));
  train::require_fits(o.layout, o.ranks, o.stage);  // the copy's ranks, named as the world of --ranks
  if (o.data_parallel > 1) {                        // the layout's batch checks come with the model, on a copy's share
    train::require_data_parallel_fits(o.layout, o.ranks * o.data_parallel, o.data_parallel, o.batch, 1,
                                      o.config.n_positions, o.stage, "cpu");
  }
}

double host_bytes_lower_bound(const PlanOptions& o) {
  // A block's Buffers, their names and the ledgers' records: 11.7 KiB measured in a serial plan.
  constexpr double kBytesPerBlock = 8 * 1024;
  return kBytesPerBlock * o.config.n_layer + 4.0 * o.batch * o.config.n_positions;
}

namespace {

// What the report says: the ranks' ledgers, with a profile their times, and the extremes.
struct Report {
  bool timed = false;
  HardwareProfile hardware;
  std::vector<RankLedgers> ranks;
  std::vector<RankTimes> times;
  size_t busiest = 0, slowest = 0;  // indices into ranks
  int fits = 0;                     // the largest batch that fits a device (with a profile)
};

Report run_report(const PlanOptions& o) {
  Report r;
  r.timed = !o.hardware.empty();
  if (r.timed) r.hardware = at_precision(load_hardware(o.hardware), o.precision);
  for (int rank : ranks_to_run(o.ranks, o.data_parallel)) {
    r.ranks.push_back(run_rank(o, rank));
    if (r.timed) r.times.push_back(time_rank(o, r.hardware, r.ranks.back()));
  }
  for (size_t k = 1; k < r.ranks.size(); ++k) {
    if (r.ranks[k].memory.peak_total() > r.ranks[r.busiest].memory.peak_total()) r.busiest = k;
    if (r.timed && r.times[k].step.total_s > r.times[r.slowest].step.total_s) r.slowest = k;
  }
  constexpr int kBatchLimit = 1 << 20;
  if (r.timed) r.fits = largest_batch(o, r.hardware.device_memory_bytes, kBatchLimit);
  return r;
}

std::string report_json(const PlanOptions& o, const Report& r) {
  const model::GPTConfig& c = o.config;
  nlohmann::json out = {{"layout", train::to_string(o.layout)},
                        {"ranks", o.ranks},
                        {"data_parallel", o.data_parallel},
                        {"world", o.ranks * o.data_parallel},
                        {"model",
                         {{"n_layer", c.n_layer},
                          {"n_embd", c.n_embd},
                          {"n_head", c.n_head},
                          {"n_positions", c.n_positions},
                          {"vocab_size", c.vocab_size},
                          {"parameters", c.num_parameters()}}},
                        {"batch", o.batch},
                        {"precision", to_string(o.precision)},
                        {"recompute", model::to_string(o.stage.recompute)},
                        {"sequence_parallel", o.stage.sequence_parallel},
                        {"busiest_rank", r.ranks[r.busiest].rank},
                        {"per_rank", nlohmann::json::array()}};
  for (size_t k = 0; k < r.ranks.size(); ++k) {
    out["per_rank"].push_back(to_json(r.ranks[k]));
    if (r.timed) {
      out["per_rank"].back()["time"] = {{"step", to_json(r.times[k].step)}, {"forward", to_json(r.times[k].forward)}};
    }
  }
  if (r.timed) {
    out["hardware"] = {{"name", r.hardware.name},
                       {"ranks_per_node", placement_of(o, r.hardware).ranks_per_node},
                       {"threads", o.threads},
                       {"overlap", o.stage.overlap},
                       {"device_memory_bytes", r.hardware.device_memory_bytes}};
    out["largest_batch"] = r.fits > 0 ? nlohmann::json(r.fits) : nlohmann::json(nullptr);
    out["time"] = {{"slowest_rank", r.ranks[r.slowest].rank},
                   {"step", to_json(r.times[r.slowest].step)},
                   {"forward", to_json(r.times[r.slowest].forward)}};
  }
  return out.dump(1) + "\n";
}

// The report's first line: the layout, the model, the batch and the time model's settings.
std::string report_title(const PlanOptions& o, const Report& r) {
  const model::GPTConfig& c = o.config;
  std::ostringstream out;
  const std::string copies = o.data_parallel > 1 ? " x " + std::to_string(o.data_parallel) + " data-parallel copies (" +
                                                       std::to_string(o.ranks * o.data_parallel) + " ranks)"
                                                 : "";
  out << "plan: layout " << train::to_string(o.layout) << " on " << o.ranks << " ranks" << copies << ", L" << c.n_layer
      << " C" << c.n_embd << " NH" << c.n_head << " T" << c.n_positions << " V" << c.vocab_size << " ("
      << c.num_parameters() << " parameters), batch " << o.batch
      << (o.stage.sequence_parallel ? ", sequence parallel" : "")
      << (o.stage.recompute == model::Recompute::block ? ", recompute block" : "")
      << (o.precision != Precision::fp32 ? std::string(", precision ") + to_string(o.precision) : "")
      << "; one training step on the meta device for " << r.ranks.size() << " of " << o.ranks * o.data_parallel
      << " ranks; "
      << (r.timed ? "time model: hardware " + r.hardware.name + ", " +
                        std::to_string(placement_of(o, r.hardware).ranks_per_node) + " ranks per node, " +
                        std::to_string(o.threads) + " thread(s) per rank" +
                        (o.stage.overlap ? ", communication overlapped" : "")
                  : std::string("no time model (give --hardware)"))
      << "\n";
  return out.str();
}

std::string report_text(const PlanOptions& o, const Report& r) {
  std::ostringstream out;
  out << report_title(o, r);
  for (size_t k = 0; k < r.ranks.size(); ++k) {
    out << to_text(r.ranks[k]);
    if (r.timed) out << to_text("step", r.times[k].step) << to_text("forward", r.times[k].forward);
  }
  out << "busiest rank: " << r.ranks[r.busiest].rank << " (the largest peak memory, "
      << mib(r.ranks[r.busiest].memory.peak_total()) << " MiB)\n";
  if (r.timed) {
    out << formatted("slowest rank: %d (step %.3f ms, forward %.3f ms)\n", r.ranks[r.slowest].rank,
                     1e3 * r.times[r.slowest].step.total_s, 1e3 * r.times[r.slowest].forward.total_s)
        << "largest batch that fits " << mib(static_cast<size_t>(r.hardware.device_memory_bytes))
        << " MiB per device: " << (r.fits > 0 ? std::to_string(r.fits) : "none (not even the smallest batch)") << "\n";
  }
  return out.str();
}

}  // namespace

std::string plan_report(const PlanOptions& o) {
  require_valid(o);
  const Report r = run_report(o);
  return o.json ? report_json(o, r) : report_text(o, r);
}

}  // namespace optimus::plan
