// The `optimus` command's subcommands (chapter 1; plan: chapter 4). Each has an add_<cmd>, which
// declares its flags on the application and binds them to its options, and a run_<cmd>, which
// checks what it was given and runs it; main (cli/main.cpp) parses and calls the one the user named.
// Bad input is one sentence on rank 0 and a non-zero exit (comm::run_main turns a ConfigError into
// World::fail).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "comm/world.h"
#include "model/config.h"
#include "plan/plan.h"
#include "text/tokenize.h"
#include "train/bench.h"
#include "train/device.h"
#include "train/sample.h"
#include "train/trainer.h"

namespace optimus::cli {

struct TrainCommand {
  CLI::App* app = nullptr;
  train::TrainOptions options;
  std::string config;  // --config: a JSON file of flags
};
void add_train(CLI::App& optimus, TrainCommand& c);
int run_train(comm::World& world, TrainCommand& c);

struct EvalCommand {
  CLI::App* app = nullptr;
  std::string checkpoint, data;
  train::Layout layout = train::Layout::serial;
  int batch = 8, seq = 128, batches = 1;
  train::DeviceOptions device;
};
void add_eval(CLI::App& optimus, EvalCommand& c);
int run_eval(comm::World& world, const EvalCommand& c);

struct InitCommand {
  CLI::App* app = nullptr;
  model::GPTConfig model;
  std::string out;
  uint32_t seed = 1337;
};
void add_init(CLI::App& optimus, InitCommand& c);
int run_init(comm::World& world, InitCommand& c);

struct SampleCommand {
  CLI::App* app = nullptr;
  std::string checkpoint, prompt = "\n";
  train::SampleOptions options;
};
void add_sample(CLI::App& optimus, SampleCommand& c);
int run_sample(comm::World& world, const SampleCommand& c);

struct TokenizeCommand {
  CLI::App* app = nullptr;
  text::TokenizeOptions options;
};
void add_tokenize(CLI::App& optimus, TokenizeCommand& c);
int run_tokenize(comm::World& world, const TokenizeCommand& c);

struct BenchCommand {
  CLI::App* app = nullptr;
  train::BenchOptions options;
};
void add_bench(CLI::App& optimus, BenchCommand& c);
int run_bench(comm::World& world, const BenchCommand& c);

struct PlanCommand {
  CLI::App* app = nullptr;
  plan::PlanOptions options;
  std::string model;  // --model: a named model instead of the shape flags
};
void add_plan(CLI::App& optimus, PlanCommand& c);
int run_plan(comm::World& world, PlanCommand& c);

}  // namespace optimus::cli
