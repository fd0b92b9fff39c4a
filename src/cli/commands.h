// The `optimus` command's subcommands (chapter 1; plan: chapter 4). Each file cli/<cmd>_cmd.cpp has
// its arguments, an add_<cmd>, which declares its flags on the subcommand and binds them to them,
// and a run_<cmd>, which checks what it was given and runs it; <cmd>_command ties the two to the
// application, and main (cli/main.cpp) parses and runs the one the user named. Bad input is one
// sentence on rank 0 and a non-zero exit (comm::run_main turns a ConfigError into World::fail).
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <string>

#include "comm/world.h"

namespace optimus::cli {

/// A subcommand of optimus: its flags, declared on the application, and what runs it.
struct Subcommand {
  CLI::App* app = nullptr;
  std::function<int(comm::World&)> run;
};

Subcommand train_command(CLI::App& optimus);
Subcommand eval_command(CLI::App& optimus);
Subcommand init_command(CLI::App& optimus);
Subcommand sample_command(CLI::App& optimus);
Subcommand tokenize_command(CLI::App& optimus);
Subcommand bench_command(CLI::App& optimus);
Subcommand plan_command(CLI::App& optimus);

/// The subcommand `name` of optimus, with arguments of type Args, declared by add and run by run.
template <typename Args>
Subcommand subcommand(CLI::App& optimus, const std::string& name, const std::string& description,
                      void (*add)(CLI::App*, Args&), int (*run)(comm::World&, Args&, CLI::App&)) {
  CLI::App* app = optimus.add_subcommand(name, description);
  auto args = std::make_shared<Args>();
  add(app, *args);
  return {app, [args, app, run](comm::World& world) { return run(world, *args, *app); }};
}

}  // namespace optimus::cli
