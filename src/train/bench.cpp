// The benchmark: timed steps in any layout, and the largest batch under a per-rank memory budget.
#include "train/bench.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <vector>

#include "core/ops.h"
#include "train/data_parallel.h"
#include "train/layouts.h"
#include "train/memory_check.h"
#include "train/optimizer.h"

namespace optimus::train {

namespace {

using Clock = std::chrono::steady_clock;

constexpr double kMaxBudgetMib = 1 << 30;  // a pebibyte per rank: past any machine, and k·step stays an int

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The ledger's peak bytes per category, in MiB, as a JSON object.
std::string memory_json(const core::MemoryLedger& ledger) {
  std::string mem = "{";
  for (int c = 0; c < core::kMemoryCategoryCount; ++c) {
    const auto cat = static_cast<core::MemoryCategory>(c);
    char item[96];
    std::snprintf(item, sizeof item, "%s\"%s\": %.3f", c ? ", " : "", core::memory_category_name(cat),
                  static_cast<double>(ledger.peak(cat)) / (1 << 20));
    mem += item;
  }
  char total[64];
  std::snprintf(total, sizeof total, ", \"total\": %.3f}", static_cast<double>(ledger.peak_total()) / (1 << 20));
  return mem + total;
}

// Any tokens will do for timing and memory: a fixed pattern over the vocabulary.
void bench_tokens(std::vector<int>& inputs, std::vector<int>& targets, int B, int T, int V) {
  inputs.resize(static_cast<size_t>(B) * T), targets.resize(inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k) {
    inputs[k] = static_cast<int>((k * 7919) % static_cast<size_t>(V));
    targets[k] = static_cast<int>((k * 104729 + 1) % static_cast<size_t>(V));
  }
}

}  // namespace

double measure_matmul_gflops(const core::Context& device) {
  const int n = device.device == core::Device::cpu ? 1024 : 4096;  // a GPU needs a larger product to fill it
  core::MemoryLedger ledger;                                       // the product's buffers are not the model's
  core::Context ctx = device;
  ctx.ledger = &ledger;
  core::Buffer a(ledger, core::MemoryCategory::workspace, {n, n}, ctx.device),
      b(ledger, core::MemoryCategory::workspace, {n, n}, ctx.device),
      c(ledger, core::MemoryCategory::workspace, {n, n}, ctx.device);
  std::vector<float> host(static_cast<size_t>(a.numel()));
  for (size_t k = 0; k < host.size(); ++k) host[k] = 1.0f / static_cast<float>(1 + k % 7);
  core::copy_to_device(ctx, a.data(), host.data(), a.numel());
  core::copy_to_device(ctx, b.data(), host.data(), b.numel());
  std::vector<double> ms;
  for (int r = 0; r < 6; ++r) {
    core::synchronize(ctx);
    const auto t0 = Clock::now();
    core::matmul(ctx, c.data(), a.data(), b.data(), n, n, n, core::Trans::no, core::Trans::no);
    core::synchronize(ctx);
    if (r > 0) ms.push_back(ms_since(t0));
  }
  return 2.0 * n * n * n / (median(ms) * 1e6);
}

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

std::string bench(const BenchOptions& o, comm::World& world) {
  model::GPTConfig config = model::GPTConfig::named(o.model);
  const int B = o.batch, T = config.n_positions, V = config.vocab_size, D = o.data_parallel, K = o.grad_accum;
  require_data_parallel_fits(o.layout, world.size(), D, B, K, T, o.memory.sequence_parallel, o.device.device);
  require_placement_fits(o.layout, o.memory.placement, world.size() / D);
  const int P = world.size() / D;  // the ranks of one model copy
  if (o.device.device == "cpu") {
    // A rank holds its share of one copy's model and of one micro-batch's activations.
    require_memory(world, step_bytes_lower_bound(config, B / (D * K), P, ModelUse::train),
                   "--model " + o.model + " at --batch " + std::to_string(B),
                   "use a smaller --batch or more processes");
  }
  // The host ledger on the CPU (as before the GPU path), the device ledger on a GPU.
  core::OpClock clock;  // --op-times: each kind's time in the step
  core::Context ctx = make_context(o.device, world);
  if (o.op_times) ctx.clock = &clock;
  core::MemoryLedger& ledger = *ctx.ledger;
  // The machine's matrix-product rate first, before the model takes its memory. Every rank
  // measures at the same time, so the machine's rate is the sum over ranks.
  double matmul = measure_matmul_gflops(ctx);
  world.comm().all_reduce(&matmul, 1);
  std::vector<int> inputs, targets;
  bench_tokens(inputs, targets, B, T, V);
  std::vector<double> step_ms, forward_ms, data_parallel_ms;
  std::array<std::vector<double>, core::kOpKindCount> op_ms;  // per kind, one entry per measured step
  comm::CommLedger step_comm;
  DataParallel dp(world, D);
  auto timed = [&](auto& gpt) {
    AdamW opt(gpt.params(), gpt.context(), AdamWOptions{});
    SumOverCopies copies(gpt, dp, o.memory.overlap);
    for (int s = 0; s < o.warmup + o.steps; ++s) {
      core::synchronize(ctx);  // a GPU's earlier work is not this step's (a no-op on the CPU)
      world.comm().barrier();  // start every step together, so rank 0's clock times the slowest rank too
      const auto before = world.comm().ledger().snapshot();
      const auto t0 = Clock::now();
      clock.clear();
      gpt.params().zero_grads();
      loss_over_copies(gpt, dp, accumulate_gradients(gpt, dp, inputs.data(), targets.data(), B, T, K, s));
      // The time the backward pass spent in the sum over the copies: starting its all-reduces, and
      // waiting for them (for the slowest copy too).
      const double summed_ms = copies.blocked_ms();
      gpt.clip_gradients(1.0f);
      opt.update(gpt.params(), 1e-4f);
      core::synchronize(ctx);  // the step ends when the GPU has done it
      if (s >= o.warmup) {
        step_ms.push_back(ms_since(t0)), data_parallel_ms.push_back(summed_ms);
        for (size_t k = 0; k < op_ms.size() && o.op_times; ++k) op_ms[k].push_back(1e3 * clock.seconds[k]);
      }
      step_comm = world.comm().ledger().since(before);
    }
    // A forward pass of the whole batch: each copy its share, in the training step's micro-batches.
    const int share = B / D, Bm = share / K;
    for (int s = 0; s < o.warmup + o.steps; ++s) {
      core::synchronize(ctx);
      world.comm().barrier();
      const auto t0 = Clock::now();
      for (int k = 0; k < K; ++k) {
        const int64_t row = (int64_t{dp.replica} * share + int64_t{k} * Bm) * T;
        gpt.forward(inputs.data() + row, targets.data() + row, Bm, T, 0, /*train=*/false);
      }
      core::synchronize(ctx);
      if (D > 1) world.comm().barrier();  // the pass ends when every copy has done its share
      if (s >= o.warmup) forward_ms.push_back(ms_since(t0));
    }
    return 0;
  };
  if (D == 1) {
    with_model(o.layout, config, 1, world, ctx, o.device.device_comm(), o.memory, timed);
  } else {
    with_model_on(o.layout, config, 1, *dp.model, ctx, o.memory, timed);
  }

  const double step = median(step_ms), fwd = median(forward_ms);
  const double tokens = static_cast<double>(B) * T;
  const double n_params = static_cast<double>(config.num_parameters());
  const double flops_per_token = 6.0 * n_params + 6.0 * config.n_layer * config.n_embd * T;
  const double gflops = flops_per_token * tokens / (step * 1e6);

  const std::string mem = memory_json(ledger);

  // Communication of one training step on this rank, by communicator and operation.
  std::string comm = "{";
  const comm::CommOp ops[] = {comm::CommOp::all_reduce, comm::CommOp::broadcast,      comm::CommOp::reduce,
                              comm::CommOp::all_gather, comm::CommOp::reduce_scatter, comm::CommOp::barrier};
  const char* op_names[] = {"all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter", "barrier"};
  for (const std::string& name : step_comm.communicators()) {
    for (int k = 0; k < 6; ++k) {
      const int64_t calls = step_comm.calls(name, ops[k]);
      if (calls == 0 || ops[k] == comm::CommOp::barrier) continue;  // the bench's own barrier is not the model's
      char item[160];
      std::snprintf(item, sizeof item, "%s\"%s.%s\": {\"calls\": %lld, \"bytes\": %lld}", comm.size() > 1 ? ", " : "",
                    name.c_str(), op_names[k], static_cast<long long>(calls),
                    static_cast<long long>(step_comm.bytes(name, ops[k])));
      comm += item;
    }
  }
  comm += "}";

  // --op-times: the step's median time in each kind of op, on rank 0.
  std::string op_times;
  for (int k = 0; o.op_times && k < core::kOpKindCount; ++k) {
    char item[96];
    std::snprintf(item, sizeof item, "%s\"%s\": %.3f", k == 0 ? "" : ", ",
                  core::op_kind_name(static_cast<core::OpKind>(k)), median(op_ms[static_cast<size_t>(k)]));
    op_times += item;
  }
  if (o.op_times) op_times = ", \"op_ms\": {" + op_times + "}";

  char line[4096];
  std::snprintf(
      line, sizeof line,
      "{\"impl\": \"optimus\", \"stage\": \"%s\", \"ranks\": %d, \"recompute\": \"%s\", "
      "\"sequence_parallel\": %s, \"overlap\": %s, \"data_parallel\": %d, \"grad_accum\": %d, \"device\": \"%s\", "
      "\"model\": \"%s\", \"B\": %d, \"T\": %d, \"L\": %d, \"C\": %d, \"NH\": %d, \"V\": %d, \"params\": %.0f, "
      "\"threads\": %d, \"steps\": %d, \"step_ms\": %.3f, \"data_parallel_ms\": %.3f, \"forward_ms\": %.3f, "
      "\"tokens_per_s\": %.1f, "
      "\"flops_per_token\": \"6N + 6*L*C*T\", \"gflops\": %.2f, \"matmul_gflops\": %.2f, "
      "\"fraction_of_matmul\": %.3f, \"peak_memory_mib\": %s, \"comm_per_step\": %s%s}",
      o.layout.c_str(), world.size(), model::to_string(o.memory.recompute).c_str(),
      o.memory.sequence_parallel ? "true" : "false", o.memory.overlap ? "true" : "false", D, K, o.device.device.c_str(),
      o.model.c_str(), B, T, config.n_layer, config.n_embd, config.n_head, V, n_params, omp_get_max_threads(), o.steps,
      step, median(data_parallel_ms), fwd, 1e3 * tokens / step, gflops, matmul, gflops / matmul, mem.c_str(),
      comm.c_str(), op_times.c_str());
  return line;
}

namespace {

// Whether one training step at batch B fits `budget` bytes on every rank. Every rank of these layouts
// allocates the same sizes in the same order, so all ranks meet the budget at the same allocation
// and none is left waiting in a collective; the verdicts are still combined, to be sure.
bool step_fits(const BenchOptions& o, const model::GPTConfig& config, int B, size_t budget, comm::World& world,
               std::string& memory) {
  core::MemoryLedger ledger(budget);  // this trial's: its pool's blocks go with it, none kept for the next
  std::vector<int> inputs, targets;
  bench_tokens(inputs, targets, B, config.n_positions, config.vocab_size);
  int failed = 0;
  try {
    with_model(o.layout, config, 1, world, make_context(o.device, world, ledger), o.device.device_comm(), o.memory,
               [&](auto& gpt) {
                 AdamW opt(gpt.params(), gpt.context(), AdamWOptions{});
                 gpt.params().zero_grads();
                 gpt.forward(inputs.data(), targets.data(), B, config.n_positions, 0);
                 gpt.backward();
                 gpt.clip_gradients(1.0f);
                 opt.update(gpt.params(), 1e-4f);
                 return 0;
               });
  } catch (const core::MemoryBudgetExceeded&) {
    failed = 1;
  }
  world.comm().all_reduce(&failed, 1, comm::ReduceOp::max);
  if (!failed) memory = memory_json(ledger);
  return !failed;
}

}  // namespace

std::string max_batch_under_budget(const BenchOptions& o, comm::World& world) {
  model::GPTConfig config = model::GPTConfig::named(o.model);
  if (o.device.device == "cpu") {
    char what[64];
    std::snprintf(what, sizeof what, "--max-batch-budget %g", o.budget_mib);
    require_memory(world, o.budget_mib * (1 << 20), what,
                   "choose a budget the machine can hold (the search allocates every batch it tries)");
  }
  const int step = model::batch_unit(o.layout, world.size(), config.n_positions, o.memory.sequence_parallel);
  const auto budget = static_cast<size_t>(o.budget_mib * (1 << 20));
  std::string memory = "{}", probe;
  int fits = 0, fails = 0;  // multiples of `step`: the largest known to fit, the smallest known not to
  for (int k = 1; fails == 0; k *= 2) {
    if (step_fits(o, config, k * step, budget, world, probe)) {
      fits = k, memory = probe;
    } else {
      fails = k;
    }
  }
  while (fails - fits > 1) {
    const int mid = (fits + fails) / 2;
    if (step_fits(o, config, mid * step, budget, world, probe)) {
      fits = mid, memory = probe;
    } else {
      fails = mid;
    }
  }
  char line[1024];
  std::snprintf(line, sizeof line,
                "{\"impl\": \"optimus\", \"stage\": \"%s\", \"ranks\": %d, \"recompute\": \"%s\", "
                "\"sequence_parallel\": %s, \"device\": \"%s\", \"model\": \"%s\", \"T\": %d, \"L\": %d, \"C\": %d, "
                "\"NH\": %d, \"budget_mib\": %g, \"batch_multiple_of\": %d, "
                "\"max_batch\": %d, \"peak_memory_mib_at_max\": %s}",
                o.layout.c_str(), world.size(), model::to_string(o.memory.recompute).c_str(),
                o.memory.sequence_parallel ? "true" : "false", o.device.device.c_str(), o.model.c_str(),
                config.n_positions, config.n_layer, config.n_embd, config.n_head, o.budget_mib, step, fits * step,
                memory.c_str());
  return line;
}

}  // namespace optimus::train
