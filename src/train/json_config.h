// `--config FILE` for `optimus train`: a JSON object whose keys are the long
// flag names without "--" ({"layers": 4, "lr": 2e-3, "data": "my.txt"}). After the command line is
// parsed, each key whose flag was NOT given there is fed to that flag's option, so the command
// line wins, CLI11 converts and checks the value as if it had been typed, and an unknown key is an
// error. (CLI11 2.1's own config files are read for the top-level app only, not a subcommand.)
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace optimus::train {

/// Applies the JSON file at `path` to the options of `cmd` not given on the command line.
/// Throws core::ConfigError, naming the file and the key, for an unreadable file, invalid JSON, a
/// value that is not a string, number, boolean or array of them, an unknown key (a flag hidden from
/// --help, a test-only switch, counts as unknown: it is for the command line alone) or a bad value.
void apply_json_config(CLI::App& cmd, const std::string& path);

}  // namespace optimus::train
