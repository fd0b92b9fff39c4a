// The `optimus` command: train, eval, init, sample, tokenize, bench and plan (chapter 1; plan:
// chapter 4). Every subcommand has --help; each is a pair add_<cmd> / run_<cmd> in cli/<cmd>_cmd.cpp (cli/commands.h).
// Bad input is one sentence on rank 0 and a non-zero exit (comm::run_main turns a ConfigError into
// World::fail).
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "cli/commands.h"
#include "comm/world.h"
#include "core/errors.h"

using namespace optimus;

namespace {

// The name of the subcommand the user typed, if it is none of ours: CLI11 calls it an extra argument.
std::string unknown_subcommand(const CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return "";
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == argv[1]) return "";
  }
  return argv[1];
}

// CLI11's parse, its errors turned into one sentence; returns the exit code of --help, or -1 to go on.
int parse(CLI::App& app, comm::World& world, int argc, char** argv) {
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
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  return comm::run_main(argc, argv, [&](comm::World& world) {
    CLI::App app{"optimus: train and evaluate GPT models with serial, Megatron 1D, Optimus 2D or 3D tensor parallelism"};
    app.require_subcommand(1);
    const std::vector<cli::Subcommand> subcommands = {
        cli::train_command(app),    cli::eval_command(app),  cli::init_command(app), cli::sample_command(app),
        cli::tokenize_command(app), cli::bench_command(app), cli::plan_command(app)};
    if (const int code = parse(app, world, argc, argv); code >= 0) return code;
    for (const cli::Subcommand& sub : subcommands) {
      if (*sub.app) return sub.run(world);
    }
    return 1;
  });
}
