// The `optimus` command: train, eval, init, sample, tokenize, bench and plan (chapter 1; plan:
// chapter 4).
// Every subcommand has --help. Bad input is one sentence on rank 0 and a non-zero exit
// (comm::run_main turns a ConfigError into World::fail).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "comm/world.h"
#include "core/errors.h"
#include "plan/plan.h"
#include "serial/gpt.h"
#include "text/tokenize.h"
#include "train/bench.h"
#include "train/checkpointing.h"
#include "train/data.h"
#include "train/data_parallel.h"
#include "train/device.h"
#include "train/json_config.h"
#include "train/layouts.h"
#include "train/memory_check.h"
#include "train/sample.h"
#include "train/trainer.h"

using namespace optimus;

namespace {

// The model-shape flags shared by train and init.
void add_model_flags(CLI::App* app, model::GPTConfig& m) {
  app->add_option("--layers", m.n_layer, "number of transformer blocks L")->capture_default_str();
  app->add_option("--embd", m.n_embd, "embedding width C")->capture_default_str();
  app->add_option("--heads", m.n_head, "attention heads NH (must divide C)")->capture_default_str();
  app->add_option("--seq", m.n_positions, "sequence length T (also the model's n_positions)")->capture_default_str();
  app->add_option("--dropout", m.dropout, "dropout probability")->capture_default_str();
}

// Chapter 5's memory flags, shared by train, bench and plan.
void add_memory_flags(CLI::App* app, model::StageOptions& m) {
  app->add_option_function<std::string>(
      "--recompute", [&m](const std::string& name) { m.recompute = model::parse_recompute(name); },
      "what the forward pass keeps: none (every activation, the default) or block (each block's input; the "
      "backward pass reruns the block's forward)");
  app->add_flag("--sequence-parallel", m.sequence_parallel,
                "1d only: split the LayerNorms, dropouts and residual adds over the ranks by tokens (Megatron's "
                "sequence parallelism)");
}

// Chapter 6's overlap flag, shared by train and bench (plan's --overlap also predicts its time).
void add_overlap_flag(CLI::App* app, model::StageOptions& m) {
  app->add_flag("--overlap", m.overlap,
                "overlap communication with computation: 2d starts each SUMMA step's broadcasts during the step "
                "before; data parallelism sums a block's gradients while the backward pass goes on (the results "
                "are bitwise the same)");
}

// Where the 2D grid's positions sit, shared by train, bench and plan (chapter 4's "Placement").
void add_placement_option(CLI::App* app, model::StageOptions& m) {
  app->add_option_function<std::string>(
      "--placement", [&m](const std::string& text) { m.placement = comm::Placement2D::parse(text); },
      "2d: which grid position each rank holds: row-major (rank i*q + j at (i, j), the default), or RxC: "
      "blocks of R grid rows by C grid columns on consecutive ranks, one block per node (2x2 is the Optimus "
      "code's --rank-rearrange); the results are bitwise the same, only the traffic between nodes changes");
}

// The checkpoint's model, refused before anything is allocated when this machine cannot hold it at
// batch B (every rank reads the checkpoint itself: one that cannot fails them all).
model::GPTConfig checkpoint_model(comm::World& world, const std::string& checkpoint, int B, int ranks) {
  model::GPTConfig config;
  world.agree_on([&] { config = train::load_checkpoint_config(checkpoint); });
  train::require_memory(world, train::step_bytes_lower_bound(config, B, ranks, train::ModelUse::evaluate),
                        "the model of " + checkpoint + " (" + std::to_string(config.num_parameters()) + " parameters)",
                        "use a smaller --batch, more processes, or another checkpoint");
  return config;
}

int cmd_eval(comm::World& world, const std::string& checkpoint, const std::string& data_path, int B, int T, int batches,
             const std::string& layout, const train::DeviceOptions& device) {
  train::require_world_fits(layout, world);
  if (B <= 0 || T <= 0 || batches <= 0) throw core::ConfigError("--batch, --seq and --batches must be positive");
  model::GPTConfig config = checkpoint_model(world, checkpoint, B, world.size());
  if (T > config.n_positions) {
    throw core::ConfigError("--seq " + std::to_string(T) + " exceeds the checkpoint's n_positions " +
                            std::to_string(config.n_positions) + "; use --seq " + std::to_string(config.n_positions) +
                            " or less");
  }
  train::require_batch_fits(layout, B, world.size());
  train::TokenFile data;
  const uint64_t max_bytes = train::data_bytes_per_process(world);
  world.agree_on([&] {
    data = train::TokenFile::load(data_path, world.size(), max_bytes);
    train::require_tokens_for_eval(data, B, T, batches);
  });
  const core::Context ctx = train::make_context(device, world);
  return train::with_model(layout, config, 0, world, ctx, device.device_comm(), [&](auto& gpt) {
    world.agree_on([&] { train::load_weights(checkpoint, config, gpt.params()); });
    const double loss = train::evaluate(gpt, data, B, T, batches);
    world.print0("loss %.10g\n", loss);
    return 0;
  });
}

// The name of the subcommand the user typed, if it is none of ours: CLI11 calls it an extra argument.
std::string unknown_subcommand(const CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return "";
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == argv[1]) return "";
  }
  return argv[1];
}

}  // namespace

