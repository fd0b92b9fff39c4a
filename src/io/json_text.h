// JSON text as this project reads it (config.json, the safetensors header, the trainer's --config)
// and writes its result lines (metrics.jsonl, the benchmark's lines). Read: parsed with limits, so a hostile or broken
// file is one sentence, never a crash — nesting deeper than kMaxJsonDepth is refused before parsing (printing or
// freeing such a value recurses), and a key given twice in an object is refused (JSON leaves it undefined; nlohmann
// keeps the last one).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace optimus::io {

inline constexpr int kMaxJsonDepth = 32;

/// Parses `text`; throws core::ConfigError "<where> is not valid JSON (…); <fix>", "<where> nests
/// deeper than …" or "<where> has the key "k" twice".
nlohmann::ordered_json parse_json(const std::string& text, const std::string& where, const std::string& fix = "fix it");

/// `v` on one line as the project's result lines are written: a space after every ':' and ',' that
/// separates (none inside strings), e.g. {"step": 4, "train_loss": 5.25}.
std::string one_line(const nlohmann::ordered_json& v);

/// A value for a message: its JSON text, cut to `max_chars` with "..." (a 50 MB value stays short).
std::string json_excerpt(const nlohmann::ordered_json& v, size_t max_chars = 40);

}  // namespace optimus::io
