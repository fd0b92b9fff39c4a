// optimus plan: what one training step of a layout costs each rank, on the meta device (chapter 4).
#include <string>

#include "cli/commands.h"
#include "cli/flags.h"
#include "core/errors.h"
#include "plan/plan.h"
#include "plan/precision.h"
#include "train/data_parallel.h"
#include "train/memory_check.h"

namespace optimus::cli {

namespace {

struct PlanArgs {
  plan::PlanOptions options;
  std::string model;  // --model: a named model instead of the shape flags
};

// The world the plan is for: its layout, ranks and copies, and the machine of the time model.
void add_world_flags(CLI::App* cmd, plan::PlanOptions& p) {
  add_layout_option(cmd, p.layout);
  cmd->add_option("--ranks", p.ranks, "ranks P of the layout (a square for 2d)")->capture_default_str();
  cmd->add_option("--data-parallel", p.data_parallel,
                  "copies of the layout D, on D x ranks ranks (rank d*P + t; nodes filled in rank order): each "
                  "runs batch / D sequences, and the step adds the all-reduce of the gradients over the copies")
      ->capture_default_str();
  cmd->add_option("--hardware", p.hardware,
                  "a hardware profile (a name in data/hardware, or a path to a .json file): predict times");
  cmd->add_option_function<int>(
      "--ranks-per-node",
      [&p](int n) {  // 0 is the field's "not given", so a given 0 is refused here
        if (n < 1) throw core::ConfigError("--ranks-per-node must be 1 or more, but is " + std::to_string(n));
        p.ranks_per_node = n;
      },
      "ranks on one node (default: the profile's devices_per_node)");
  cmd->add_option("--threads", p.threads, "CPU threads per rank (time model)")->capture_default_str();
}

void add_plan(CLI::App* cmd, PlanArgs& a) {
  plan::PlanOptions& p = a.options;
  add_world_flags(cmd, p);
  auto* named =
      cmd->add_option("--model", a.model, "a named model (tiny, small, tiny9, gpt2) instead of the shape flags");
  add_model_flags(cmd, p.config);
  cmd->add_option("--vocab", p.config.vocab_size, "vocabulary size V")->capture_default_str();
  for (const char* shape : {"--layers", "--embd", "--heads", "--seq", "--vocab"}) named->excludes(shape);
  cmd->add_option("--batch", p.batch, "sequences per step B")->capture_default_str();
  cmd->add_flag("--json", p.json, "one JSON object instead of tables");
  cmd->add_flag("--overlap", p.stage.overlap,
                "2d: SUMMA's broadcasts and reduces hidden behind its products; --data-parallel: the "
                "gradients' all-reduce, all but its last three buckets (block 0's, wte and wpe's, ln_f's), "
                "behind the backward pass");
  add_memory_flags(cmd, p.stage);
  cmd->add_option_function<std::string>(
      "--precision", [&p](const std::string& name) { p.precision = plan::parse_precision(name); },
      "the precision accounted (the kernels compute in fp32 either way): fp32 (the default) or bf16-mixed "
      "(bf16 activations, activation gradients and tensor-parallel communication; fp32 master weights plus a "
      "bf16 copy, fp32 gradients, AdamW moments and data-parallel all-reduce; products at the profile's "
      "tensor-core rate)");
  add_placement_option(cmd, p.stage);
}

int run_plan(comm::World& world, PlanArgs& a, CLI::App&) {
  plan::PlanOptions& p = a.options;
  if (!a.model.empty()) {
    const float dropout = p.config.dropout;
    p.config = model::GPTConfig::named(a.model);
    p.config.dropout = dropout;
  }
  plan::require_valid(p);
  train::require_memory(
      world, plan::host_bytes_lower_bound(p),
      "planning " + std::to_string(p.config.n_layer) + " layers at --batch " + std::to_string(p.batch),
      "use fewer --layers or a smaller --batch");
  train::note_unused_overlap(world, p.stage.overlap, p.layout, p.data_parallel);
  world.print0("%s", plan::plan_report(p).c_str());
  return 0;
}

}  // namespace

Subcommand plan_command(CLI::App& optimus) {
  return subcommand<PlanArgs>(
      optimus, "plan",
      "what one training step costs each rank of a layout, on the meta device in one process: memory by "
      "category, FLOPs by kind of op, each communicator's collectives; with --hardware, the predicted time "
      "of a step and of a forward pass, and the largest batch that fits",
      add_plan, run_plan);
}

}  // namespace optimus::cli
