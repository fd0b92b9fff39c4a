// The JSON config file, applied option by option.
#include "train/json_config.h"

#include <nlohmann/json.hpp>

#include <vector>

#include "core/errors.h"
#include "io/file_io.h"
#include "io/json_text.h"

namespace optimus::train {

using json = nlohmann::ordered_json;

namespace {

// A scalar as the text CLI11 would have read from the command line.
std::string as_input(const std::string& where, const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number()) return v.dump();
  throw core::ConfigError(where + " must be a string, a number, a boolean or an array of them, not " +
                          io::json_excerpt(v));
}

// CLI11's message, which quotes the value, cut to a readable length.
std::string excerpt(const std::string& message) {
  return message.size() > 200 ? message.substr(0, 200) + "..." : message;
}

}  // namespace

void apply_json_config(CLI::App& cmd, const std::string& path) {
  const json doc =
      io::parse_json(io::read_whole_file(path, "the --config file", io::kMaxJsonFileBytes), "--config " + path);
  if (!doc.is_object()) throw core::ConfigError("--config " + path + " must hold one JSON object of flag: value pairs");
  for (const auto& [key, value] : doc.items()) {
    const std::string where = "--config " + path + ": the value of " + io::json_excerpt(json(key));
    CLI::Option* opt = cmd.get_option_no_throw("--" + key);
    // A flag hidden from --help (a test-only switch) is for the command line alone.
    if (opt == nullptr || key == "config" || key == "help" || opt->get_group().empty()) {
      throw core::ConfigError("--config " + path + " has the key " + io::json_excerpt(json(key)) +
                              ", which is not a flag of optimus " + cmd.get_name() +
                              "; its keys are the flag names without --, see --help");
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
      throw core::ConfigError(where + " is not accepted: " + excerpt(e.what()));
    }
  }
}

}  // namespace optimus::train