int main(int argc, char** argv) {
  return comm::run_main(argc, argv, [&](comm::World& world) {
    CLI::App app{"optimus: train and evaluate GPT models with serial, Megatron 1D or Optimus 2D tensor parallelism"};
    app.require_subcommand(1);

    // train
    train::TrainOptions t;
    auto* train_cmd = app.add_subcommand("train", "train a GPT on a text file");
    train_cmd->add_option("--layout", t.layout, "serial, 1d or 2d")->capture_default_str();
    add_memory_flags(train_cmd, t.memory);
    add_overlap_flag(train_cmd, t.memory);
    add_placement_option(train_cmd, t.memory);
    train_cmd
        ->add_option("--data-parallel", t.data_parallel,
                     "copies of the model D: each runs the layout on processes / D ranks and batch / D sequences; "
                     "their gradients are summed")
        ->capture_default_str();
    train_cmd->add_option("--data", t.data,
                          "training text file (its bytes are the tokens), token file, or a folder written by optimus "
                          "tokenize (its train.tok, val.tok and tokenizer); required");
    train_cmd->add_option("--val", t.val, "validation text or token file (default: the last 10% of --data)");
    train_cmd->add_option("--out", t.out, "folder for checkpoints and metrics.jsonl")->capture_default_str();
    train_cmd->add_option("--resume", t.resume, "checkpoint folder to continue from");
    train_cmd->add_option("--init-from", t.init_from,
                          "checkpoint folder (ours or saved by transformers) whose weights start a new run: step 0, "
                          "fresh optimizer; the model is read from it (model flags may be omitted, or must match; "
                          "--seq may be shorter than its n_positions)");
    train_cmd->add_flag("--overwrite", t.overwrite,
                        "start afresh in an --out that holds an earlier run, removing its checkpoints and metrics");
    add_model_flags(train_cmd, t.model);
    train_cmd->add_option("--batch", t.batch, "sequences per step B")->capture_default_str();
    train_cmd
        ->add_option("--grad-accum", t.grad_accum,
                     "micro-batches per step: each pass runs on batch / grad-accum sequences and the gradients add "
                     "up to the whole batch's")
        ->capture_default_str();
    train_cmd->add_option("--steps", t.steps, "optimizer steps")->capture_default_str();
    train_cmd->add_option("--warmup", t.warmup, "linear warm-up steps")->capture_default_str();
    train_cmd->add_option("--lr", t.lr, "peak learning rate")->capture_default_str();
    train_cmd->add_option("--min-lr", t.min_lr, "learning rate at the end of the cosine decay")->capture_default_str();
    train_cmd->add_option("--weight-decay", t.adamw.weight_decay, "AdamW weight decay (2-D weights only)")
        ->capture_default_str();
    train_cmd->add_option("--beta1", t.adamw.beta1, "AdamW beta1")->capture_default_str();
    train_cmd->add_option("--beta2", t.adamw.beta2, "AdamW beta2")->capture_default_str();
    train_cmd->add_option("--grad-clip", t.grad_clip, "clip the global gradient norm to this (0: off)")
        ->capture_default_str();
    train_cmd->add_option("--seed", t.seed, "seed of initialisation, dropout and data")->capture_default_str();
    train_cmd->add_option("--log-interval", t.log_interval, "print a line every N steps")->capture_default_str();
    train_cmd->add_option("--eval-interval", t.eval_interval, "validate every N steps (0: at the end)")
        ->capture_default_str();
    train_cmd->add_option("--eval-batches", t.eval_batches, "validation batches")->capture_default_str();
    train_cmd->add_option("--checkpoint-interval", t.checkpoint_interval, "save every N steps (0: at the end)")
        ->capture_default_str();
    train_cmd->add_option("--keep", t.keep, "keep the newest K step checkpoints (0: all)")->capture_default_str();
    train_cmd->add_option("--sample", t.sample_tokens, "print a sample of N bytes at the end")->capture_default_str();
    train_cmd
        ->add_option("--progress", t.progress,
                     "live (one line rewritten in place), lines, or auto: live when one process writes to a terminal "
                     "(under mpirun every rank sees a terminal, so auto means lines there: pass live)")
        ->capture_default_str();
    std::string t_config;
    train_cmd->add_option("--config", t_config,
                          "JSON file of flag: value pairs, e.g. {\"layers\": 2, \"lr\": 3e-3}; flags given on the "
                          "command line win");
    train_cmd->add_flag(
        "--save-gradients", t.save_gradients,
        "each checkpoint also holds its step's gradients (gradients.safetensors), for scripts/compare.sh");
    // Test-only (hidden from --help): the robustness tests' way to make a loss or a gradient NaN.
    train_cmd->add_option("--inject-nan-at-step", t.inject_nan_at_step)->group("");
    train_cmd->add_option("--inject-nan-into", t.inject_nan_into)->group("");
    train::add_device_flags(train_cmd, t.device);

    // eval
    std::string e_ckpt, e_data, e_layout = "serial";
    int e_batch = 8, e_seq = 128, e_batches = 1;
    auto* eval_cmd = app.add_subcommand("eval", "print the mean loss of a checkpoint on consecutive windows of a file");
    eval_cmd->add_option("--checkpoint", e_ckpt, "checkpoint folder (config.json + model.safetensors)")->required();
    eval_cmd->add_option("--data", e_data, "text file")->required();
    eval_cmd->add_option("--batch", e_batch, "sequences per batch B")->capture_default_str();
    eval_cmd->add_option("--seq", e_seq, "sequence length T")->capture_default_str();
    eval_cmd->add_option("--batches", e_batches, "batches: batch k row b reads tokens [(kB+b)T, (kB+b+1)T]")
        ->capture_default_str();
    eval_cmd->add_option("--layout", e_layout, "serial, 1d or 2d")->capture_default_str();
    train::DeviceOptions e_device;
    train::add_device_flags(eval_cmd, e_device);

    // init
    model::GPTConfig i_model;
    std::string i_out;
    uint32_t i_seed = 1337;
    auto* init_cmd = app.add_subcommand("init", "write a freshly initialised checkpoint");
    add_model_flags(init_cmd, i_model);
    init_cmd->add_option("--seed", i_seed, "initialisation seed")->capture_default_str();
    init_cmd->add_option("--out", i_out, "checkpoint folder to write")->required();

    // sample
    std::string s_ckpt, s_prompt = "\n";
    train::SampleOptions s_opt;
    auto* sample_cmd = app.add_subcommand("sample", "generate text from a checkpoint");
    sample_cmd->add_option("--checkpoint", s_ckpt, "checkpoint folder")->required();
    sample_cmd->add_option("--prompt", s_prompt, "text to continue")->capture_default_str();
    sample_cmd->add_option("--tokens", s_opt.tokens, "tokens to generate (bytes, or the checkpoint's tokenizer's)")
        ->capture_default_str();
    sample_cmd->add_option("--temperature", s_opt.temperature, "softmax temperature (> 0)")->capture_default_str();
    sample_cmd->add_option("--top-k", s_opt.top_k, "sample among the k most likely bytes (0: all)")
        ->capture_default_str();
    sample_cmd->add_option("--seed", s_opt.seed, "sampling seed")->capture_default_str();

    // tokenize
    text::TokenizeOptions k_opt;
    auto* tokenize_cmd = app.add_subcommand(
        "tokenize", "encode text files with a GPT-2 BPE tokenizer into token files for train and eval");
    tokenize_cmd->add_option("--tokenizer", k_opt.tokenizer, "folder with vocab.json and merges.txt")->required();
    tokenize_cmd->add_option("--input", k_opt.inputs, "text files, one or more")->required();
    tokenize_cmd->add_option("--out", k_opt.out, "folder for train.tok, val.tok and the tokenizer's files")->required();
    tokenize_cmd->add_option("--val", k_opt.val_inputs, "text files for val.tok (instead of --val-fraction)");
    tokenize_cmd->add_option("--val-fraction", k_opt.val_fraction, "the last fraction of the tokens for val.tok")
        ->capture_default_str();

    // bench
    train::BenchOptions b_opt;
    auto* bench_cmd = app.add_subcommand("bench", "time training steps of a named model; one JSON line");
    bench_cmd->add_option("--layout", b_opt.layout, "serial, 1d or 2d")->capture_default_str();
    bench_cmd->add_option("--model", b_opt.model, "tiny, small, tiny9 or gpt2 (GPT-2 124M's shapes)")
        ->capture_default_str();
    bench_cmd->add_option("--batch", b_opt.batch, "sequences per step B")->capture_default_str();
    bench_cmd
        ->add_option("--data-parallel", b_opt.data_parallel,
                     "copies of the model D: each runs the layout on processes / D ranks and batch / D sequences; "
                     "the step includes the sum of their gradients, also timed alone (data_parallel_ms)")
        ->capture_default_str();
    bench_cmd
        ->add_option("--grad-accum", b_opt.grad_accum,
                     "micro-batches per step: each pass runs on batch / (data-parallel x grad-accum) sequences")
        ->capture_default_str();
    bench_cmd->add_option("--steps", b_opt.steps, "measured steps (median reported)")->capture_default_str();
    bench_cmd->add_option("--warmup", b_opt.warmup, "unmeasured steps first")->capture_default_str();
    bench_cmd->add_option("--max-batch-budget", b_opt.budget_mib,
                          "instead of timing: the largest batch whose training step fits this many MiB per rank");
    bench_cmd->add_flag("--op-times", b_opt.op_times,
                        "also report the training step's time in each kind of op (op_ms: the CPU's, rank 0's, "
                        "median over the measured steps), which scripts/calibrate turns into each kind's rate");
    train::add_device_flags(bench_cmd, b_opt.device);
    add_memory_flags(bench_cmd, b_opt.memory);
    add_overlap_flag(bench_cmd, b_opt.memory);
    add_placement_option(bench_cmd, b_opt.memory);

    // plan
    plan::PlanOptions p_opt;
    std::string p_model;
    auto* plan_cmd = app.add_subcommand(
        "plan",
        "what one training step costs each rank of a layout, on the meta device in one process: memory by "
        "category, FLOPs by kind of op, each communicator's collectives; with --hardware, the predicted time of "
        "a step and of a forward pass, and the largest batch that fits");
    plan_cmd->add_option("--layout", p_opt.layout, "serial, 1d or 2d")->capture_default_str();
    plan_cmd->add_option("--ranks", p_opt.ranks, "ranks P of the layout (a square for 2d)")->capture_default_str();
    plan_cmd
        ->add_option("--data-parallel", p_opt.data_parallel,
                     "copies of the layout D, on D x ranks ranks (rank d*P + t; nodes filled in rank order): each "
                     "runs batch / D sequences, and the step adds the all-reduce of the gradients over the copies")
        ->capture_default_str();
    auto* p_named = plan_cmd->add_option("--model", p_model,
                                         "a named model (tiny, small, tiny9, gpt2) instead of "
                                         "the shape flags");
    add_model_flags(plan_cmd, p_opt.config);
    plan_cmd->add_option("--vocab", p_opt.config.vocab_size, "vocabulary size V")->capture_default_str();
    for (const char* shape : {"--layers", "--embd", "--heads", "--seq", "--vocab"}) p_named->excludes(shape);
    plan_cmd->add_option("--batch", p_opt.batch, "sequences per step B")->capture_default_str();
    plan_cmd->add_flag("--json", p_opt.json, "one JSON object instead of tables");
    plan_cmd->add_option("--hardware", p_opt.hardware,
                         "a hardware profile (a name in data/hardware, or a path to a .json file): predict times");
    plan_cmd->add_option_function<int>(
        "--ranks-per-node",
        [&p_opt](int n) {  // 0 is the field's "not given", so a given 0 is refused here
          if (n < 1) throw core::ConfigError("--ranks-per-node must be 1 or more, but is " + std::to_string(n));
          p_opt.ranks_per_node = n;
        },
        "ranks on one node (default: the profile's devices_per_node)");
    plan_cmd->add_option("--threads", p_opt.threads, "CPU threads per rank (time model)")->capture_default_str();
    plan_cmd->add_flag("--overlap", p_opt.overlap,
                       "2d: SUMMA's broadcasts and reduces hidden behind its products; --data-parallel: the "
                       "gradients' all-reduce, all but its last bucket, behind the backward pass");
    add_memory_flags(plan_cmd, p_opt.memory);
    plan_cmd->add_option_function<std::string>(
        "--precision", [&p_opt](const std::string& name) { p_opt.precision = plan::parse_precision(name); },
        "the precision accounted (the kernels compute in fp32 either way): fp32 (the default) or bf16-mixed "
        "(bf16 activations, activation gradients and tensor-parallel communication; fp32 master weights plus a "
        "bf16 copy, fp32 gradients, AdamW moments and data-parallel all-reduce; products at the profile's "
        "tensor-core rate)");
    add_placement_option(plan_cmd, p_opt.memory);

    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
      return world.rank() == 0 ? app.exit(e) : 0;
    } catch (const CLI::CallForAllHelp& e) {
      return world.rank() == 0 ? app.exit(e) : 0;
    } catch (const CLI::ParseError& e) {
      const std::string unknown = unknown_subcommand(app, argc, argv);
      if (!unknown.empty()) {
        throw core::ConfigError("'" + unknown.substr(0, 40) +
                                "' is not a subcommand of optimus; choose train, eval, init, sample, tokenize, bench "
                                "or plan");
      }
      const std::string what = e.what();
      throw core::ConfigError((what.size() > 200 ? what.substr(0, 200) + "..." : what) + "; see --help");
    }

    if (*train_cmd) {
      if (!t_config.empty()) train::apply_json_config(*train_cmd, t_config);
      if (t.data.empty())
        throw core::ConfigError("--data is required (on the command line or in --config); see --help");
      train::require_one_way_to_start(t);  // before --init-from's checkpoint is read
      if (!t.init_from.empty()) {
        std::vector<std::string> given;
        for (const char* flag : {"--layers", "--embd", "--heads", "--seq", "--dropout"}) {
          if (train_cmd->get_option(flag)->count() > 0) given.emplace_back(flag);
        }
        model::GPTConfig saved;
        world.agree_on([&] { saved = train::load_checkpoint_config(t.init_from); });
        train::adopt_checkpoint_model(t, saved, given);
      }
      return train::train(t, world);
    }
    if (*eval_cmd) return cmd_eval(world, e_ckpt, e_data, e_batch, e_seq, e_batches, e_layout, e_device);
    if (*init_cmd) {
      i_model.validate();
      train::require_memory(world, train::step_bytes_lower_bound(i_model, 0, 1, train::ModelUse::evaluate),
                            "this model", "use smaller --layers, --embd or --seq");
      // Never overwrite: a folder that already holds a checkpoint, or a part of one, is refused.
      for (const char* file : {"model.safetensors", "config.json"}) {
        std::error_code ec;
        if (std::filesystem::exists(std::filesystem::path(i_out) / file, ec) || ec) {
          throw core::ConfigError("--out " + i_out + " already holds a checkpoint (" + file +
                                  "); choose another folder or remove it");
        }
      }
      serial::GPT gpt(i_model, core::cpu_context(), i_seed);
      train::save_checkpoint(i_out, i_model, gpt.params(), gpt.spec_of(), world, nullptr,
                             train::TrainState{0, i_seed, "serial", ""});
      world.print0("wrote a freshly initialised model (%lld parameters) to %s\n", i_model.num_parameters(),
                   i_out.c_str());
      return 0;
    }
    if (*tokenize_cmd) {
      if (world.size() > 1) throw core::ConfigError("optimus tokenize runs as one process; run it without mpirun");
      world.print0("%s\n", text::tokenize_corpus(k_opt).c_str());
      return 0;
    }
    if (*bench_cmd) {
      train::require_bench_options(b_opt);
      train::note_unused_overlap(world, b_opt.memory.overlap, b_opt.layout, b_opt.data_parallel);
      const std::string line =
          b_opt.budget_mib > 0 ? train::max_batch_under_budget(b_opt, world) : train::bench(b_opt, world);
      world.print0("%s\n", line.c_str());
      return 0;
    }
    if (*plan_cmd) {
      if (!p_model.empty()) {
        const float dropout = p_opt.config.dropout;
        p_opt.config = model::GPTConfig::named(p_model);
        p_opt.config.dropout = dropout;
      }
      plan::require_valid(p_opt);
      train::require_memory(
          world, plan::host_bytes_lower_bound(p_opt),
          "planning " + std::to_string(p_opt.config.n_layer) + " layers at --batch " + std::to_string(p_opt.batch),
          "use fewer --layers or a smaller --batch");
      train::note_unused_overlap(world, p_opt.overlap, p_opt.layout, p_opt.data_parallel);
      const std::string report = plan::plan_report(p_opt);
      world.print0("%s", report.c_str());
      return 0;
    }
    if (*sample_cmd) {
      if (!(s_opt.temperature > 0.0f)) throw core::ConfigError("--temperature must be positive");
      if (s_opt.tokens < 0)
        throw core::ConfigError("--tokens must be 0 or more, but is " + std::to_string(s_opt.tokens));
      if (s_opt.top_k < 0) {
        throw core::ConfigError("--top-k must be 0 (the whole vocabulary) or more, but is " +
                                std::to_string(s_opt.top_k));
      }
      model::GPTConfig config = checkpoint_model(world, s_ckpt, 1, 1);
      serial::GPT gpt(config, core::cpu_context(), 0);
      train::load_weights(s_ckpt, config, gpt.params());
      const auto tokenizer = train::tokenizer_in(s_ckpt);  // the checkpoint's own, else bytes
      world.print0("%s%s\n", s_prompt.c_str(), train::sample_text(gpt, s_prompt, s_opt, tokenizer.get()).c_str());
      return 0;
    }
    return 1;
  });
}
