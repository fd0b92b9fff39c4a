// The JSON config file, applied option by option.
#include "train/json_config.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <vector>

#include "core/errors.h"

namespace optimus::train {

using nlohmann::json;

namespace {

// A scalar as the text CLI11 would have read from the command line.
std::string as_input(const std::string& where, const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number()) return v.dump();
  throw core::ConfigError(where + " must be a string, a number, a boolean or an array of them, not " + v.dump());
}

}  // namespace

void apply_json_config(CLI::App& cmd, const std::string& path) {
  std::ifstream in(path);
  if (!in) throw core::ConfigError("--config " + path + " cannot be read; give the path of a JSON file");
  json doc;
  try {
    doc = json::parse(in);
  } catch (const json::parse_error& e) {
    throw core::ConfigError("--config " + path + " is not valid JSON (" + e.what() + ")");
  }
  if (!doc.is_object()) throw core::ConfigError("--config " + path + " must hold one JSON object of flag: value pairs");
  for (const auto& [key, value] : doc.items()) {
    const std::string where = "--config " + path + ": the value of \"" + key + "\"";
    CLI::Option* opt = cmd.get_option_no_throw("--" + key);
    if (opt == nullptr || key == "config" || key == "help") {
      throw core::ConfigError("--config " + path + " has the key \"" + key + "\", which is not a flag of optimus " +
                              cmd.get_name() + "; its keys are the flag names without --, see --help");
    }
    if (opt->count() > 0) continue;  // given on the command line: it wins
    std::vector<std::string> inputs;
    if (value.is_array()) {
      for (const json& v : value) inputs.push_back(as_input(where, v));
    } else {
      inputs.push_back(as_input(where, value));
    }
    try {
      opt->add_result(inputs);
      opt->run_callback();
    } catch (const CLI::Error& e) {
      throw core::ConfigError(where + " is not accepted: " + e.what());
    }
  }
}

}  // namespace optimus::train
