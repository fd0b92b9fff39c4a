// optimus bench: timed training steps of a named model in any layout (train/bench.h), or the largest
// batch under a per-rank memory budget: the planner's search on the meta device (plan::largest_batch),
// confirmed by one real step.
#include <string>

#include "cli/commands.h"
#include "cli/flags.h"
#include "plan/plan.h"
#include "plan/run_peak.h"
#include "train/bench.h"
#include "train/data_parallel.h"
#include "train/layout.h"

namespace optimus::cli {

namespace {

struct BenchArgs {
  train::BenchOptions options;
};

constexpr int kBatchLimit = 1 << 20;  // the search's largest batch

// --max-batch-budget: the planner's options for the bench's world, model and memory techniques.
plan::PlanOptions budget_plan(const train::BenchOptions& o, int ranks) {
  plan::PlanOptions p;
  p.layout = o.layout;
  p.ranks = ranks;
  p.config = model::GPTConfig::named(o.model);
  p.batch = train::batch_unit(o.layout, ranks, p.config.n_positions, o.stage.sequence_parallel);
  p.stage = o.stage;
  return p;
}

std::string max_batch_under_budget(const train::BenchOptions& o, comm::World& world) {
  train::require_budget_fits_machine(o, world);
  train::require_fits(o.layout, world.size(), o.stage);
  const plan::PlanOptions p = budget_plan(o, world.size());
  const int B = plan::largest_batch(p, static_cast<int64_t>(o.budget_mib * (1 << 20)), kBatchLimit);
  return train::step_under_budget(o, world, B, p.batch);
}

void add_bench(CLI::App* cmd, BenchArgs& a) {
  train::BenchOptions& b = a.options;
  add_layout_option(cmd, b.layout);
  cmd->add_option("--model", b.model, "tiny, small, tiny9 or gpt2 (GPT-2 124M's shapes)")->capture_default_str();
  cmd->add_option("--batch", b.batch, "sequences per step B")->capture_default_str();
  cmd->add_option("--data-parallel", b.data_parallel,
                  "copies of the model D: each runs the layout on processes / D ranks and batch / D sequences; "
                  "the step includes the sum of their gradients, also timed alone (data_parallel_ms)")
      ->capture_default_str();
  cmd->add_option("--grad-accum", b.grad_accum,
                  "micro-batches per step: each pass runs on batch / (data-parallel x grad-accum) sequences")
      ->capture_default_str();
  cmd->add_option("--steps", b.steps, "measured steps (median reported)")->capture_default_str();
  cmd->add_option("--warmup", b.warmup, "unmeasured steps first")->capture_default_str();
  cmd->add_option("--max-batch-budget", b.budget_mib,
                  "instead of timing: the largest batch whose training step fits this many MiB per rank (found "
                  "on the meta device, confirmed by one step)");
  cmd->add_flag("--op-times", b.op_times,
                "also report the training step's time in each kind of op (op_ms: the CPU's, rank 0's, "
                "median over the measured steps), which scripts/calibrate turns into each kind's rate");
  train::add_device_flags(cmd, b.device);
  add_memory_flags(cmd, b.stage);
  add_overlap_flag(cmd, b.stage);
  add_placement_option(cmd, b.stage);
}

int run_bench(comm::World& world, BenchArgs& a, CLI::App&) {
  const train::BenchOptions& b = a.options;
  train::require_bench_options(b);
  train::note_unused_overlap(world, b.stage.overlap, b.layout, b.data_parallel);
  const std::string line =
      b.budget_mib > 0 ? max_batch_under_budget(b, world) : train::bench(b, world, plan::step_peak_bytes);
  world.print0("%s\n", line.c_str());
  return 0;
}

}  // namespace

Subcommand bench_command(CLI::App& optimus) {
  return subcommand<BenchArgs>(optimus, "bench", "time training steps of a named model; one JSON line", add_bench,
                               run_bench);
}

}  // namespace optimus::cli
