// The benchmark: timed steps in any layout, and one step under a per-rank memory budget.
#include "train/bench.h"

#include <omp.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "core/errors.h"
#include "core/ops.h"
#include "io/json_text.h"
#include "train/data_parallel.h"
#include "train/gemm_reference.h"
#include "train/layout.h"
#include "train/memory_check.h"
#include "train/optimizer.h"
#include "train/step.h"
#include "train/timing.h"

namespace optimus::train {

namespace {

using Json = nlohmann::ordered_json;  // the keys in the order written

constexpr double kMaxBudgetMib = 1 << 30;  // a pebibyte per rank: past any machine, and k·step stays an int

// `x` to `digits` decimals, so the JSON line holds what was measured and no more.
double rounded(double x, int digits) {
  const double scale = std::pow(10.0, digits);
  return std::round(x * scale) / scale;
}

// The ledger's peak bytes per category, in MiB.
Json memory_json(const core::MemoryLedger& ledger) {
  Json mem = Json::object();
  for (int c = 0; c < core::kMemoryCategoryCount; ++c) {
    const auto cat = static_cast<core::MemoryCategory>(c);
    mem[core::memory_category_name(cat)] = rounded(static_cast<double>(ledger.peak(cat)) / (1 << 20), 3);
  }
  mem["total"] = rounded(static_cast<double>(ledger.peak_total()) / (1 << 20), 3);
  return mem;
}

// The communication of one training step on this rank, by communicator and operation ("row.broadcast"),
// without barriers: the bench's own are not the model's.
Json comm_json(const comm::CommLedger& step) {
  Json comm = Json::object();
  for (const std::string& name : step.communicators()) {
    for (int k = 0; k < comm::kCommOpCount; ++k) {
      const auto op = static_cast<comm::CommOp>(k);
      if (step.calls(name, op) == 0 || op == comm::CommOp::barrier || op == comm::CommOp::split) continue;
      comm[name + "." + comm::comm_op_name(op)] = {{"calls", step.calls(name, op)}, {"bytes", step.bytes(name, op)}};
    }
  }
  return comm;
}

// Any tokens will do for timing and memory: a fixed pattern over the vocabulary.
void bench_tokens(std::vector<int>& inputs, std::vector<int>& targets, int B, int T, int V) {
  inputs.resize(static_cast<size_t>(B) * T), targets.resize(inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k) {
    inputs[k] = static_cast<int>((k * 7919) % static_cast<size_t>(V));
    targets[k] = static_cast<int>((k * 104729 + 1) % static_cast<size_t>(V));
  }
}

// What the measured steps and passes took, one entry per measured one.
struct Timings {
  std::vector<double> step_ms, forward_ms, data_parallel_ms;
  std::array<std::vector<double>, core::kOpKindCount> op_ms;  // --op-times: per kind
  comm::CommLedger step_comm;                                 // the last step's collectives
};

// The training steps: warm-up, then the measured ones, each started on every rank together so that
// rank 0's clock times the slowest rank too, and ended when a GPU has done it.
void time_steps(const BenchOptions& o, comm::World& world, const DataParallel& dp, model::Model& gpt,
                core::OpClock& clock, const StepBatch& batch, Timings& t) {
  AdamW opt(gpt.params(), gpt.context(), AdamWOptions{});
  SumOverCopies copies(gpt, dp, o.stage.overlap);
  for (int s = 0; s < o.warmup + o.steps; ++s) {
    core::synchronize(gpt.context());  // a GPU's earlier work is not this step's (a no-op on the CPU)
    world.comm().barrier();
    const auto before = world.comm().ledger().snapshot();
    const auto t0 = Clock::now();
    clock.clear();
    StepBatch step = batch;
    step.index = s;
    train_step(gpt, dp, opt, step);
    // The time the backward pass spent in the sum over the copies: starting its all-reduces, and
    // waiting for them (for the slowest copy too).
    const double summed_ms = copies.blocked_ms();
    core::synchronize(gpt.context());
    if (s >= o.warmup) {
      t.step_ms.push_back(ms_since(t0)), t.data_parallel_ms.push_back(summed_ms);
      for (size_t k = 0; k < t.op_ms.size() && o.op_times; ++k) t.op_ms[k].push_back(1e3 * clock.seconds[k]);
    }
    t.step_comm = world.comm().ledger().since(before);
  }
}

// A forward pass of the whole batch (evaluation mode, the loss computed): each copy its share, in
// the training step's micro-batches.
void time_forward(const BenchOptions& o, comm::World& world, const DataParallel& dp, model::Model& gpt,
                  const StepBatch& batch, Timings& t) {
  const int share = batch.B / dp.replicas, Bm = share / batch.grad_accum;
  for (int s = 0; s < o.warmup + o.steps; ++s) {
    core::synchronize(gpt.context());
    world.comm().barrier();
    const auto t0 = Clock::now();
    for (int k = 0; k < batch.grad_accum; ++k) {
      const int64_t row = (int64_t{dp.replica} * share + int64_t{k} * Bm) * batch.T;
      gpt.forward(batch.inputs + row, batch.targets + row, Bm, batch.T, 0, /*train=*/false);
    }
    core::synchronize(gpt.context());
    if (dp.replicas > 1) world.comm().barrier();  // the pass ends when every copy has done its share
    if (s >= o.warmup) t.forward_ms.push_back(ms_since(t0));
  }
}

// The run's settings, the first keys of both JSON lines.
Json settings_json(const BenchOptions& o, int ranks, const model::GPTConfig& config) {
  return {{"impl", "optimus"},
          {"stage", to_string(o.layout)},
          {"ranks", ranks},
          {"recompute", model::to_string(o.stage.recompute)},
          {"sequence_parallel", o.stage.sequence_parallel},
          {"overlap", o.stage.overlap},
          {"data_parallel", o.data_parallel},
          {"grad_accum", o.grad_accum},
          {"device", o.device.device},
          {"model", o.model},
          {"B", o.batch},
          {"T", config.n_positions},
          {"L", config.n_layer},
          {"C", config.n_embd},
          {"NH", config.n_head},
          {"V", config.vocab_size},
          {"params", config.num_parameters()}};
}

// The timed run's JSON line: the medians, the rates they imply, the memory and the communication.
std::string timings_line(const BenchOptions& o, int ranks, const model::GPTConfig& config, const Timings& t,
                         double matmul, const core::MemoryLedger& ledger) {
  const double step = median(t.step_ms), fwd = median(t.forward_ms);
  const double tokens = static_cast<double>(o.batch) * config.n_positions;
  const double flops_per_token =
      6.0 * static_cast<double>(config.num_parameters()) + 6.0 * config.n_layer * config.n_embd * config.n_positions;
  const double gflops = flops_per_token * tokens / (step * 1e6);
  Json line = settings_json(o, ranks, config);
  line.update(Json{{"threads", omp_get_max_threads()},
                   {"steps", o.steps},
                   {"step_ms", rounded(step, 3)},
                   {"data_parallel_ms", rounded(median(t.data_parallel_ms), 3)},
                   {"forward_ms", rounded(fwd, 3)},
                   {"tokens_per_s", rounded(1e3 * tokens / step, 1)},
                   {"flops_per_token", "6N + 6*L*C*T"},
                   {"gflops", rounded(gflops, 2)},
                   {"matmul_reference", "the model's linear and LM-head products, per rank, summed over ranks"},
                   {"matmul_gflops", rounded(matmul, 2)},
                   {"fraction_of_matmul", rounded(gflops / matmul, 3)},
                   {"peak_memory_mib", memory_json(ledger)},
                   {"comm_per_step", comm_json(t.step_comm)}});
  if (o.op_times) {  // the step's median time in each kind of op, on rank 0
    Json op_ms = Json::object();
    for (int k = 0; k < core::kOpKindCount; ++k) {
      op_ms[core::op_kind_name(static_cast<core::OpKind>(k))] = rounded(median(t.op_ms[static_cast<size_t>(k)]), 3);
    }
    line["op_ms"] = op_ms;
  }
  return io::one_line(line);
}

}  // namespace

void require_bench_options(const BenchOptions& o) {
  auto check = [](bool ok, const std::string& flag, const std::string& must, const std::string& value) {
    if (!ok) throw core::ConfigError(flag + " must be " + must + ", but is " + value);
  };
  check(o.batch > 0, "--batch", "positive", std::to_string(o.batch));
  check(o.steps > 0, "--steps", "positive (the median of the measured steps is reported)", std::to_string(o.steps));
  check(o.warmup >= 0, "--warmup", "0 or more", std::to_string(o.warmup));
  char budget[32];
  std::snprintf(budget, sizeof budget, "%g", o.budget_mib);
  check(o.budget_mib >= 0, "--max-batch-budget", "0 or more (0: time steps instead)", budget);  // NaN fails too
  check(o.budget_mib <= kMaxBudgetMib, "--max-batch-budget", "at most 2^30 MiB (a pebibyte)", budget);
  if (o.budget_mib > 0 && (o.data_parallel != 1 || o.grad_accum != 1)) {
    throw core::ConfigError(
        "--max-batch-budget searches the batch of one model copy in one pass, so it takes neither --data-parallel "
        "nor --grad-accum; leave them at 1 (a copy's batch under data parallelism is the same search)");
  }
  if (o.op_times && o.device.device != "cpu") {
    throw core::ConfigError("--op-times times the CPU's ops; it takes --device cpu (a GPU's ops run asynchronously)");
  }
  model::GPTConfig::named(o.model);  // an unknown name is a ConfigError
}

std::string bench(const BenchOptions& o, comm::World& world, const StepPeak& step_peak) {
  const model::GPTConfig config = model::GPTConfig::named(o.model);
  const int B = o.batch, T = config.n_positions, D = o.data_parallel, K = o.grad_accum;
  require_data_parallel_fits(o.layout, world.size(), D, B, K, T, o.stage, o.device.device);
  const int P = world.size() / D;  // the ranks of one model copy
  model::require_step_sizes(config, {.batch = B, .seq = T, .ranks = P, .copies = D});
  if (o.device.device == "cpu") {
    const RunShape shape{.layout = o.layout,
                         .world_size = world.size(),
                         .data_parallel = D,
                         .grad_accum = K,
                         .config = config,
                         .B = B,
                         .T = T,
                         .stage = o.stage,
                         .threads = core::scratch_threads(core::cpu_context())};
    require_run_memory(world, shape, step_peak, "--model " + o.model + " at --batch " + std::to_string(B),
                       "use a smaller --batch or more processes");
  }
  // The host ledger on the CPU (as before the GPU path), the device ledger on a GPU.
  core::OpClock clock;  // --op-times: each kind's time in the step
  core::Context ctx = make_context(o.device, world);
  if (o.op_times) ctx.clock = &clock;
  // The rate of the model's own matrix products first, before the model takes its memory: each
  // rank times its products of one pass of a micro-batch (B / (D·K) sequences), all ranks at the
  // same time, and their rates add up to the world's, which the model's FLOP rate is too.
  const std::vector<GemmProduct> products = pass_products(config, o.layout, P, B / (D * K) * T, o.stage.recompute);
  double matmul = measure_products_gflops(ctx, products);
  std::vector<int> inputs, targets;
  bench_tokens(inputs, targets, B, T, config.vocab_size);
  const StepBatch batch{inputs.data(), targets.data(), B, T, K, 0, /*grad_clip=*/1.0f, /*lr=*/1e-4f};
  Timings t;
  {
    DataParallel dp(world, D);
    std::unique_ptr<comm::Communicator> device;  // outlives the model
    const LayoutModel built =
        D == 1 ? build_model(o.layout, config, 1, world, ctx, o.device.device_comm(), o.stage, device)
               : build_model(o.layout, config, 1, *dp.model, ctx, o.stage);
    time_steps(o, world, dp, *built.model, clock, batch, t);
    time_forward(o, world, dp, *built.model, batch, t);
  }
  ctx.ledger->release_cached();  // the model's blocks, so that the products below take their place
  // And again once the model has freed its memory, keeping the faster: another program busy on the
  // machine during one of the two measurements lowers that one only, and a reference lowered that
  // way would put the model above 100 % of it.
  matmul = std::max(matmul, measure_products_gflops(ctx, products));
  world.comm().all_reduce(&matmul, 1);
  return timings_line(o, world.size(), config, t, matmul, *ctx.ledger);
}

void require_budget_fits_machine(const BenchOptions& o, comm::World& world) {
  if (o.device.device != "cpu") return;
  char what[64];
  std::snprintf(what, sizeof what, "--max-batch-budget %g", o.budget_mib);
  require_memory(world, o.budget_mib * (1 << 20), what,
                 "choose a budget the machine can hold (the step that confirms the batch allocates up to it)");
}

std::string step_under_budget(const BenchOptions& o, comm::World& world, int B, int batch_unit) {
  const model::GPTConfig config = model::GPTConfig::named(o.model);
  Json line = settings_json(o, world.size(), config);
  for (const char* key : {"overlap", "data_parallel", "grad_accum", "B"}) line.erase(key);
  line.update(Json{{"budget_mib", o.budget_mib}, {"batch_multiple_of", batch_unit}, {"max_batch", B}});
  if (B == 0) {  // not even the smallest batch fits
    line["peak_memory_mib_at_max"] = Json::object();
    return io::one_line(line);
  }
  core::MemoryLedger ledger(static_cast<size_t>(o.budget_mib * (1 << 20)));
  std::vector<int> inputs, targets;
  bench_tokens(inputs, targets, B, config.n_positions, config.vocab_size);
  const StepBatch batch{inputs.data(), targets.data(), B, config.n_positions, 1, 0, 1.0f, 1e-4f};
  int failed = 0;
  try {
    const core::Context ctx = make_context(o.device, world, ledger);
    const DataParallel dp(world, 1);
    std::unique_ptr<comm::Communicator> device;  // outlives the model
    const LayoutModel built = build_model(o.layout, config, 1, world, ctx, o.device.device_comm(), o.stage, device);
    AdamW opt(built.model->params(), ctx, AdamWOptions{});
    train_step(*built.model, dp, opt, batch);
  } catch (const core::MemoryBudgetExceeded&) {
    failed = 1;  // every rank allocates the same sizes in the same order, so all meet the budget alike
  }
  world.comm().all_reduce(&failed, 1, comm::ReduceOp::max);
  if (failed) {
    char budget[32];
    std::snprintf(budget, sizeof budget, "%g", o.budget_mib);
    throw core::ConfigError("the planned largest batch " + std::to_string(B) + " does not fit --max-batch-budget " +
                            budget + " MiB on this device, whose allocations differ from the meta device's");
  }
  line["peak_memory_mib_at_max"] = memory_json(ledger);
  return io::one_line(line);
}

}  // namespace optimus::train
